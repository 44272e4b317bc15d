"""A small, strict HTTP/1.1 for the test kit: one request per connection.

Both the scripted server and the fault proxy speak HTTP/1.1 over plain asyncio
streams. They need exact control of the bytes on the wire (a chunked stream cut
before its ``0\\r\\n\\r\\n`` terminator, a TCP reset, one byte per chunk), which a
framework would hide. The subset is the one LLM clients use:

* requests: request line, headers, a body framed by ``Content-Length`` or
  ``Transfer-Encoding: chunked`` (RFC 9112 §6);
* responses: a fixed body with ``Content-Length``, or a stream with
  ``Transfer-Encoding: chunked``, one chunk per write so each SSE event is
  flushed as soon as it is written;
* every response carries ``connection: close`` and the connection ends with it
  (RFC 9112 §9.6), which keeps the framing of each test obvious.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "LAST_CHUNK",
    "MAX_BODY",
    "MAX_HEAD",
    "REASONS",
    "HTTPFault",
    "Headers",
    "Request",
    "ResponseHead",
    "abort_with_reset",
    "close_writer",
    "encode_chunk",
    "iter_body",
    "read_request",
    "read_response_head",
    "render_head",
    "send_json",
]

MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024
LAST_CHUNK = b"0\r\n\r\n"

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    411: "Length Required",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    529: "Site is overloaded",
}


class HTTPFault(Exception):
    """The peer sent bytes that are not the HTTP subset above. ``status`` is what to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(slots=True)
