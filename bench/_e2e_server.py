"""The end-to-end bench's server: minimal keep-alive HTTP/1.1, one SSE event per chunk.

Runs in its own process (``bench/e2e.py`` starts it), so the load process's CPU
is the clients' alone. The path names the body: ``/v1/chat/completions`` is W1
(OpenAI Chat Completions text), ``/v1/messages`` W3 (Anthropic Messages text), both
from :mod:`workloads`, with the number of content chunks the bench last sent down
the control pipe (so every client keeps one URL, and one warm pool, for the whole
run). The answer is
``transfer-encoding: chunked`` with one SSE event per HTTP chunk, each written
on its own (one ``send``), the open answers taking turns chunk by chunk, the way a
provider flushes token by token; then the last chunk, and the connection waits for
the next request (keep-alive, as the providers' front ends do). One task writes
every answer's chunks, so the server's cost per event is one write and the load
process, not the server, is what a round measures.

Only what the bench needs is parsed: the request line, ``content-length`` and
the body (read and dropped). Anything else (a path it does not know) gets a 404.
"""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Iterator
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
# An answer being written: its transport, the chunks left, what its handler awaits.
_Answer = tuple[asyncio.WriteTransport, Iterator[bytes], "asyncio.Future[None]"]
_BACKLOG = 64 * 1024  # bytes an answer may have waiting in user space before it skips a round


def framed(body: bytes) -> list[bytes]:
    """``body`` as HTTP chunks, one SSE event each."""
    import workloads

    return [b"%x\r\n%s\r\n" % (len(piece), piece) for piece in workloads.pieces(body, "event")]


class _Server:
    def __init__(self) -> None:
        self.n = 1  # content chunks per answer: set by the bench between rounds
        self._chunks: dict[tuple[str, int], list[bytes]] = {}
        # The answers being written: their transport, the chunks left, the handler's wait.
        self._streams: list[_Answer] = []
        self._wake = asyncio.Event()

    async def pace(self) -> None:
        """Write the next chunk of every open answer, one write each, round after round.

        One task for all of them, so the server's cost is a write per event; an answer
        whose client has not taken the last round's bytes waits a round (backpressure)."""
        while True:
            if not self._streams:
                self._wake.clear()
                await self._wake.wait()
            still = []
            for stream in self._streams:
                transport, chunks, done = stream
                if transport.is_closing():
                    done.set_result(None)
                    continue
                if transport.get_write_buffer_size() > _BACKLOG:
                    still.append(stream)
                    continue
                chunk = next(chunks, None)
                if chunk is None:
                    transport.write(_LAST)
                    done.set_result(None)
                else:
                    transport.write(chunk)
                    still.append(stream)
            self._streams = still
            await asyncio.sleep(0)  # the handlers read the next requests

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
                writer.write(HEAD)
                done = asyncio.get_running_loop().create_future()
                chunks = self.chunks(_WIRES[found.group(1)], self.n)
                self._streams.append((writer.transport, iter(chunks), done))
                self._wake.set()
                await done
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
        pacer = asyncio.create_task(server.pace())
        async with listener:
            await asyncio.gather(listener.serve_forever(), pacer)

    if uvloop is not None:
        uvloop.run(main())
    else:
        asyncio.run(main())
