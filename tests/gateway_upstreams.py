"""Real peers for the gateway's bounds tests: an upstream that streams until its
connection closes (and says when it saw that), and clients that stall mid-body."""

from __future__ import annotations

import asyncio
import socket
import threading
from dataclasses import dataclass, field

from railings.testing.raw import RawResponse

CAP = 2000  # the most chunks the dripping upstream writes after the first ones


@dataclass
class Drip:
    """An HTTP/1.1 upstream on 127.0.0.1: each request is answered 200 with ``first``
    (chunked), then with ``chunk`` every ``pace`` seconds (``pace=None``: silence)
    until the connection closes or :data:`CAP` more chunks were written. ``closed``
    is set when the gateway closed the connection; ``written_at_close`` is how many
    chunks had been written then."""

    first: bytes
    chunk: bytes = b""
    pace: float | None = None
    content_type: str = "text/event-stream"
    written: int = 0
    written_at_close: int | None = None
    requests: list[bytes] = field(default_factory=list)
    closed: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Drip:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._accept, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _shutdown(self) -> None:
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            self.requests.append(head + await reader.readexactly(length))
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: "
                + self.content_type.encode()
                + b"\r\ntransfer-encoding: chunked\r\n\r\n"
                + b"%x\r\n%s\r\n" % (len(self.first), self.first)
            )
            await writer.drain()
            eof = asyncio.ensure_future(reader.read(1))  # b"": the gateway closed
            while not eof.done() and self.pace is not None and self.written < CAP:
                writer.write(b"%x\r\n%s\r\n" % (len(self.chunk), self.chunk))
                self.written += 1
                await asyncio.sleep(self.pace)
            await eof
            self.written_at_close = self.written
            self.closed.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            self.written_at_close = self.written
            self.closed.set()
        except asyncio.CancelledError:
            pass
        finally:
            self._tasks.discard(task)
            writer.close()


def send_part(
    url: str, path: str, declared: int, part: bytes, headers: dict[str, str] | None = None
) -> socket.socket:
    """A client that announces ``declared`` body bytes, sends ``part`` and stalls."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    head = [f"POST {path} HTTP/1.1", f"host: {host}", "content-type: application/json"]
    head += [f"content-length: {declared}"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + part)
    return sock


def answer_of(sock: socket.socket, guard: float = 20.0) -> RawResponse:
    """What the gateway answered on ``sock`` (read until it closes; ``guard`` only keeps
    a broken test from hanging: on expiry ``timed_out`` is set)."""
    resp = RawResponse()
    sock.settimeout(guard)
    wire = bytearray()
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                break
            wire += data
            if _whole(bytes(wire)):
                break
    except TimeoutError:
        resp.timed_out = True
    except ConnectionResetError:
        resp.reset = True
    finally:
        sock.close()
    resp.wire = bytes(wire)
    end = resp.wire.find(b"\r\n\r\n")
    if end > 0:
        lines = resp.wire[:end].decode("latin-1").split("\r\n")
        resp.status = int(lines[0].split(" ")[1])
        for line in lines[1:]:
            name, _, value = line.partition(":")
            resp.headers[name.strip().lower()] = value.strip()
        resp.body = resp.wire[end + 4 :]
        resp.complete = len(resp.body) == int(resp.headers.get("content-length", -1))
    return resp


def _whole(wire: bytes) -> bool:
    end = wire.find(b"\r\n\r\n")
    if end < 0:
        return False
    for line in wire[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(wire) - end - 4 >= int(value)
    return False
