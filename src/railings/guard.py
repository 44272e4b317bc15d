"""The guard: proof before ending, for the official ``openai`` and ``anthropic`` SDKs.

::

    import httpx2, openai, railings.guard
    client = openai.OpenAI(http_client=httpx2.Client(transport=railings.guard.transport()))

    import anthropic
    client = anthropic.AsyncAnthropic(
        http_client=httpx2.AsyncClient(transport=railings.guard.async_transport()))

To keep every other SDK default (timeouts, connection limits, redirects), build
the client with the SDK's own factory: ``openai.DefaultHttpx2Client(transport=...)``,
``anthropic.DefaultHttpxClient(transport=...)``.

The guard wraps an httpx2 transport and watches one kind of response: a
successful ``text/event-stream`` answer to ``.../chat/completions`` (OpenAI wire
format), ``.../responses`` (OpenAI Responses) or ``.../messages`` (Anthropic).
The bytes pass through unchanged. Everything else -- other paths, other content
types, error statuses -- passes through untouched. One request header is
narrowed: on the watched paths, ``Accept-Encoding`` keeps only the codings the
guard can read (gzip, deflate, identity). httpx2 offers ``br`` and ``zstd`` as
soon as their decoders are importable (``zstd`` is in the standard library
from Python 3.14), and a stream in a coding the guard cannot read could not be
judged.

Fail closed. The guard decodes exactly the codings httpx2 decodes, normalised
the way httpx2 normalises them (:mod:`railings.transport.coding`: repeated
headers, mixed case, ``identity`` and values httpx2 does not know, such as
``utf-8``, all as httpx2 reads them), so it judges the bytes the SDK reads. A
stream it cannot read -- a coding httpx2 would decode and the guard cannot, more
than five codings, a body that does not decode -- raises
:class:`httpx2.DecodingError` (from :class:`~railings.errors.StreamInterrupted`)
instead of passing unjudged.

Bounded. The guard decodes incrementally, in pieces of at most 1 MiB, and never
holds a whole body (:mod:`railings.transport.watch`): it keeps at most a few MiB
unread, and reads anything longer with the core reader as it passes. One turn
is bounded as in the client (:mod:`railings.limits`, derived from the
``max_tokens`` the request body carries, or ``limits=``): past a bound it raises
:class:`httpx2.RemoteProtocolError` from ``StreamInterrupted`` from
:class:`~railings.errors.TurnTooLarge`.

When such a stream ends without its provider's proof (``data: [DONE]``,
``response.completed`` / ``response.incomplete``, ``message_stop``), reading it
raises instead of ending quietly. The exception is
the httpx2 error the SDK already handles for a broken connection
(:class:`httpx2.RemoteProtocolError`, or the class of the httpx2 error that
broke the stream), and its ``__cause__`` is
:class:`~railings.errors.StreamInterrupted`. So existing handlers keep working
(the openai SDK raises ``APIConnectionError`` from it, and
``APITimeoutError`` for an idle stream), and :func:`interruption` finds the
railings error in any wrapping.

An idle stream: once the headers of a watched stream are in, the read timeout
becomes the idle gap (:mod:`railings.transport.idle`), and a silence that long
raises :class:`httpx2.ReadTimeout` from :class:`~railings.errors.IdleTimeout`.
The SDK's own timeout still governs the wait for the headers. Keep-alives keep
that clock alive but not the content clock (:mod:`railings.transport.watch`):
``content_idle`` seconds (default 300; 600 before the first content) of nothing
but comments and pings raise :class:`httpx2.ReadTimeout` from
:class:`~railings.errors.IdleTimeout` too.

Cost. The SDKs spend some 20 us per event; running every event through the
JSON-parsing core as it passes would add a quarter to that. So while a body is
short enough to keep (see :func:`railings.transport.watch.keep_for`: 4 MiB at
most, less for a small ``max_tokens``) the guard keeps each decoded piece (one
list append) and judges once, at the end: a
stream whose last event is the canonical proof, with no error anywhere in it,
is complete (:func:`proven_by_tail`, a test proves it never disagrees with the
core; for the Responses API, whose terminal event repeats the whole response and
so is too long for a fixed-size tail, the check walks back over that one event,
and the events' ``sequence_number`` fields, read in one regular-expression pass
over the body, must count up to it without a gap); any other stream is read by
the core
:class:`~railings.turn.reader.StreamReader`, which decides Complete, Empty or
Partial. A stream that is abandoned early (the openai SDK stops at ``[DONE]``)
is not judged: the reader stopped, not the stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator

import httpx2

from railings.errors import StreamInterrupted
from railings.limits import TurnLimits
from railings.transport.attempt import is_event_stream
from railings.transport.coding import Unreadable, codings
from railings.transport.config import provider_for_path
from railings.transport.idle import arm_idle
from railings.transport.tail import proven_by_tail
from railings.transport.watch import StreamWatch

__all__ = [
    "DEFAULT_CONTENT_IDLE",
    "DEFAULT_IDLE",
    "AsyncGuardTransport",
    "GuardTransport",
    "async_transport",
    "interruption",
    "proven_by_tail",
    "transport",
]

DEFAULT_IDLE = 30.0
DEFAULT_CONTENT_IDLE = 300.0
# Before the first content the content clock waits as long as the client's first_byte.
_FIRST_CONTENT = 600.0


def transport(
    inner: httpx2.BaseTransport | None = None,
    *,
    idle: float | None = DEFAULT_IDLE,
    limits: TurnLimits | None = None,
    content_idle: float | None = DEFAULT_CONTENT_IDLE,
) -> httpx2.BaseTransport:
    """A guarding wrapper around ``inner`` (default: ``httpx2.HTTPTransport()``)."""
    inner = inner if inner is not None else httpx2.HTTPTransport()
    return GuardTransport(inner, idle=idle, limits=limits, content_idle=content_idle)


def async_transport(
    inner: httpx2.AsyncBaseTransport | None = None,
    *,
    idle: float | None = DEFAULT_IDLE,
    limits: TurnLimits | None = None,
    content_idle: float | None = DEFAULT_CONTENT_IDLE,
) -> httpx2.AsyncBaseTransport:
    """A guarding wrapper around ``inner`` (default: ``httpx2.AsyncHTTPTransport()``)."""
    inner = inner if inner is not None else httpx2.AsyncHTTPTransport()
    return AsyncGuardTransport(inner, idle=idle, limits=limits, content_idle=content_idle)


def interruption(exc: BaseException) -> StreamInterrupted | None:
    """The :class:`StreamInterrupted` behind ``exc``, however the SDK wrapped it."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, StreamInterrupted):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _max_tokens(request: httpx2.Request) -> int | None:
    """The output limit the request asked for, read from its JSON body (None: unknown)."""
    try:
        content = request.content
    except httpx2.RequestNotRead:
        return None
    if not content or len(content) > _MAX_PARSED_REQUEST:
        return None
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(body, dict):
        return None
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


