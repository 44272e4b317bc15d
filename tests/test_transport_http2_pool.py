"""Over HTTP/2 the client keeps one pool: a burst multiplexes over one connection.

The server is a real HTTP/2 server on 127.0.0.1 (a free port chosen at run time),
over TLS with ALPN, a certificate made for the test: it holds every answer until
the whole burst has arrived, then answers each stream with a Chat Completions
body. Split into shards, the burst opened one connection per shard it touched.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import pytest

from _server import make_certificate
from railings.messages import User
from railings.transport import AsyncProviderClient, ClientConfig
from railings.transport.bulk import BulkTransport
from railings.transport.shards import ShardedTransport, pooled
from railings.turn.model import Outcome
from streams import openai_chunk

BURST = 20
BODY = b"".join(
    [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": "hello"}),
        openai_chunk({}, "stop"),
        b"data: [DONE]\n\n",
    ]
)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


class H2Server:
    """Counts connections and requests; answers once ``gate`` is set."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests = 0
        self.gate = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        writer.write(conn.data_to_send())

        async def answer(stream_id: int) -> None:
            await self.gate.wait()
            conn.send_headers(
                stream_id, [(":status", "200"), ("content-type", "text/event-stream")]
            )
            conn.send_data(stream_id, BODY, end_stream=True)
            writer.write(conn.data_to_send())

        try:
            while data := await reader.read(65536):
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.DataReceived):
                        conn.acknowledge_received_data(len(event.data), event.stream_id)
                    elif isinstance(event, h2.events.RequestReceived):
                        self.requests += 1
                        task = asyncio.create_task(answer(event.stream_id))
                        self.tasks.add(task)
                        task.add_done_callback(self.tasks.discard)
                writer.write(conn.data_to_send())
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()


def test_a_burst_over_http2_shares_one_connection(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate

    async def main() -> None:
        server = H2Server()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        context.set_alpn_protocols(["h2", "http/1.1"])
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=context)
        port = listener.sockets[0].getsockname()[1]
        config = ClientConfig(
            provider="openai",
            model="m",
            base_url=f"https://127.0.0.1:{port}/v1",
            api_key="k",
            verify=ssl.create_default_context(cafile=str(cert)),
        )
        try:
            async with AsyncProviderClient(config) as client:
                turns = [
                    asyncio.create_task(client.stream_turn([User("hi")]).result())
                    for _ in range(BURST)
                ]
                while server.requests < BURST:
                    await asyncio.sleep(0.01)
                server.gate.set()
                done = await asyncio.gather(*turns)
        finally:
            listener.close()
        assert [(t.outcome, t.text) for t in done] == [(Outcome.COMPLETE, "hello")] * BURST
        assert server.connections == 1  # every stream over the one connection

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.accelerated
def test_only_an_origin_that_may_speak_http2_keeps_one_pool() -> None:
    # HTTP/2 on, over TLS: one pool (1,000 connections, 100 kept alive), as httpx2 makes it.
    one = pooled(True, True, 1000, tls=True)
    assert type(one) is BulkTransport
    # A plain http origin never speaks HTTP/2 (httpcore2 negotiates it only through TLS),
    # nor a client with HTTP/2 off (the HTTP/2 -> HTTP/1.1 fallback builds one): shards.
    for transport in (pooled(True, True, 1000, tls=False), pooled(False, True, 1000, tls=True)):
        assert isinstance(transport, ShardedTransport)
        assert sum(limits.max_connections or 0 for limits in transport.limits) == 1000