class Headers:
    """Ordered header list with case-insensitive lookup (names kept as received)."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def get(self, name: str, default: str | None = None) -> str | None:
        lname = name.lower()
        for key, value in self.items:
            if key.lower() == lname:
                return value
        return default

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def remove(self, *names: str) -> None:
        drop = {n.lower() for n in names}
        self.items = [(k, v) for k, v in self.items if k.lower() not in drop]

    def set(self, name: str, value: str) -> None:
        self.remove(name)
        self.items.append((name, value))

    def as_dict(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.items}


@dataclass(slots=True)
class Request:
    method: str
    target: str
    headers: Headers
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


@dataclass(slots=True)
class ResponseHead:
    status: int
    reason: str
    headers: Headers


def _parse_header_lines(lines: list[bytes]) -> Headers:
    headers = Headers()
    for raw in lines:
        if raw[:1] in (b" ", b"\t"):
            raise HTTPFault(400, "obsolete header line folding")  # RFC 9112 §5.2
        name, sep, value = raw.partition(b":")
        if not sep or not name or name != name.strip():
            raise HTTPFault(400, f"malformed header line {raw[:80]!r}")
        headers.items.append((name.decode("latin-1"), value.strip().decode("latin-1")))
    return headers


async def _read_head(reader: asyncio.StreamReader) -> list[bytes]:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError as exc:
        raise HTTPFault(431, "request head too large") from exc
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            raise EOFError("connection closed before a request") from exc
        raise HTTPFault(400, "connection closed inside the request head") from exc
    if len(head) > MAX_HEAD:
        raise HTTPFault(431, "request head too large")
    return head[:-4].split(b"\r\n")


async def read_request(reader: asyncio.StreamReader) -> Request:
    """Read one request. Raises :class:`HTTPFault`, or EOFError on a silent close."""
    lines = await _read_head(reader)
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise HTTPFault(400, f"malformed request line {lines[0][:80]!r}")
    headers = _parse_header_lines(lines[1:])
    body = b"".join([piece async for piece in iter_body(reader, headers, request=True)])
    return Request(parts[0].decode("ascii", "replace"), parts[1].decode("latin-1"), headers, body)


async def read_response_head(reader: asyncio.StreamReader) -> ResponseHead:
    lines = await _read_head(reader)
    version, _, rest = lines[0].partition(b" ")
    code, _, reason = rest.partition(b" ")
    if not version.startswith(b"HTTP/1.") or not code.isdigit():
        raise HTTPFault(502, f"malformed status line {lines[0][:80]!r}")
    return ResponseHead(int(code), reason.decode("latin-1"), _parse_header_lines(lines[1:]))


async def iter_body(
    reader: asyncio.StreamReader, headers: Headers, *, request: bool, piece: int = 65536
) -> AsyncIterator[bytes]:
    """Yield a message body as it arrives, undoing its framing (RFC 9112 §6.3).

    A request without framing has no body; a response without framing runs to EOF.
    """
    encoding = (headers.get("transfer-encoding") or "").lower()
    length = headers.get("content-length")
    if encoding:
        if encoding != "chunked":
            raise HTTPFault(501 if request else 502, f"unsupported transfer-encoding {encoding}")
        async for data in _iter_chunked(reader, piece):
            yield data
        return
    if length is not None:
        if not length.isdigit():
            raise HTTPFault(400 if request else 502, f"bad content-length {length!r}")
        remaining = int(length)
        if request and remaining > MAX_BODY:
            raise HTTPFault(413, "request body too large")
        while remaining:
            data = await reader.read(min(piece, remaining))
            if not data:
                raise HTTPFault(400 if request else 502, "body shorter than content-length")
            remaining -= len(data)
            yield data
        return
    if request:
        return
    while data := await reader.read(piece):
        yield data


async def _iter_chunked(reader: asyncio.StreamReader, piece: int) -> AsyncIterator[bytes]:
    while True:
        try:
            size_line = await reader.readuntil(b"\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise HTTPFault(502, "chunked body ended before its last chunk") from exc
        size_text = size_line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError as exc:
            raise HTTPFault(400, f"bad chunk size {size_text[:20]!r}") from exc
        if size == 0:
            try:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailer fields are read and dropped
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
                raise HTTPFault(502, "chunked body ended inside its trailer") from exc
            return
        # A chunk up to ``piece`` bytes is yielded whole: it is the unit its sender wrote,
        # so a proxy that forwards it keeps the sender's framing. A larger one is yielded
        # as it arrives. Bytes of a chunk the peer never finished are still yielded
        # before the error: nothing received is lost.
        while size:
            try:
                data = await (reader.readexactly(size) if size <= piece else reader.read(piece))
            except asyncio.IncompleteReadError as exc:
                data = exc.partial
            if data:
                yield data
            if not data or (size <= piece and len(data) < size):
                raise HTTPFault(502, "chunked body ended inside a chunk")
            size -= len(data)
        try:
            crlf = await reader.readexactly(2)
        except asyncio.IncompleteReadError as exc:
            raise HTTPFault(502, "chunked body ended before its last chunk") from exc
        if crlf != b"\r\n":
            raise HTTPFault(400, "chunk data not followed by CRLF")


def render_head(
    status: int, headers: Iterable[tuple[str, str]], reason: str | None = None
) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason or REASONS.get(status, 'Unknown')}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def send_json(
    writer: asyncio.StreamWriter, status: int, body: Any, headers: Iterable[tuple[str, str]] = ()
) -> None:
    """A whole JSON response (UTF-8), framed by its length, then ``connection: close``."""
    payload = json.dumps(body, ensure_ascii=False).encode()
    writer.write(
        render_head(
            status,
            [
                ("content-type", "application/json"),
                ("content-length", str(len(payload))),
                *headers,
                ("connection", "close"),
            ],
        )
        + payload
    )
    await writer.drain()


def encode_chunk(data: bytes) -> bytes:
    """One chunk of a chunked body; an empty ``data`` would end the body, so it is refused."""
    if not data:
        raise ValueError("an empty chunk is the last-chunk marker; use LAST_CHUNK")
    return b"%x\r\n%s\r\n" % (len(data), data)


def abort_with_reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST instead of a FIN: SO_LINGER on, timeout 0, then close."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def close_writer(writer: asyncio.StreamWriter) -> None:
    """Close and wait, ignoring a peer that already went away."""
    with contextlib.suppress(Exception):
        writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
