"""The end-to-end bench's server: minimal keep-alive HTTP/1.1, one SSE event per chunk.

Runs in its own process (``bench/e2e.py`` starts it), so the load process's CPU
is the clients' alone. The path names the body: ``/v1/chat/completions`` is W1
(OpenAI Chat Completions text), ``/v1/messages`` W3 (Anthropic Messages text), both
from :mod:`workloads`, with the number of content chunks the bench last sent down
the control pipe (so every client keeps one URL, and one warm pool, for the whole
run). The answer is
``transfer-encoding: chunked`` with one SSE event per HTTP chunk, each written
on its own and the stream's task yielding to the others after each one, the way a
provider flushes token by token; then the last chunk, and the connection waits for
the next request (keep-alive, as the providers' front ends do).

Only what the bench needs is parsed: the request line, ``content-length`` and
the body (read and dropped). Anything else (a path it does not know) gets a 404.
"""

from __future__ import annotations

import asyncio
import re
import socket
from multiprocessing.connection import Connection

__all__ = ["HEAD", "framed", "serve"]

HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
)
_LAST = b"0\r\n\r\n"
_PATH = re.compile(rb"^POST (/v1/chat/completions|/v1/messages) HTTP/1\.1\r\n")
_LENGTH = re.compile(rb"(?im)^content-length:\s*(\d+)\r\n")
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"
_WIRES = {b"/v1/chat/completions": "W1", b"/v1/messages": "W3"}


def framed(body: bytes) -> list[bytes]:
    """``body`` as HTTP chunks, one SSE event each."""
    import workloads

    return [b"%x\r\n%s\r\n" % (len(piece), piece) for piece in workloads.pieces(body, "event")]


class _Server:
    def __init__(self) -> None:
        self.n = 1  # content chunks per answer: set by the bench between rounds
        self._chunks: dict[tuple[str, int], list[bytes]] = {}

    def chunks(self, wire: str, n: int) -> list[bytes]:
        key = (wire, n)
        if key not in self._chunks:
            import workloads

            self._chunks[key] = framed(workloads.build(wire, n).body)
        return self._chunks[key]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:  # keep-alive: one request after the other on this connection
                head = await reader.readuntil(b"\r\n\r\n")
                length = _LENGTH.search(head)
                if length:
                    await reader.readexactly(int(length.group(1)))
                found = _PATH.match(head)
                if found is None:
                    writer.write(_NOT_FOUND)
                    continue
                chunks = self.chunks(_WIRES[found.group(1)], self.n)
                writer.write(HEAD)
                for chunk in chunks:
                    writer.write(chunk)
                    await writer.drain()
                    await asyncio.sleep(0)  # the next stream's event goes out before ours
                writer.write(_LAST)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()


def serve(conn: Connection) -> None:
    """The server process: bind a free loopback port, send its URL down ``conn``, serve.

    Each integer then received on ``conn`` is the number of content chunks of the
    answers from now on; the server builds those bodies and answers ``n`` back."""
    try:
        import uvloop  # the server's own cost stays small beside the clients'
    except ImportError:
        uvloop = None

    async def main() -> None:
        server = _Server()
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, backlog=4096)

        def control() -> None:
            server.n = conn.recv()
            for wire in _WIRES.values():
                server.chunks(wire, server.n)
            conn.send(server.n)

        asyncio.get_running_loop().add_reader(conn.fileno(), control)
        conn.send(f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}")
        async with listener:
            await listener.serve_forever()

    if uvloop is not None:
        uvloop.run(main())
    else:
        asyncio.run(main())
