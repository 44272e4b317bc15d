"""What an "event" is, per stream framing: the fault proxy's unit of action.

An SSE stream is cut into blocks (:class:`~railings.testing.blocks.EventSplitter`),
an ``application/vnd.amazon.eventstream`` body into whole frames
(:class:`FrameSplitter`, by each frame's own total length), an NDJSON body into
lines (:class:`LineSplitter`). Each splitter keeps the bytes unchanged and has the
same shape, ``feed(bytes) -> list[bytes]`` and ``close() -> bytes`` (what is left:
an unfinished event). :func:`framing_for` picks the framing by the response's
content type; :class:`Framing` also breaks one event on purpose (``corrupt``):
JSON cut in half or invalid UTF-8 in its payload (an event-stream frame is
re-encoded with valid CRCs, so only the payload is wrong), or, for a frame only,
a message CRC (``kind=crc``) or prelude CRC (``kind=prelude``) that does not match.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from railings.errors import RailingsError
from railings.testing.blocks import EventSplitter, corrupt_event
from railings.testing.eventstream import encode_message
from railings.wire.eventstream import CONTENT_TYPE as EVENTSTREAM
from railings.wire.eventstream import EventStreamDecoder

__all__ = ["FRAMINGS", "FrameSplitter", "Framing", "LineSplitter", "Splitter", "framing_for"]

_PRELUDE = 12
# A frame claiming more than this is not split: the rest passes through as it came.
_MAX_FRAME = 16 * 1024 * 1024


class Splitter(Protocol):
    """Bytes in, whole events out, byte-exact."""

    def feed(self, data: bytes) -> list[bytes]:
        """The events ``data`` completed, in order."""
        ...

    def close(self) -> bytes:
        """What is left: an unfinished event (or nothing)."""
        ...


class FrameSplitter:
    """Bytes in, whole event-stream frames out, each cut at its prelude's total length.

    The lengths are trusted, not checked (a fault proxy passes broken frames on; the
    client's decoder is what is under test); a length below 16 or above 16 MiB ends
    the splitting, and everything from there passes through as :meth:`close`'s rest."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._stuck = False

    def feed(self, data: bytes) -> list[bytes]:
        """The frames ``data`` completed."""
        self._buf += data
        out: list[bytes] = []
        start = 0
        while not self._stuck and len(self._buf) - start >= _PRELUDE:
            (total,) = struct.unpack_from(">I", self._buf, start)
            if not 16 <= total <= _MAX_FRAME:
                self._stuck = True
                break
            if len(self._buf) - start < total:
                break
            out.append(bytes(self._buf[start : start + total]))
            start += total
        del self._buf[:start]
        return out

    def close(self) -> bytes:
        """An unfinished frame, or what followed an impossible length."""
        rest = bytes(self._buf)
        self._buf.clear()
        return rest


class LineSplitter:
    """Bytes in, NDJSON lines out, each with its ``\\n``."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The lines ``data`` completed."""
        self._buf += data
        end = self._buf.rfind(b"\n")
        if end < 0:
            return []
        whole = bytes(self._buf[: end + 1])
        del self._buf[: end + 1]
        return whole.splitlines(keepends=True)

    def close(self) -> bytes:
        """An unterminated last line."""
        rest = bytes(self._buf)
        self._buf.clear()
        return rest


def _corrupt_line(line: bytes, kind: str) -> bytes:
    body = line.rstrip(b"\r\n")
    if kind == "json":
        return body[: len(body) // 2] + line[len(body) :]
    if kind == "utf8":
        at = body.find(b'":"')
        at = at + 3 if at >= 0 else 0
        return line[:at] + b"\xff\xfe" + line[at:]
    return line


def _corrupt_frame(frame: bytes, kind: str) -> bytes:
    if kind == "crc":
        return frame[:-1] + bytes([frame[-1] ^ 0xFF])
    if kind == "prelude":
        return frame[:8] + bytes([frame[8] ^ 0xFF]) + frame[9:]
    try:
        (message,) = EventStreamDecoder().feed(frame)
    except (RailingsError, ValueError):
        return frame  # already broken: nothing to re-encode
    payload = _corrupt_line(message.payload, kind)
    return encode_message(message.headers, payload)


def _corrupt_sse(block: bytes, kind: str) -> bytes:
    return corrupt_event(block, kind) if kind in ("json", "utf8") else block


@dataclass(frozen=True, slots=True)
class Framing:
    """One stream framing: what it calls an event, its splitter, how to corrupt one,
    and the ``corrupt`` kinds it knows."""

    events: str  # "SSE events", "event-stream frames", "NDJSON lines"
    splitter: Callable[[], Splitter]
    corrupt: Callable[[bytes, str], bytes]
    kinds: frozenset[str]


SSE = Framing("SSE events", EventSplitter, _corrupt_sse, frozenset({"json", "utf8"}))
FRAMES = Framing(
    "event-stream frames",
    FrameSplitter,
    _corrupt_frame,
    frozenset({"json", "utf8", "crc", "prelude"}),
)
LINES = Framing("NDJSON lines", LineSplitter, _corrupt_line, frozenset({"json", "utf8"}))
FRAMINGS: dict[str, Framing] = {
    "text/event-stream": SSE,
    EVENTSTREAM: FRAMES,
    "application/x-ndjson": LINES,
}


def framing_for(content_type: str) -> Framing | None:
    """The framing of a response by its content type (parameters ignored), or None for
    a body that is not a stream of events."""
    return FRAMINGS.get(content_type.partition(";")[0].strip().lower())