_MAX_PARSED_REQUEST = 8 * 2**20
_ASKED = ("gzip", "deflate")  # what the guard reads, so what it lets a watched request ask for


def _ask_readable(request: httpx2.Request) -> None:
    """Narrow ``Accept-Encoding`` on a watched path to the codings the guard reads."""
    if provider_for_path(request.url.path) is None:
        return
    offered = request.headers.get("accept-encoding")
    if offered is None:
        # RFC 9110 §12.5.3: no Accept-Encoding means any coding is acceptable.
        request.headers["accept-encoding"] = ", ".join(_ASKED)
        return
    kept = [
        item.strip()
        for item in offered.split(",")
        if item.partition(";")[0].strip().lower() in (*_ASKED, "identity")
    ]
    request.headers["accept-encoding"] = ", ".join(kept) or "identity"


def _watch(
    request: httpx2.Request,
    response: httpx2.Response,
    idle: float | None,
    limits: TurnLimits | None,
    content_idle: float | None,
) -> StreamWatch | None:
    """A watch for a response the guard understands, or None: pass it through."""
    if not is_event_stream(response):
        return None
    provider = provider_for_path(request.url.path)
    if provider is None:
        return None
    # Exactly the codings httpx2 will undo before the SDK reads the body (see coding.py):
    # one the guard cannot read is refused at the first read, never passed unjudged.
    applied: list[str] | Unreadable
    try:
        applied = codings(response.headers.get_list("content-encoding"))
    except Unreadable as exc:
        applied = exc
    return StreamWatch(
        provider,
        arm_idle(request.extensions, idle),
        applied,
        max_tokens=_max_tokens(request),
        limits=limits,
        content_idle=content_idle,
        first_content=None if content_idle is None else max(content_idle, _FIRST_CONTENT),
    )


