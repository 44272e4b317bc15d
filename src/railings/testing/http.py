"""A small, strict HTTP/1.1 for the test kit: one request per connection.

Both the scripted server and the fault proxy speak HTTP/1.1 over plain asyncio
streams. They need exact control of the bytes on the wire (a chunked stream cut
before its ``0\\r\\n\\r\\n`` terminator, a TCP reset, one byte per chunk), which a
framework would hide. The subset is the one LLM clients use:

* requests: request line, headers, a body framed by ``Content-Length`` or
  ``Transfer-Encoding: chunked`` (RFC 9112 §6), parsed strictly: a method that
  is not a token, a version other than HTTP/1.0 or 1.1, a header name that is
  not a token, a control character in a value, a ``Content-Length`` that is not
  ASCII digits (or two that disagree), both framings at once (the request
  smuggling shape, RFC 9112 §6.3), a chunk size that is not hexadecimal digits
  (``-5``, ``0x5`` and ``5_`` are what ``int(_, 16)`` would accept) -- each is
  answered 400; a body over ``MAX_BODY`` is answered 413 however it is framed.
  :class:`HTTPFault` is the only error a request can raise: a malformed request
  is answered, never an unhandled exception;
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
import re
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

# RFC 9110 §5.6.2: token = 1*tchar. Methods and header names are tokens.
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# RFC 9110 §5.5: a field value holds no CR, LF or NUL (and no other control but HTAB).
_BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_DIGITS = re.compile(rb"[0-9]{1,18}")
# RFC 9112 §7.1: chunk-size = 1*HEXDIG, then optional BWS ";" chunk-ext, then CRLF.
# 16 digits is 2**64; anything longer is no size this kit could honour.
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})(?:[ \t]*;[^\r\n]*)?\r\n")
_TARGET = re.compile(rb"[\x21-\x7e]+")

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
        """The value of the first header called ``name``, or ``default``."""
        lname = name.lower()
        for key, value in self.items:
            if key.lower() == lname:
                return value
        return default

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def remove(self, *names: str) -> None:
        """Drop every header with one of ``names``."""
        drop = {n.lower() for n in names}
        self.items = [(k, v) for k, v in self.items if k.lower() not in drop]

    def set(self, name: str, value: str) -> None:
        """Replace every header called ``name`` with one, placed last."""
        self.remove(name)
        self.items.append((name, value))

    def as_dict(self) -> dict[str, str]:
        """The headers by lower-cased name; of repeated ones the last value wins."""
        return {k.lower(): v for k, v in self.items}


@dataclass(slots=True)
class Request:
    """One request as read: ``target`` as sent (path and query), ``body`` unframed."""

    method: str
    target: str
    headers: Headers
    body: bytes

    @property
    def path(self) -> str:
        """The target without its query string."""
        return self.target.split("?", 1)[0]


@dataclass(slots=True)
class ResponseHead:
    """The status line and headers of an upstream response (its body is still unread)."""

    status: int
    reason: str
    headers: Headers


def _parse_header_lines(lines: list[bytes], status: int = 400) -> Headers:
    headers = Headers()
    for raw in lines:
        if raw[:1] in (b" ", b"\t"):
            raise HTTPFault(status, "obsolete header line folding")  # RFC 9112 §5.2
        name, sep, value = raw.partition(b":")
        if not sep or _TOKEN.fullmatch(name) is None:
            raise HTTPFault(status, f"malformed header line {raw[:80]!r}")
        value = value.strip(b" \t")
        if _BAD_VALUE.search(value) is not None:
            raise HTTPFault(status, f"control character in header {name[:40]!r}")
        headers.items.append((name.decode("latin-1"), value.decode("latin-1")))
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
    """Read one request. Raises :class:`HTTPFault` (4xx, or 501 for a transfer coding
    other than chunked, RFC 9112 §6.1), or EOFError on a silent close; nothing else."""
    lines = await _read_head(reader)
    parts = lines[0].split(b" ")
    if (
        len(parts) != 3
        or _TOKEN.fullmatch(parts[0]) is None
        or _TARGET.fullmatch(parts[1]) is None
        or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0")
    ):
        raise HTTPFault(400, f"malformed request line {lines[0][:80]!r}")
    headers = _parse_header_lines(lines[1:])
    body = b"".join([piece async for piece in iter_body(reader, headers, request=True)])
    return Request(parts[0].decode("ascii"), parts[1].decode("ascii"), headers, body)


async def read_response_head(reader: asyncio.StreamReader) -> ResponseHead:
    """Read an upstream response's status line and headers. Raises :class:`HTTPFault`
    (502 for a malformed status or header line), or EOFError on a silent close."""
    lines = await _read_head(reader)
    version, _, rest = lines[0].partition(b" ")
    code, _, reason = rest.partition(b" ")
    if not version.startswith(b"HTTP/1.") or re.fullmatch(rb"[0-9]{3}", code) is None:
        raise HTTPFault(502, f"malformed status line {lines[0][:80]!r}")
    return ResponseHead(int(code), reason.decode("latin-1"), _parse_header_lines(lines[1:], 502))


def _framing(headers: Headers, *, request: bool) -> tuple[str, int | None]:
    """(transfer coding or "", content length or None), checked: RFC 9112 §6.1-6.3."""
    bad = 400 if request else 502
    codings = [v for k, v in headers.items if k.lower() == "transfer-encoding"]
    lengths = {v for k, v in headers.items if k.lower() == "content-length"}
    if codings and lengths and request:
        # Both framings in a request: the smuggling shape. Refused, not guessed (§6.3 item 3;
        # in a response, transfer-encoding wins).
        raise HTTPFault(bad, "both transfer-encoding and content-length")
    if codings:
        coding = ",".join(codings).strip().lower()
        if coding == "chunked":
            return "chunked", None
        if all(_TOKEN.fullmatch(c.strip().encode("latin-1")) for c in coding.split(",")):
            raise HTTPFault(501 if request else 502, f"unsupported transfer-encoding {coding}")
        raise HTTPFault(bad, f"malformed transfer-encoding {coding[:40]!r}")
    if not lengths:
        return "", None
    if len(lengths) > 1:
        raise HTTPFault(bad, "conflicting content-length headers")
    (length,) = lengths
    if _DIGITS.fullmatch(length.encode("latin-1")) is None:
        raise HTTPFault(bad, f"bad content-length {length[:20]!r}")
    return "", int(length)


async def iter_body(
    reader: asyncio.StreamReader, headers: Headers, *, request: bool, piece: int = 65536
) -> AsyncIterator[bytes]:
    """Yield a message body as it arrives, undoing its framing (RFC 9112 §6.3).

    A request without framing has no body; a response without framing runs to EOF.
    A request body is bounded by ``MAX_BODY`` whichever framing it has (413).
    """
    bad = 400 if request else 502
    encoding, length = _framing(headers, request=request)
    if encoding:
        async for data in _iter_chunked(reader, piece, bad, MAX_BODY if request else None):
            yield data
        return
    if length is not None:
        remaining = length
        if request and remaining > MAX_BODY:
            raise HTTPFault(413, "request body too large")
        while remaining:
            data = await reader.read(min(piece, remaining))
            if not data:
                raise HTTPFault(bad, "body shorter than content-length")
            remaining -= len(data)
            yield data
        return
    if request:
        return
    while data := await reader.read(piece):
        yield data


async def _iter_chunked(
    reader: asyncio.StreamReader, piece: int, bad: int, limit: int | None
) -> AsyncIterator[bytes]:
    """Undo chunked framing. ``bad`` is the status of a framing fault (400 for a
    request, 502 for an upstream response); ``limit`` bounds the body (413)."""
    total = 0
    while True:
        size = await _chunk_size(reader, bad)
        total += size
        if limit is not None and total > limit:
            raise HTTPFault(413, "request body too large")
        if size == 0:
            await _skip_trailer(reader, bad)
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
                raise HTTPFault(bad, "chunked body ended inside a chunk")
            size -= len(data)
        try:
            crlf = await reader.readexactly(2)
        except asyncio.IncompleteReadError as exc:
            raise HTTPFault(bad, "chunked body ended before its last chunk") from exc
        if crlf != b"\r\n":
            raise HTTPFault(bad, "chunk data not followed by CRLF")


async def _chunk_size(reader: asyncio.StreamReader, bad: int) -> int:
    """The size of the next chunk, from a line of hexadecimal digits (and extensions)."""
    try:
        size_line = await reader.readuntil(b"\r\n")
    except asyncio.LimitOverrunError as exc:
        raise HTTPFault(bad, "chunk size line too long") from exc
    except asyncio.IncompleteReadError as exc:
        raise HTTPFault(bad, "chunked body ended before its last chunk") from exc
    match = _CHUNK_SIZE.fullmatch(size_line)
    if match is None:
        raise HTTPFault(bad, f"bad chunk size {size_line[:20]!r}")
    return int(match.group(1), 16)  # hexadecimal digits only: checked above


async def _skip_trailer(reader: asyncio.StreamReader, bad: int) -> None:
    """Read and drop the trailer fields after the last chunk, bounded like a head."""
    trailer = 0
    try:
        while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
            trailer += len(line)
            if trailer > MAX_HEAD:
                raise HTTPFault(431 if bad == 400 else bad, "chunked trailer too large")
    except asyncio.LimitOverrunError as exc:
        raise HTTPFault(bad, "chunked trailer line too long") from exc
    except asyncio.IncompleteReadError as exc:
        raise HTTPFault(bad, "chunked body ended inside its trailer") from exc


def render_head(
    status: int, headers: Iterable[tuple[str, str]], reason: str | None = None
) -> bytes:
    """A response head, blank line included; ``reason`` defaults to the status's own."""
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
