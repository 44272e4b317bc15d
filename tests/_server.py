"""A canned-bytes HTTP server on 127.0.0.1 for the transport and guard tests.

Each request takes the next queued :class:`Reply` and gets exactly its bytes: a
status, headers, body chunks (a float in ``chunks`` is a pause), and an ending
(a clean chunked end, a close, a TCP reset, or a hang). Requests are recorded.
With ``tls=`` it speaks TLS with ALPN; an ``h2`` connection is answered with a
GOAWAY frame right after the request headers (the CDN failure the HTTP/2
fallback exists for), HTTP/1.1 is served normally.

The scripted model server and fault proxy of ``railings.testing`` are the kit
users get; this file only serves fixed bytes, so that a transport test says
exactly what went over the wire.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import struct
import subprocess
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import h2.config
import h2.connection
import h2.errors
import h2.events

Ending = Literal["end", "close", "reset", "hang", "drop"]  # drop: close before any byte


@dataclass
class Reply:
    status: int = 200
    chunks: Sequence[bytes | float] = ()
    headers: Sequence[tuple[str, str]] = (("content-type", "text/event-stream"),)
    end: Ending = "end"
    framing: Literal["chunked", "close"] = "chunked"
    before_headers: float = 0.0  # seconds to wait before the status line


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    protocol: str = "HTTP/1.1"

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class CannedServer:
    tls: tuple[Path, Path] | None = None
    # h2 connections: GOAWAY right after the request headers, or after ``h2_partial`` (a 200
    # event-stream response whose body begins with these bytes).
    h2_partial: bytes | None = None
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    h2_connections: int = 0

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    # -- public ----------------------------------------------------------------------------

    def push(self, *replies: Reply) -> CannedServer:
        self.replies.extend(replies)
        return self

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def __enter__(self) -> CannedServer:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    # -- serving ---------------------------------------------------------------------------

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        context = None
        if self.tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
            context.set_alpn_protocols(["h2", "http/1.1"])
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._accept, "127.0.0.1", 0, ssl=context)
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
            ssl_object = writer.get_extra_info("ssl_object")
            if ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2":
                await self._goaway(reader, writer)
            else:
                await self._http11(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        except asyncio.CancelledError:
            pass  # shutdown: end quietly, asyncio's stream callback reports cancelled tasks
        finally:
            self._tasks.discard(task)
            if not writer.is_closing():
                writer.close()

    async def _goaway(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.h2_connections += 1
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        writer.write(conn.data_to_send())
        while True:
            data = await reader.read(65536)
            if not data:
                return
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    headers = {k.decode(): v.decode() for k, v in event.headers}
                    self.requests.append(
                        Recorded("POST", headers.get(":path", ""), headers, b"", "HTTP/2")
                    )
                    if self.h2_partial is not None:
                        conn.send_headers(
                            event.stream_id,
                            [(":status", "200"), ("content-type", "text/event-stream")],
                        )
                        conn.send_data(event.stream_id, self.h2_partial)
                        writer.write(conn.data_to_send())
                        await writer.drain()
                        await asyncio.sleep(0.05)
                    conn.close_connection(error_code=h2.errors.ErrorCodes.PROTOCOL_ERROR)
                    writer.write(conn.data_to_send())
                    await writer.drain()
                    writer.close()
                    return
            writer.write(conn.data_to_send())
            await writer.drain()

    async def _http11(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.requests.append(Recorded(method, path, headers, body))
        reply = self.replies.popleft() if self.replies else Reply(500, [b"no reply queued"])
        await self._reply(reply, writer)

    async def _reply(self, reply: Reply, writer: asyncio.StreamWriter) -> None:
        if reply.before_headers:
            await asyncio.sleep(reply.before_headers)
        if reply.end == "drop":
            writer.close()
            return
        chunked = reply.framing == "chunked"
        head = [f"HTTP/1.1 {reply.status} X"]
        head += [f"{k}: {v}" for k, v in reply.headers]
        if chunked:
            head.append("transfer-encoding: chunked")
        head.append("connection: close")  # one request per connection: no keep-alive races
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        for chunk in reply.chunks:
            if isinstance(chunk, float):
                await asyncio.sleep(chunk)
                continue
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
            await writer.drain()
        if reply.end == "end":
            if chunked:
                writer.write(b"0\r\n\r\n")
            await writer.drain()
            writer.close()
        elif reply.end == "close":
            writer.close()
        elif reply.end == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        else:  # hang until the test ends
            await asyncio.sleep(3600)


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (the openssl command line)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


# -- wire bytes, one event per chunk, in the shapes the official SDKs parse ------------------


def sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "").encode() + f"data: {payload}\n\n".encode()


def openai_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    body.update(extra)
    return sse(body)


OPENAI_USAGE = sse(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }
)
DONE = b"data: [DONE]\n\n"


def openai_text(
    words: Sequence[str], *, finish: str | None = "stop", done: bool = True
) -> list[bytes]:
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": word}) for word in words]
    if finish is not None:
        chunks += [openai_chunk({}, finish), OPENAI_USAGE]
    if done:
        chunks.append(DONE)
    return chunks


def anthropic_text(words: Sequence[str], *, stop: bool = True) -> list[bytes]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    chunks = [
        sse({"type": "message_start", "message": message}, "message_start"),
        sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        ),
        sse({"type": "ping"}, "ping"),
    ]
    chunks += [
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": word},
            },
            "content_block_delta",
        )
        for word in words
    ]
    chunks += [
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": len(words)},
            },
            "message_delta",
        ),
    ]
    if stop:
        chunks.append(sse({"type": "message_stop"}, "message_stop"))
    return chunks


def anthropic_error(kind: str, message: str) -> bytes:
    return sse({"type": "error", "error": {"type": kind, "message": message}}, "error")


def json_reply(status: int, body: Any, *headers: tuple[str, str]) -> Reply:
    data = json.dumps(body).encode()
    return Reply(status, [data], (("content-type", "application/json"), *headers))
