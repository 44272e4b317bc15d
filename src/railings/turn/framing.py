"""The reader's first layer: how a response body is cut into frames, and which framing
an ``auto`` body has.

Each wire's spec names its :class:`~railings.providers.Framing`; :func:`framer`
builds the matching incremental decoder, every one with the ``feed(bytes) ->
list[frame]`` / ``close() -> list[frame]`` shape and the same size bound:

* SSE: :class:`~railings.wire.sse.SSEDecoder` (frames: ``ServerSentEvent``);
* AWS event-stream: :class:`~railings.wire.eventstream.EventStreamDecoder`, both CRCs
  checked (frames: ``Message``; a frame cut short raises at ``close``);
* NDJSON: :class:`~railings.wire.ndjson.NDJSONDecoder` (frames: lines; a last line
  without its LF is returned at ``close``);
* a whole body (:class:`WholeBody`, a wire's ``whole_body``): the bytes kept, bounded,
  and handed over at ``close`` as one frame (Gemini's JSON array without ``alt=sse``).

Sniffing (:func:`sniff`) decides an ``auto`` body's framing from its first bytes,
waiting for as few as it needs. A binary first byte (0 or 1: the high byte of a
frame length, which a bounded frame has) waits for the 12-byte prelude and is an
event stream when its CRC matches (no text body meets it by chance: 1 in 2**32).
Otherwise leading whitespace is skipped: a ``[`` opens a whole body of the wire
that has one; a ``{`` waits for its first line, which is NDJSON when a wire's
line markers are all in it (Ollama's ``model``, ``created_at``, ``done``) -- a
JSON error body that is not such a line stays SSE, as before, so ``replay`` still
says it holds no event. Everything else is SSE, whose events then name the wire.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from railings.errors import ConfigurationError, EventTooLarge, MalformedStream
from railings.events import StreamEvent
from railings.providers import DETECTION_ORDER, Framing, ProviderSpec
from railings.wire.eventstream import PRELUDE_LENGTH, EventStreamDecoder
from railings.wire.ndjson import NDJSONDecoder
from railings.wire.sse import SSEDecoder

__all__ = ["Framer", "Sniffed", "WholeBody", "framer", "sniff"]

_WHITESPACE = b" \t\r\n"
_BINARY_FIRST = (0, 1)
_MIN_FRAME = 16  # the smallest event-stream frame: prelude and message CRC


class Framer(Protocol):
    """Bytes in, frames out (the frame type is the framing's).

    A framer that meets a bad frame (or one over its bound) after good ones in a chunk
    returns those, and holds the error (:attr:`failure`) for its next call to raise:
    the reader applies the frames, then the error, so a turn reads the same however
    its bytes were split."""

    @property
    def failure(self) -> MalformedStream | None:
        """The error met after the frames the last call returned (None: none)."""
        ...

    def feed(self, chunk: bytes) -> list[Any]:
        """The frames ``chunk`` completed."""
        ...

    def close(self) -> list[Any]:
        """EOF: the frames it completes (may raise for a frame cut short)."""
        ...


class WholeBody:
    """A body read whole: kept (at most ``max_size`` bytes) and returned at ``close``
    as one frame."""

    __slots__ = ("_max", "_parts", "_size")

    failure: MalformedStream | None = None  # one frame, at close: no error waits for a call

    def __init__(self, *, max_size: int) -> None:
        self._max = max_size
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[Any]:
        """Nothing until EOF; past ``max_size`` bytes, :class:`EventTooLarge`."""
        self._size += len(chunk)
        if self._size > self._max:
            self._parts = []
            raise EventTooLarge(f"body of over {self._max} bytes", limit=self._max)
        self._parts.append(chunk)
        return []

    def close(self) -> list[Any]:
        """The whole body, as one frame (none when it was empty)."""
        body, self._parts = b"".join(self._parts), []
        return [body] if body.strip() else []


class WholeBodyDecoder:
    """The decoder of a whole body: the spec's ``whole_body`` reads it at ``close``."""

    __slots__ = ("_choice", "_read")

    def __init__(self, spec: ProviderSpec, choice: int) -> None:
        if spec.whole_body is None:
            raise ConfigurationError(f"{spec.name} has no whole-body form")
        self._read = spec.whole_body
        self._choice = choice

    def feed(self, frame: Any, /) -> list[StreamEvent]:
        """The events of the whole body (may raise MalformedStream)."""
        return self._read(frame, self._choice)

    def close(self) -> list[StreamEvent]:
        """No more events: the body was read whole."""
        return []


def framer(framing: Framing | None, *, max_size: int) -> Framer:
    """A fresh frame decoder for ``framing`` (None: a whole body), bounded by ``max_size``
    bytes a frame."""
    if framing is Framing.EVENTSTREAM:
        return EventStreamDecoder(max_message_size=max(max_size, _MIN_FRAME))
    if framing is Framing.NDJSON:
        return NDJSONDecoder(max_line_size=max_size)
    if framing is None:
        return WholeBody(max_size=max_size)
    return SSEDecoder(max_event_size=max_size)


class Sniffed(NamedTuple):
    """What :func:`sniff` decided: the framing (None: a whole body) and, unless the
    framing is SSE (whose events name the wire), the spec."""

    framing: Framing | None
    spec: ProviderSpec | None


_SSE = Sniffed(Framing.SSE, None)


def sniff(prefix: bytes, *, final: bool, limit: int) -> Sniffed | None:
    """The framing of a body that begins with ``prefix``; None while more bytes are
    needed (``final``: there are none; ``limit``: past this many bytes, decide)."""
    if not prefix:
        return _SSE if final else None
    if prefix[0] in _BINARY_FIRST:
        if len(prefix) < PRELUDE_LENGTH and not final:
            return None
        for spec in DETECTION_ORDER:
            hint = spec.detection.prefix
            if spec.framing is Framing.EVENTSTREAM and hint is not None and hint(prefix):
                return Sniffed(Framing.EVENTSTREAM, spec)
        return _SSE
    start = len(prefix) - len(prefix.lstrip(_WHITESPACE))
    if start == len(prefix):
        return _SSE if final or len(prefix) > limit else None
    first = prefix[start : start + 1]
    if first == b"[":
        whole = next((s for s in DETECTION_ORDER if s.whole_body is not None), None)
        return _SSE if whole is None else Sniffed(None, whole)
    if first != b"{":
        return _SSE
    end = prefix.find(b"\n", start)
    if end < 0 and not final and len(prefix) <= limit:
        return None  # the first line is not whole yet
    line = prefix[start : end if end >= 0 else len(prefix)].decode("utf-8", "replace")
    for spec in DETECTION_ORDER:
        if spec.framing is Framing.NDJSON and spec.detection.recognises_line(line):
            return Sniffed(Framing.NDJSON, spec)
    return _SSE
