"""A byte-level HTTP/1.1 client for tests: see exactly what came over the wire.

Real clients hide the framing that faults break (a missing ``0\\r\\n\\r\\n``, a
TCP reset, one byte per chunk). :func:`raw_request` sends one request on a
plain socket, reads until the peer closes (or resets, or ``timeout``), and
keeps every read with its arrival time; :class:`RawResponse` then undoes the
chunked framing leniently and says whether the body was complete.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from railings.wire.blocks import split_plain

__all__ = ["RawResponse", "raw_request"]


@dataclass(slots=True)
class RawResponse:
    """One response exactly as it came over the socket, with what the framing says of it.

    ``wire`` and ``reads`` are the bytes received; ``status``, ``headers``, ``chunks``
    and ``body`` are parsed from them leniently; ``complete`` says whether the body's end
    arrived (the last chunk, or ``content-length`` bytes), ``reset`` and ``timed_out``
    how the reading stopped otherwise.
    """

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    wire: bytes = b""  # everything received, head included
    reads: list[tuple[float, bytes]] = field(default_factory=list)  # (seconds since send, data)
    reset: bool = False  # the connection ended with ECONNRESET
    timed_out: bool = False
    chunks: list[bytes] = field(default_factory=list)  # chunk payloads, in order
    complete: bool = False  # chunked: the last chunk arrived; else content-length satisfied
    body: bytes = b""

    @property
    def head_size(self) -> int:
        """Bytes of the head: status line, headers, blank line (3 when the head never ended)."""
        return self.wire.find(b"\r\n\r\n") + 4

    def events(self) -> list[bytes]:
        """The body cut at blank lines (LF framing, as the scripted server writes it)."""
        blocks, rest = split_plain(self.body)
        return [block + b"\n\n" for block in blocks] + ([rest] if rest else [])


def _parse(resp: RawResponse) -> None:
    end = resp.wire.find(b"\r\n\r\n")
    if end < 0:
        return
    lines = resp.wire[:end].decode("latin-1").split("\r\n")
    resp.status = int(lines[0].split(" ")[1])
    for line in lines[1:]:
        name, _, value = line.partition(":")
        resp.headers[name.strip().lower()] = value.strip()
    rest = resp.wire[end + 4 :]
    if resp.headers.get("transfer-encoding", "").lower() == "chunked":
        pos = 0
        while True:
            eol = rest.find(b"\r\n", pos)
            if eol < 0:
                break
            size = int(rest[pos:eol].split(b";")[0] or b"0", 16)
            if size == 0:
                resp.complete = rest[eol + 2 : eol + 4] == b"\r\n"
                break
            data = rest[eol + 2 : eol + 2 + size]
            resp.chunks.append(data)
            if len(data) < size:
                break
            pos = eol + 2 + size + 2
        resp.body = b"".join(resp.chunks)
    else:
        resp.body = rest
        length = resp.headers.get("content-length")
        resp.complete = length is not None and len(rest) == int(length)


def raw_request(
    url: str,
    path: str,
    body: Any = None,
    *,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> RawResponse:
    """Send one request (``body`` is JSON-encoded unless bytes) and read to the end."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    payload = (
        body if isinstance(body, bytes) else (b"" if body is None else json.dumps(body).encode())
    )
    head = [
        f"{method} {path} HTTP/1.1",
        f"host: {host}:{port}",
        "content-type: application/json",
        f"content-length: {len(payload)}",
        "connection: close",
    ]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    resp = RawResponse()
    received = bytearray()
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
        start = time.monotonic()
        deadline = start + timeout
        while True:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                resp.reset = True
                break
            except TimeoutError:
                resp.timed_out = True
                break
            if not data:
                break
            resp.reads.append((time.monotonic() - start, data))
            received += data
    resp.wire = bytes(received)
    _parse(resp)
    return resp
