"""The guard: proof before ending, for the official ``openai`` and ``anthropic`` SDKs.

::

    import anthropic, openai, railings.guard
    client = railings.guard.install(openai.OpenAI())
    aclient = railings.guard.install(anthropic.AsyncAnthropic())

:func:`install` guards a client that is already built -- an ``openai`` or
``anthropic`` client, sync or async, or an ``httpx2.Client`` /
``httpx2.AsyncClient`` -- in place: it wraps the client's transport and every
one of its mounts (the proxies from ``HTTPS_PROXY`` and the like, ``proxy=``,
``mounts=``), so the SDK's connection limits, timeouts, HTTP/2 setting,
proxies and custom transports all stay, and no mount is left unguarded.
:func:`transport` / :func:`async_transport` build one guarding transport for
a client you build yourself (``httpx2.Client(transport=...)``: httpx2 then
reads no proxy from the environment, as it never does with ``transport=``).

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

What the SDK sees. When the inner transport raises while the body streams
(a reset, a read timeout, a TLS error), the SDK gets that very exception, as
it would without the guard; the guard only attaches its verdict (a note, and
an attribute :func:`interruption` reads). Where the stream ended *without*
raising but without its provider's proof (``data: [DONE]``,
``response.completed`` / ``response.incomplete``, ``message_stop``), the guard
raises: :class:`httpx2.RemoteProtocolError`, the class the SDK already handles
for a broken connection (the openai SDK raises ``APIConnectionError`` from it),
whose ``__cause__`` is :class:`~railings.errors.StreamInterrupted`. A proof
followed by a connection break is a complete answer: the body ends at the break.

The idle clock starts at the first content (:mod:`railings.transport.watch`):
before it the SDK's own read timeout governs (600 s for both SDKs), so a model
that sends its headers, or ``response.created``, and then thinks for minutes is
never cut. From the first content, a silence of ``idle`` seconds (default 30)
is a read timeout: :class:`httpx2.ReadTimeout`, from which
:func:`interruption` finds :class:`~railings.errors.IdleTimeout`. Keep-alives
keep that clock alive but not the content clock: ``content_idle`` seconds
(default 300; 600 before the first content) of nothing but comments and pings
raise :class:`httpx2.ReadTimeout` from :class:`~railings.errors.IdleTimeout`.

Fail closed. The guard decodes exactly the codings httpx2 decodes
(:mod:`railings.transport.coding`), so it judges the bytes the SDK reads. A
stream it cannot read -- a coding httpx2 would decode and the guard cannot, more
than five codings, a body that does not decode -- raises
:class:`httpx2.DecodingError` (from :class:`~railings.errors.StreamInterrupted`)
instead of passing unjudged.

Bounded. The guard decodes incrementally, in pieces of at most 1 MiB, and never
holds a whole body (:mod:`railings.transport.watch`). One turn is bounded as in
the client (:mod:`railings.limits`, derived from the ``max_tokens`` the request
body carries, or ``limits=``): past a bound it raises
:class:`httpx2.RemoteProtocolError` from ``StreamInterrupted`` from
:class:`~railings.errors.TurnTooLarge`.

Cost. While a body is short enough to keep (4 MiB at most) the guard keeps each
decoded piece and judges once, at the end (:func:`proven_by_tail`, which a test
proves never disagrees with the core); a longer one is read by the core
:class:`~railings.turn.reader.StreamReader` as it passes. A stream that is
abandoned early (the openai SDK stops at ``[DONE]``) is not judged: the reader
stopped, not the stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import TracebackType
from typing import Self, TypeVar

import httpx2

from railings.errors import ConfigurationError, StreamInterrupted
from railings.limits import TurnLimits
from railings.transport.attempt import is_event_stream
from railings.transport.coding import Unreadable, codings
from railings.transport.config import provider_for_path
from railings.transport.guarded import VERDICT, AsyncGuardStream, GuardStream
from railings.transport.tail import proven_by_tail
from railings.transport.watch import StreamWatch

__all__ = [
    "DEFAULT_CONTENT_IDLE",
    "DEFAULT_IDLE",
    "AsyncGuardTransport",
    "GuardTransport",
    "async_transport",
    "install",
    "interruption",
    "proven_by_tail",
    "transport",
]

DEFAULT_IDLE = 30.0
DEFAULT_CONTENT_IDLE = 300.0
# Before the first content the content clock waits as long as the client's first_byte.
_FIRST_CONTENT = 600.0

_Watch = Callable[[], StreamWatch]
C = TypeVar("C")


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


def install(
    client: C,
    *,
    idle: float | None = DEFAULT_IDLE,
    limits: TurnLimits | None = None,
    content_idle: float | None = DEFAULT_CONTENT_IDLE,
) -> C:
    """Guard ``client`` in place and return it: an ``openai`` / ``anthropic`` client
    (sync or async; the httpx2 client it holds), or an ``httpx2.Client`` /
    ``httpx2.AsyncClient``.

    Its transport and every mount are wrapped where they are, so everything the
    client was built with stays: proxies (from the environment or ``proxy=``),
    connection limits, HTTP/2, custom transports. A mount that routes to no proxy
    (``NO_PROXY``) uses the guarded transport. Installing twice changes nothing.
    Raises :class:`~railings.errors.ConfigurationError` for anything else.
    """
    http = _http_client(client)
    settings = {"idle": idle, "limits": limits, "content_idle": content_idle}
    guard: Callable[[object], object]
    if isinstance(http, httpx2.Client):

        def guard(inner: object) -> object:
            if isinstance(inner, GuardTransport) or not isinstance(inner, httpx2.BaseTransport):
                return inner
            return GuardTransport(inner, **settings)  # type: ignore[arg-type]

    else:

        def guard(inner: object) -> object:
            if isinstance(inner, AsyncGuardTransport) or not isinstance(
                inner, httpx2.AsyncBaseTransport
            ):
                return inner
            return AsyncGuardTransport(inner, **settings)  # type: ignore[arg-type]

    # httpx2 keeps the default transport and the mounts (URL pattern -> transport, or
    # None for "no proxy here": the default) in these two attributes.
    http._transport = guard(http._transport)  # type: ignore[assignment]
    http._mounts = {  # type: ignore[assignment]
        pattern: None if mounted is None else guard(mounted)
        for pattern, mounted in http._mounts.items()
    }
    return client


def _http_client(client: object) -> httpx2.Client | httpx2.AsyncClient:
    """The httpx2 client ``client`` is, or holds (the SDKs keep theirs in ``_client``)."""
    http = client if isinstance(client, httpx2.Client | httpx2.AsyncClient) else None
    if http is None:
        held = getattr(client, "_client", None)
        http = held if isinstance(held, httpx2.Client | httpx2.AsyncClient) else None
    if http is None:
        raise ConfigurationError(
            f"railings.guard.install takes an openai or anthropic client or an httpx2 "
            f"client, not {type(client).__name__}"
        )
    if not (hasattr(http, "_transport") and isinstance(getattr(http, "_mounts", None), dict)):
        raise ConfigurationError(
            "this httpx2 keeps its transports where railings.guard.install cannot find "
            "them: build the client with transport=railings.guard.transport()"
        )
    return http


def interruption(exc: BaseException) -> StreamInterrupted | None:
    """The :class:`StreamInterrupted` behind ``exc``, however the SDK wrapped it: the
    railings error in its chain of causes, or the verdict the guard attached to the
    transport error that broke the stream."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, StreamInterrupted):
            return current
        attached = getattr(current, VERDICT, None)
        if isinstance(attached, StreamInterrupted):
            return attached
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
) -> Callable[[], StreamWatch] | None:
    """How to watch a response the guard understands (a fresh watch per reading of
    its body), or None: pass it through."""
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
    timeouts = request.extensions.get("timeout")
    max_tokens = _max_tokens(request)
    first_content = None if content_idle is None else max(content_idle, _FIRST_CONTENT)

    def watch() -> StreamWatch:
        return StreamWatch(
            provider,
            timeouts if isinstance(timeouts, dict) else None,
            idle,
            applied,
            max_tokens=max_tokens,
            limits=limits,
            content_idle=content_idle,
            first_content=first_content,
        )

    return watch


