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
judged. A server that sends one anyway is passed through unjudged.

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
The SDK's own timeout still governs the wait for the headers.

Cost. The SDKs spend some 20 us per event; running every event through the
JSON-parsing core as it passes would add a quarter to that. So the guard keeps
a reference to each chunk (one list append) and judges once, at the end: a
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

import re
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator

import httpx2

from railings.classify import INTERRUPTED_MESSAGE
from railings.errors import EventTooLarge, MalformedStream, StreamInterrupted
from railings.transport.config import provider_for_path
from railings.transport.errors_map import idle_error
from railings.transport.idle import arm_idle
from railings.turn.model import Outcome, Turn
from railings.turn.reader import StreamReader
from railings.wire._json import load_object
from railings.wire.openai_responses import SEQUENCE_NUMBER
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE

__all__ = [
    "DEFAULT_IDLE",
    "AsyncGuardTransport",
    "GuardTransport",
    "async_transport",
    "interruption",
    "proven_by_tail",
    "transport",
]

DEFAULT_IDLE = 30.0

# The proof as the last event of the body: a data line on a line of its own (WHATWG:
# "data:" and at most one space), then the blank line that dispatches it, then only
# blank lines. JSON escapes quotes and newlines in strings, so model text cannot
# forge these bytes. Anything else (extra fields, a trailing comment) goes to the reader.
# A line end is CRLF, LF, or a CR not followed by LF: CRLF never counts as two.
_EOL = rb"(?:\r\n|\r(?!\n)|\n)"
_TAILS = {
    "openai": re.compile(rb"[\r\n]data: ?\[DONE\]" + _EOL + _EOL + rb"[\r\n]*\Z"),
    # Anthropic pads its events with spaces: {"type":"message_stop"          }
    "anthropic": re.compile(
        rb'[\r\n]data: ?\{[ \t]*"type"[ \t]*:[ \t]*"message_stop"[ \t]*\}'
        + _EOL
        + _EOL
        + rb"[\r\n]*\Z"
    ),
}
_ERROR = b'"error"'  # an error event or error object of either provider: let the reader judge
_TAIL_BYTES = 256

# The Responses API. Its terminal event carries the whole response (every output item
# again), so it is found by walking back from the end over its one line, not by a
# fixed-size tail: the body's last event must be a single data line (optionally after
# its ``event:`` line) holding a JSON object whose ``type`` is terminal. That one line
# is parsed (one event, not one per chunk: the cost stays at the end, in C). Anything
# unusual (several data lines, an ``id:`` field, a comment) goes to the reader;
# OpenRouter's ``data: [DONE]`` trailer after the terminal event is stepped over.
# Every Responses response object holds ``"error":null``, so ``_ERROR`` cannot rule
# errors out here: instead every ``"error"`` in the body must be that null. An
# ``error`` event (``"type":"error"``) or a ``response.failed`` (``"error":{...}``)
# sends the body to the reader.
_RESPONSES_PROOFS = frozenset({"response.completed", "response.incomplete"})
_RESPONSES_EVENT_LINE = re.compile(rb"event: ?response\.(?:completed|incomplete)")
_NOT_NULL_ERROR = re.compile(rb'"error"(?!:null)')  # one pass over the body, in C
_DONE_LINE = re.compile(rb"data: ?\[DONE\]")
_BLANK_TAIL = re.compile(_EOL + _EOL + rb"[\r\n]*\Z")


def transport(
    inner: httpx2.BaseTransport | None = None, *, idle: float | None = DEFAULT_IDLE
) -> httpx2.BaseTransport:
    """A guarding wrapper around ``inner`` (default: ``httpx2.HTTPTransport()``)."""
    return GuardTransport(inner if inner is not None else httpx2.HTTPTransport(), idle=idle)


def async_transport(
    inner: httpx2.AsyncBaseTransport | None = None, *, idle: float | None = DEFAULT_IDLE
) -> httpx2.AsyncBaseTransport:
    """A guarding wrapper around ``inner`` (default: ``httpx2.AsyncHTTPTransport()``)."""
    return AsyncGuardTransport(
        inner if inner is not None else httpx2.AsyncHTTPTransport(), idle=idle
    )


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


def proven_by_tail(provider: str, body: bytes) -> bool:
    """True when ``body`` ends with its provider's canonical proof and holds no error.

    Only ever True where the core reader finds the turn COMPLETE; False means
    "ask the reader", never "interrupted".
    """
    if provider == "openai-responses":
        return _responses_proven(body)
    if _ERROR in body:
        return False
    tail = body[-_TAIL_BYTES:] if len(body) > _TAIL_BYTES else b"\n" + body
    return _TAILS[provider].search(tail) is not None


