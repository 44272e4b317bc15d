"""``application/vnd.amazon.eventstream``: a sans-IO, incremental decoder from bytes to frames.

Theory of operation
-------------------
The AWS event-stream encoding (Bedrock ``ConverseStream``, Transcribe, S3 Select ...)
frames each message as::

    total length   u32, big-endian: the whole frame, these 4 bytes and both CRCs included
    headers length u32
    prelude CRC    u32: IEEE CRC32 of the 8 bytes above
    headers        headers-length bytes (below)
    payload        total - headers - 16 bytes
    message CRC    u32: CRC32 of everything before it, prelude included

Each header is a name (u8 length, 1-255 bytes of UTF-8), a type byte and a value
(:class:`HeaderType`): ``bool`` true / false (no value bytes), ``byte`` (i8),
``short`` (i16), ``integer`` (i32), ``long`` (i64), ``bytes`` and ``string`` (u16
length, then the bytes), ``timestamp`` (i64 milliseconds since the epoch) and
``uuid`` (16 bytes). Integers are big-endian and signed.

:meth:`EventStreamDecoder.feed` keeps the bytes not yet framed and cuts as many
whole frames as they hold, checking, in this order (the order of the AWS SDKs'
decoders, which the official vectors pin: a corrupted length is reported as a
prelude checksum mismatch):

1. the prelude CRC, as soon as its 12 bytes are in;
2. the lengths: a frame is at least 16 bytes, its headers fit inside it, and
   headers are at most 128 KiB (the spec's limit);
3. the size bound: a frame larger than ``max_message_size`` raises
   :class:`~railings.errors.EventTooLarge` at once, before its bytes are kept;
4. once the frame is whole, the message CRC, then the headers.

Anything that is not the encoding -- a CRC that does not match, lengths that cannot
be, a header that runs past its block, an unknown header type, a name twice (as
botocore refuses it) -- raises :class:`~railings.errors.MalformedStream`; a frame
cut short by the end of the stream does too, at :meth:`EventStreamDecoder.close`.
After either, the decoder refuses further input, like the SSE decoder. Memory is
bounded by ``max_message_size``: no more than one frame's bytes are ever held.

The CRC is the IEEE 802.3 CRC32 that ``zlib.crc32`` computes (the spec calls it the
"GZIP" CRC).
"""

from __future__ import annotations

import enum
import struct
import uuid
import zlib
from dataclasses import dataclass
from typing import Final

from railings.errors import ConfigurationError, EventTooLarge, MalformedStream
from railings.wire._held import CLOSED, Held

__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "MAX_HEADERS_LENGTH",
    "PRELUDE_LENGTH",
    "EventStreamDecoder",
    "Header",
    "HeaderType",
    "HeaderValue",
    "Message",
    "looks_like_eventstream",
]

CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"

PRELUDE_LENGTH: Final = 12  # total length, headers length, prelude CRC
_CRC_LENGTH: Final = 4
_MIN_FRAME: Final = PRELUDE_LENGTH + _CRC_LENGTH
MAX_HEADERS_LENGTH: Final = 128 * 1024
# The spec's largest payload (16 MiB) with the largest headers block and the framing.
DEFAULT_MAX_MESSAGE_SIZE: Final = 16 * 1024 * 1024 + MAX_HEADERS_LENGTH + _MIN_FRAME

_U32x2 = struct.Struct(">II")
_U32 = struct.Struct(">I")


class HeaderType(enum.IntEnum):
    """The type byte of a header value, as the spec numbers them."""

    BOOL_TRUE = 0
    BOOL_FALSE = 1
    BYTE = 2
    SHORT = 3
    INTEGER = 4
    LONG = 5
    BYTES = 6
    STRING = 7
    TIMESTAMP = 8
    UUID = 9


HeaderValue = bool | int | bytes | str | uuid.UUID
"""A header's value: ``bool``; ``int`` for the four integer types and ``timestamp``
(milliseconds since the epoch); ``bytes``; ``str``; :class:`uuid.UUID`."""