class _Guard:
    """What both guard transports hold: the inner transport and the settings."""

    def __init__(
        self,
        *,
        idle: float | None = DEFAULT_IDLE,
        limits: TurnLimits | None = None,
        content_idle: float | None = DEFAULT_CONTENT_IDLE,
    ) -> None:
        self._idle = idle
        self._limits = limits
        self._content_idle = content_idle

    def _watch(self, request: httpx2.Request, response: httpx2.Response) -> _Watch | None:
        return _watch(request, response, self._idle, self._limits, self._content_idle)


class GuardTransport(_Guard, httpx2.BaseTransport):
    """See the module docstring. ``idle`` is the longest silence once content streams
    (None: the SDK's read timeout stays); ``limits`` the bounds on one turn (default:
    derived from the request's ``max_tokens``); ``content_idle`` the longest run of
    nothing but keep-alives (None: off). ``inner`` is the transport it guards."""

    def __init__(
        self,
        inner: httpx2.BaseTransport,
        *,
        idle: float | None = DEFAULT_IDLE,
        limits: TurnLimits | None = None,
        content_idle: float | None = DEFAULT_CONTENT_IDLE,
    ) -> None:
        super().__init__(idle=idle, limits=limits, content_idle=content_idle)
        self.inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through the inner transport; a watched stream comes back
        wrapped, to raise when it ends without its proof. Anything else is untouched."""
        _ask_readable(request)
        response = self.inner.handle_request(request)
        if isinstance(response.stream, httpx2.SyncByteStream):
            watch = self._watch(request, response)
            if watch is not None:
                response.stream = GuardStream(
                    response.stream,
                    watch,
                    response.extensions,
                    request.extensions.get("timeout"),
                )
        return response

    def __enter__(self) -> Self:
        self.inner.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        self.inner.__exit__(exc_type, exc_value, traceback)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


class AsyncGuardTransport(_Guard, httpx2.AsyncBaseTransport):
    """The async twin of :class:`GuardTransport`, with the same settings."""

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        *,
        idle: float | None = DEFAULT_IDLE,
        limits: TurnLimits | None = None,
        content_idle: float | None = DEFAULT_CONTENT_IDLE,
    ) -> None:
        super().__init__(idle=idle, limits=limits, content_idle=content_idle)
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through the inner transport; a watched stream comes back
        wrapped, to raise when it ends without its proof. Anything else is untouched."""
        _ask_readable(request)
        response = await self.inner.handle_async_request(request)
        if isinstance(response.stream, httpx2.AsyncByteStream):
            watch = self._watch(request, response)
            if watch is not None:
                response.stream = AsyncGuardStream(
                    response.stream,
                    watch,
                    response.extensions,
                    request.extensions.get("timeout"),
                )
        return response

    async def __aenter__(self) -> Self:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.inner.__aexit__(exc_type, exc_value, traceback)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()