def _responses_proven(body: bytes) -> bool:
    """The Responses API's tail check (see ``_RESPONSES_PROOFS``)."""
    if _NOT_NULL_ERROR.search(body) is not None:
        return False
    blank = _BLANK_TAIL.search(body, max(0, len(body) - _TAIL_BYTES))
    if blank is None:
        return False  # the last event was never dispatched by its blank line
    start, end = _line_start(body, blank.start()), blank.start()
    if _DONE_LINE.fullmatch(body, start, end) and start > 0:
        # OpenRouter's trailer after the terminal event: step back over it.
        p_start, p_end = _previous_line(body, start)
        if p_start != p_end or p_start == 0:
            return False
        start, end = _previous_line(body, p_start)
    if not body.startswith(b"data:", start) or end - start >= DEFAULT_MAX_EVENT_SIZE:
        return False  # not a data line, or one the reader refuses as too large
    if start > 0:
        p_start, p_end = _previous_line(body, start)
        if p_start != p_end:  # not the blank line that opens the event: its event: line?
            if not _RESPONSES_EVENT_LINE.fullmatch(body, p_start, p_end):
                return False
            if p_start > 0:
                q_start, q_end = _previous_line(body, p_start)
                if q_start != q_end:
                    return False  # another field of the same event
    value = body[start + 5 : end]
    value = value[1:] if value.startswith(b" ") else value  # WHATWG: one space is dropped
    try:
        event = load_object(value.decode("utf-8"), where="guard")
    except (UnicodeDecodeError, MalformedStream):
        return False
    if event.get("type") not in _RESPONSES_PROOFS:
        return False
    last = event.get("sequence_number")
    if not isinstance(last, int):
        return True  # an API that numbers nothing (the reader checks what is numbered)
    # Events lost, repeated or swapped on the way break the count: the reader says how.
    numbers = [int(n) for n in SEQUENCE_NUMBER.findall(body)]  # one pass, in C
    return numbers == list(range(last - len(numbers) + 1, last + 1))


def _line_start(body: bytes, end: int) -> int:
    """Where the line that ends at ``end`` starts: after the previous CR or LF."""
    lf = body.rfind(b"\n", 0, end)
    return max(lf, body.rfind(b"\r", lf + 1, end)) + 1  # CR: searched only after that LF


def _previous_line(body: bytes, line_start: int) -> tuple[int, int]:
    """(start, end) of the line before the one at ``line_start`` > 0 (CRLF is one end)."""
    end = line_start - (2 if body[max(0, line_start - 2) : line_start] == b"\r\n" else 1)
    return _line_start(body, end), end


def read_turn(provider: str, body: bytes) -> Turn:
    """The core's verdict on a whole body that ended (EOF or a broken connection)."""
    reader = StreamReader(provider)
    try:  # noqa: SIM105 -- the reader has ended the turn abruptly; its turn says why
        reader.feed(body)
    except EventTooLarge:
        pass
    reader.close()
    return reader.turn()


class _Watch:
    """The guard's logic for one stream, shared by the sync and the async shell."""

    __slots__ = ("_encoding", "chunks", "gap", "provider")

    def __init__(self, provider: str, gap: float | None, encoding: str) -> None:
        self.provider = provider
        self.gap = gap
        self._encoding = encoding
        self.chunks: list[bytes] = []

    def body(self) -> bytes:
        raw = b"".join(self.chunks)
        if self._encoding == "identity":
            return raw
        # A decompressor object, not zlib.decompress: a cut stream yields what it holds.
        # "deflate" is zlib-wrapped by the RFC and raw in the wild; try both, as httpx2 does.
        for wbits in (16 + zlib.MAX_WBITS,) if self._encoding == "gzip" else (15, -15):
            try:
                return zlib.decompressobj(wbits).decompress(raw)
            except zlib.error:
                continue
        return b""  # not readable: the SDK's own decoder reports it

    def ended(self) -> httpx2.TransportError | None:
        """At EOF: None when the proof arrived, else the error to raise."""
        body = self.body()
        if proven_by_tail(self.provider, body):
            return None
        turn = read_turn(self.provider, body)
        if turn.outcome is Outcome.COMPLETE:
            return None
        detail = turn.error.message if turn.error is not None else INTERRUPTED_MESSAGE
        message = (
            detail
            if detail.startswith(INTERRUPTED_MESSAGE)
            else (f"{INTERRUPTED_MESSAGE}: {detail}")
        )
        cause = StreamInterrupted(message, empty=turn.outcome is Outcome.EMPTY, turn=turn)
        error = httpx2.RemoteProtocolError(message)
        error.__cause__ = cause
        return error

    def failed(self, exc: httpx2.TransportError) -> httpx2.TransportError | None:
        """The inner stream broke: the same httpx2 class, with the railings reason as cause;
        or None when the proof had already arrived, and the body simply ends there.

        The proven-then-broken case: the whole answer and its proof arrived, then the
        connection broke. The proof is data, not the close: the turn is complete, and
        an SDK that reads past the proof must not throw the answer away for it.
        """
        body = self.body()
        if proven_by_tail(self.provider, body):
            return None
        turn = read_turn(self.provider, body)
        if turn.outcome is Outcome.COMPLETE:
            return None
        empty = turn.outcome is Outcome.EMPTY
        cause: StreamInterrupted
        if isinstance(exc, httpx2.ReadTimeout) and self.gap is not None:
            cause = idle_error(self.gap, empty=empty)
            cause.turn = turn
        else:
            cause = StreamInterrupted(f"{INTERRUPTED_MESSAGE}: {exc}", empty=empty, turn=turn)
        cause.__cause__ = exc
        error = type(exc)(cause.message)
        error.__cause__ = cause
        return error