_FIXED: dict[HeaderType, struct.Struct] = {
    HeaderType.BYTE: struct.Struct(">b"),
    HeaderType.SHORT: struct.Struct(">h"),
    HeaderType.INTEGER: struct.Struct(">i"),
    HeaderType.LONG: struct.Struct(">q"),
    HeaderType.TIMESTAMP: struct.Struct(">q"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Header:
    """One typed header of a frame."""

    name: str
    type: HeaderType
    value: HeaderValue


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One decoded frame: its headers in wire order, its payload, and its framing
    values as they were read (both CRCs were checked)."""

    headers: tuple[Header, ...]
    payload: bytes
    total_length: int
    headers_length: int
    prelude_crc: int
    message_crc: int

    def header(self, name: str) -> HeaderValue | None:
        """The value of the header called ``name``, or None when the frame has none."""
        return next((header.value for header in self.headers if header.name == name), None)

    def text_header(self, name: str) -> str:
        """A ``string`` header's value, or ``""`` when absent or of another type."""
        value = self.header(name)
        return value if isinstance(value, str) else ""


def looks_like_eventstream(prefix: bytes) -> bool:
    """True when ``prefix`` (a body's first 12 bytes or more) opens with a prelude whose
    CRC matches: a detection hint no JSON or SSE body can meet by chance (1 in 2**32)."""
    if len(prefix) < PRELUDE_LENGTH:
        return False
    crc: int = _U32.unpack_from(prefix, 8)[0]
    return zlib.crc32(prefix[:8]) == crc


class EventStreamDecoder(Held):
    """Incremental event-stream frame decoder: ``feed(bytes) -> list[Message]``.

    Sans-IO: it is handed bytes, split anywhere; :meth:`close` at EOF raises
    :class:`~railings.errors.MalformedStream` when a frame was cut short.

    The frames a chunk completed before a bad one are returned, and the error is raised
    by the next call (:meth:`feed` or :meth:`close`; :attr:`failure` says one is held):
    what the caller gets never depends on how the bytes were split.
    """

    __slots__ = ("_buffer", "_bytes_fed", "_max")

    def __init__(self, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        if max_message_size < _MIN_FRAME:
            raise ConfigurationError(
                f"max_message_size must be at least {_MIN_FRAME}, got {max_message_size}"
            )
        super().__init__()
        self._max = max_message_size
        self._buffer = bytearray()
        self._bytes_fed = 0

    @property
    def pending(self) -> int:
        """How many bytes of a frame not yet whole are held (0 between frames)."""
        return len(self._buffer)

    @property
    def bytes_fed(self) -> int:
        """How many bytes :meth:`feed` was given in all."""
        return self._bytes_fed

    def feed(self, chunk: bytes) -> list[Message]:
        """Decode the next piece of the body; return the frames it completed."""
        self._open("feed")
        self._bytes_fed += len(chunk)
        buffer = self._buffer
        buffer += chunk
        out: list[Message] = []
        offset = 0
        try:
            while len(buffer) - offset >= PRELUDE_LENGTH:
                total = self._check_prelude(buffer, offset)
                if len(buffer) - offset < total:
                    break
                out.append(_frame(memoryview(buffer)[offset : offset + total]))
                offset += total
        except MalformedStream as exc:
            self._hold(exc, bool(out))  # the frames before it are whole: theirs first
        else:
            del buffer[:offset]
        return out

    def close(self) -> list[Message]:
        """Mark the end of the stream. Returns ``[]``; raises
        :class:`~railings.errors.MalformedStream` when the stream ended inside a frame.
        :meth:`feed` raises afterwards."""
        if not self._open("close"):
            return []  # idempotent; a failed decoder already raised
        held = len(self._buffer)
        self._state = CLOSED
        self._buffer = bytearray()
        if held:
            raise MalformedStream(f"event stream ended inside a frame: {held} bytes of it arrived")
        return []

    def _check_prelude(self, buffer: bytearray, offset: int) -> int:
        total: int
        headers: int
        total, headers = _U32x2.unpack_from(buffer, offset)
        crc: int = _U32.unpack_from(buffer, offset + 8)[0]
        if zlib.crc32(memoryview(buffer)[offset : offset + 8]) != crc:
            raise MalformedStream("event stream: prelude checksum mismatch")
        if total < _MIN_FRAME or headers > total - _MIN_FRAME:
            raise MalformedStream(
                f"event stream: impossible lengths (total {total}, headers {headers})"
            )
        if headers > MAX_HEADERS_LENGTH:
            raise MalformedStream(
                f"event stream: headers of {headers} bytes exceed {MAX_HEADERS_LENGTH}"
            )
        if total > self._max:
            raise EventTooLarge(
                f"event stream frame of {total} bytes exceeds {self._max}", limit=self._max
            )
        return total

    def _fail(self) -> None:
        super()._fail()
        self._buffer = bytearray()


def _frame(view: memoryview) -> Message:
    total, headers_length = _U32x2.unpack_from(view, 0)
    (prelude_crc,) = _U32.unpack_from(view, 8)
    (message_crc,) = _U32.unpack_from(view, total - _CRC_LENGTH)
    if zlib.crc32(view[: total - _CRC_LENGTH]) != message_crc:
        raise MalformedStream("event stream: message checksum mismatch")
    end = PRELUDE_LENGTH + headers_length
    return Message(
        headers=_headers(view[PRELUDE_LENGTH:end]),
        payload=bytes(view[end : total - _CRC_LENGTH]),
        total_length=total,
        headers_length=headers_length,
        prelude_crc=prelude_crc,
        message_crc=message_crc,
    )


def _headers(block: memoryview) -> tuple[Header, ...]:
    out: list[Header] = []
    seen: set[str] = set()
    position = 0
    size = len(block)
    while position < size:
        name_length = block[position]
        position += 1
        if name_length == 0 or position + name_length + 1 > size:
            raise MalformedStream("event stream: a header name runs past the headers")
        name = _utf8(block[position : position + name_length], "header name")
        position += name_length
        code = block[position]
        position += 1
        try:
            kind = HeaderType(code)
        except ValueError:
            raise MalformedStream(f"event stream: unknown header type {code}") from None
        value, position = _value(block, position, kind)
        if name in seen:
            raise MalformedStream(f"event stream: header {name!r} appears twice")
        seen.add(name)
        out.append(Header(name=name, type=kind, value=value))
    return tuple(out)


def _value(block: memoryview, position: int, kind: HeaderType) -> tuple[HeaderValue, int]:
    if kind is HeaderType.BOOL_TRUE:
        return True, position
    if kind is HeaderType.BOOL_FALSE:
        return False, position
    fixed = _FIXED.get(kind)
    if fixed is not None:
        end = position + fixed.size
        _fits(block, end)
        return int(fixed.unpack_from(block, position)[0]), end
    if kind is HeaderType.UUID:
        end = position + 16
        _fits(block, end)
        return uuid.UUID(bytes=bytes(block[position:end])), end
    _fits(block, position + 2)
    length = (block[position] << 8) | block[position + 1]
    start = position + 2
    end = start + length
    _fits(block, end)
    raw = bytes(block[start:end])
    if kind is HeaderType.STRING:
        return _utf8(raw, "string header"), end
    return raw, end


def _fits(block: memoryview, end: int) -> None:
    if end > len(block):
        raise MalformedStream("event stream: a header value runs past the headers")


def _utf8(raw: bytes | memoryview, what: str) -> str:
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedStream(f"event stream: {what} is not UTF-8") from None