class _GuardStream(httpx2.SyncByteStream):
    def __init__(self, inner: httpx2.SyncByteStream, watch: StreamWatch) -> None:
        self._inner = inner
        self._watch = watch

    def __iter__(self) -> Iterator[bytes]:
        watch = self._watch
        error = watch.refused()
        if error is not None:
            raise error
        take = watch.take
        try:
            for chunk in self._inner:
                error = take(chunk)
                if error is not None:
                    break
                yield chunk
        except httpx2.TransportError as exc:
            error = watch.failed(exc)
            if error is None:
                return  # proven complete before the break: end the body there
            raise error  # noqa: B904 -- its __cause__ is the railings reason
        if error is None:
            error = watch.ended()
        if error is not None:
            raise error

    def close(self) -> None:
        self._inner.close()


class _AsyncGuardStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, watch: StreamWatch) -> None:
        self._inner = inner
        self._watch = watch

    async def __aiter__(self) -> AsyncIterator[bytes]:
        watch = self._watch
        error = watch.refused()
        if error is not None:
            raise error
        take = watch.take
        chunks = self._inner.__aiter__()
        try:
            async for chunk in chunks:
                error = take(chunk)
                if error is not None:
                    break
                yield chunk
        except httpx2.TransportError as exc:
            error = watch.failed(exc)
            if error is None:
                return  # proven complete before the break: end the body there
            raise error  # noqa: B904 -- its __cause__ is the railings reason
        finally:
            # Close a body read in part in the task that read it (httpx2 does the same).
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()
        if error is None:
            error = watch.ended()
        if error is not None:
            raise error

    async def aclose(self) -> None:
        await self._inner.aclose()


class GuardTransport(httpx2.BaseTransport):
    """See the module docstring. ``idle`` is the longest silence once streaming (None: off);
    ``limits`` the bounds on one turn (default: derived from the request's ``max_tokens``);
    ``content_idle`` the longest run of nothing but keep-alives (None: off)."""

    def __init__(
        self,
        inner: httpx2.BaseTransport,
        *,
        idle: float | None = DEFAULT_IDLE,
        limits: TurnLimits | None = None,
        content_idle: float | None = DEFAULT_CONTENT_IDLE,
    ) -> None:
        self._inner = inner
        self._idle = idle
        self._limits = limits
        self._content_idle = content_idle

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through the inner transport; a watched stream comes back
        wrapped, to raise when it ends without its proof. Anything else is untouched."""
        _ask_readable(request)
        response = self._inner.handle_request(request)
        if isinstance(response.stream, httpx2.SyncByteStream):
            watch = _watch(request, response, self._idle, self._limits, self._content_idle)
            if watch is not None:
                response.stream = _GuardStream(response.stream, watch)
        return response

    def close(self) -> None:
        """Close the inner transport."""
        self._inner.close()


class AsyncGuardTransport(httpx2.AsyncBaseTransport):
    """See the module docstring. ``idle`` is the longest silence once streaming (None: off);
    ``limits`` the bounds on one turn (default: derived from the request's ``max_tokens``);
    ``content_idle`` the longest run of nothing but keep-alives (None: off)."""

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        *,
        idle: float | None = DEFAULT_IDLE,
        limits: TurnLimits | None = None,
        content_idle: float | None = DEFAULT_CONTENT_IDLE,
    ) -> None:
        self._inner = inner
        self._idle = idle
        self._limits = limits
        self._content_idle = content_idle

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through the inner transport; a watched stream comes back
        wrapped, to raise when it ends without its proof. Anything else is untouched."""
        _ask_readable(request)
        response = await self._inner.handle_async_request(request)
        if isinstance(response.stream, httpx2.AsyncByteStream):
            watch = _watch(request, response, self._idle, self._limits, self._content_idle)
            if watch is not None:
                response.stream = _AsyncGuardStream(response.stream, watch)
        return response

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self._inner.aclose()