_READABLE = frozenset({"gzip", "x-gzip", "deflate", "identity"})


def _ask_readable(request: httpx2.Request) -> None:
    """Narrow ``Accept-Encoding`` on a watched path to the codings the guard reads."""
    if provider_for_path(request.url.path) is None:
        return
    offered = request.headers.get("accept-encoding")
    if offered is None:
        # RFC 9110 §12.5.3: no Accept-Encoding means any coding is acceptable.
        request.headers["accept-encoding"] = "gzip, deflate"
        return
    kept = [
        item.strip()
        for item in offered.split(",")
        if item.partition(";")[0].strip().lower() in _READABLE
    ]
    request.headers["accept-encoding"] = ", ".join(kept) or "identity"


def _watch(request: httpx2.Request, response: httpx2.Response, idle: float | None) -> _Watch | None:
    """A watch for a response the guard understands, or None: pass it through."""
    if not 200 <= response.status_code < 300:
        return None
    if not response.headers.get("content-type", "").lower().startswith("text/event-stream"):
        return None
    provider = provider_for_path(request.url.path)
    if provider is None:
        return None
    encoding = response.headers.get("content-encoding", "identity").strip().lower() or "identity"
    encoding = "gzip" if encoding == "x-gzip" else encoding
    if encoding not in ("identity", "gzip", "deflate"):
        return None  # br, zstd although not asked for: not readable here, so not judged
    return _Watch(provider, arm_idle(request.extensions, idle), encoding)


class _GuardStream(httpx2.SyncByteStream):
    def __init__(self, inner: httpx2.SyncByteStream, watch: _Watch) -> None:
        self._inner = inner
        self._watch = watch

    def __iter__(self) -> Iterator[bytes]:
        watch = self._watch
        keep = watch.chunks.append
        try:
            for chunk in self._inner:
                keep(chunk)
                yield chunk
        except httpx2.TransportError as exc:
            error = watch.failed(exc)
            if error is None:
                return  # proven complete before the break: end the body there
            raise error  # noqa: B904 -- its __cause__ is the railings reason
        error = watch.ended()
        if error is not None:
            raise error

    def close(self) -> None:
        self._inner.close()


class _AsyncGuardStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, watch: _Watch) -> None:
        self._inner = inner
        self._watch = watch

    async def __aiter__(self) -> AsyncIterator[bytes]:
        watch = self._watch
        keep = watch.chunks.append
        chunks = self._inner.__aiter__()
        try:
            async for chunk in chunks:
                keep(chunk)
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
        error = watch.ended()
        if error is not None:
            raise error

    async def aclose(self) -> None:
        await self._inner.aclose()


class GuardTransport(httpx2.BaseTransport):
    """See the module docstring. ``idle`` is the longest silence once streaming (None: off)."""

    def __init__(self, inner: httpx2.BaseTransport, *, idle: float | None = DEFAULT_IDLE) -> None:
        self._inner = inner
        self._idle = idle

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        _ask_readable(request)
        response = self._inner.handle_request(request)
        if isinstance(response.stream, httpx2.SyncByteStream):
            watch = _watch(request, response, self._idle)
            if watch is not None:
                response.stream = _GuardStream(response.stream, watch)
        return response

    def close(self) -> None:
        self._inner.close()


class AsyncGuardTransport(httpx2.AsyncBaseTransport):
    """See the module docstring. ``idle`` is the longest silence once streaming (None: off)."""

    def __init__(
        self, inner: httpx2.AsyncBaseTransport, *, idle: float | None = DEFAULT_IDLE
    ) -> None:
        self._inner = inner
        self._idle = idle

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        _ask_readable(request)
        response = await self._inner.handle_async_request(request)
        if isinstance(response.stream, httpx2.AsyncByteStream):
            watch = _watch(request, response, self._idle)
            if watch is not None:
                response.stream = _AsyncGuardStream(response.stream, watch)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
