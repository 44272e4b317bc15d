"""An ``application/vnd.amazon.eventstream`` frame encoder, for the test kit.

The inverse of :mod:`railings.wire.eventstream`: headers and a payload in, one frame
out, with both CRCs. It writes Bedrock ``ConverseStream`` frames the way Bedrock
does (``:event-type``, ``:content-type: application/json``, ``:message-type: event``;
exceptions with ``:exception-type`` and ``:message-type: exception``), so the
corpus can hold binary streams built from fixtures that were recorded as decoded
event lists, and tests can corrupt a frame on purpose.
"""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from railings.wire.eventstream import Header, HeaderType, HeaderValue

__all__ = ["encode_converse_chunks", "encode_message", "event_frame", "exception_frame"]

_INTEGERS = {
    HeaderType.BYTE: ">b",
    HeaderType.SHORT: ">h",
    HeaderType.INTEGER: ">i",
    HeaderType.LONG: ">q",
    HeaderType.TIMESTAMP: ">q",
}


def _infer(name: str, value: HeaderValue) -> Header:
    if isinstance(value, bool):
        kind = HeaderType.BOOL_TRUE if value else HeaderType.BOOL_FALSE
    elif isinstance(value, int):
        kind = HeaderType.INTEGER
    elif isinstance(value, bytes):
        kind = HeaderType.BYTES
    elif isinstance(value, uuid.UUID):
        kind = HeaderType.UUID
    else:
        kind = HeaderType.STRING
    return Header(name=name, type=kind, value=value)


def _encode_header(header: Header) -> bytes:
    name = header.name.encode("utf-8")
    if not 1 <= len(name) <= 255:
        raise ValueError(f"a header name is 1 to 255 bytes, got {len(name)}")
    out = bytes([len(name)]) + name + bytes([header.type])
    value = header.value
    if header.type in (HeaderType.BOOL_TRUE, HeaderType.BOOL_FALSE):
        return out
    if header.type in _INTEGERS and isinstance(value, int) and not isinstance(value, bool):
        return out + struct.pack(_INTEGERS[header.type], value)
    if header.type is HeaderType.UUID and isinstance(value, uuid.UUID):
        return out + value.bytes
    if header.type is HeaderType.STRING and isinstance(value, str):
        raw = value.encode("utf-8")
    elif header.type is HeaderType.BYTES and isinstance(value, bytes):
        raw = value
    else:
        raise TypeError(
            f"header {header.name!r}: a {type(value).__name__} is no {header.type.name}"
        )
    return out + struct.pack(">H", len(raw)) + raw


def encode_message(
    headers: Sequence[Header] | Mapping[str, HeaderValue], payload: bytes = b""
) -> bytes:
    """One frame. ``headers`` are :class:`Header` values, or a mapping whose types are
    inferred (``bool``, ``int`` as ``integer``, ``bytes``, ``str``, :class:`uuid.UUID`)."""
    items = (
        [_infer(name, value) for name, value in headers.items()]
        if isinstance(headers, Mapping)
        else list(headers)
    )
    block = b"".join(_encode_header(h) for h in items)
    total = 16 + len(block) + len(payload)
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + block + payload
    return body + struct.pack(">I", zlib.crc32(body))


def _frame(kind: str, name: str, payload: Mapping[str, Any]) -> bytes:
    """A ConverseStream frame whose ``:message-type`` is ``kind``, headers in the order
    Bedrock sends them."""
    return encode_message(
        {f":{kind}-type": name, ":content-type": "application/json", ":message-type": kind},
        json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
    )


def event_frame(event_type: str, payload: Mapping[str, Any]) -> bytes:
    """A ConverseStream event frame (``messageStart`` ...)."""
    return _frame("event", event_type, payload)


def exception_frame(exception_type: str, payload: Mapping[str, Any]) -> bytes:
    """A ConverseStream exception frame (``throttlingException`` ...)."""
    return _frame("exception", exception_type, payload)


def encode_converse_chunks(lines: Iterable[str]) -> bytes:
    """Frames for a decoded ConverseStream event list, one JSON object per line, each
    ``{"<eventType>": {payload}}`` (how the AI SDK and boto3 record them). Blank lines
    are skipped."""
    out = bytearray()
    for line in lines:
        if not line.strip():
            continue
        obj = json.loads(line)
        if not isinstance(obj, dict) or len(obj) != 1:
            raise ValueError(f"expected one event per line, got {line[:80]!r}")
        ((event_type, payload),) = obj.items()
        out += event_frame(str(event_type), payload)
    return bytes(out)
