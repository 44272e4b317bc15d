"""The client's HTTP read path: bodies read in bulk, the sharded pool, compressed bodies.

Each test runs a real keep-alive HTTP/1.1 server on 127.0.0.1 (a free port chosen
at run time) in the test's own event loop. The bounds are on steps, connections
and bytes, never on time: a body written in one ``send`` reaches the client in one
loopback segment, so the number of steps it takes is fixed by the code.
"""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

import h11
import httpcore2
import httpx2
import pytest

from railings.events import TextDelta
from railings.messages import User
from railings.transport import AsyncProviderClient, ClientConfig
from railings.transport.bulk import _NEEDED, BulkTransport, install
from railings.transport.shards import SHARD, ShardedTransport
from railings.transport.tracing import recording
from railings.turn.model import Outcome
from streams import openai_chunk

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
WORDS = [f"w{i} " for i in range(200)]


def framed(pieces: Sequence[bytes]) -> bytes:
    """Each piece as one HTTP chunk, then the last chunk."""
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def events(words: Sequence[str]) -> list[bytes]:
    """An OpenAI Chat Completions stream, one SSE event per piece, with its proof."""
    out = [openai_chunk({"role": "assistant", "content": ""})]
    out += [openai_chunk({"content": w}) for w in words]
    return [*out, openai_chunk({}, "stop"), b"data: [DONE]\n\n"]


Answer = Callable[[bytes], bytes]  # the request head -> every byte of the answer


class KeepAlive:
    """Answers each request on a connection with ``answer(head)`` in one write, then
    waits for the next request on the same connection; ``gate`` (when set) holds
    every answer until it is set. Counts connections and requests."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections = 0
        self.requests = 0
        self.gate: asyncio.Event | None = None
        self.url = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        await reader.readexactly(int(line.split(b":")[1]))
                self.requests += 1
                if self.gate is not None:
                    await self.gate.wait()
                writer.write(self.answer(head))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def serving(answer: Answer) -> AsyncIterator[KeepAlive]:
    server = KeepAlive(answer)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, backlog=1024)
    server.url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    try:
        yield server
    finally:
        listener.close()


def stream_of(pieces: Sequence[bytes], headers: bytes = b"") -> Answer:
    return lambda head: HEAD + headers + b"\r\n" + framed(pieces)


async def steps(transport: httpx2.AsyncBaseTransport, url: str) -> tuple[int, bytes]:
    """How many steps ``aiter_raw`` took to hand over the body, and the body."""
    async with (
        httpx2.AsyncClient(transport=transport) as client,
        client.stream("POST", url, content=b"{}") as response,
    ):
        parts = [chunk async for chunk in response.aiter_raw()]
    return len(parts), b"".join(parts)


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 60))  # type: ignore[arg-type]


# -- bodies in bulk ------------------------------------------------------------------------


def test_buffered_chunks_are_handed_over_in_one_step() -> None:
    pieces = events(WORDS)
    body = b"".join(pieces)

    async def main() -> None:
        async with serving(stream_of(pieces)) as server:
            plain = await steps(httpx2.AsyncHTTPTransport(), server.url)
            bulk = await steps(BulkTransport(), server.url)
        assert plain == (len(pieces), body)  # httpx2 alone: one step per HTTP chunk
        count, got = bulk
        assert got == body
        assert count <= 3  # the bytes of one read go up at once (headers and body may split)

    run(main())


def test_a_chunked_body_is_decoded_in_bulk_on_the_way() -> None:
    # Through the transport, h11's chunked reader is replaced for the body
    # (transport/chunks.py): h11 hands the 200-odd chunks of one read over in a few
    # events instead of one per chunk, and the body comes out whole.
    pieces = events(WORDS)

    async def main() -> None:
        async with serving(stream_of(pieces)) as server:
            transport = BulkTransport()
            request = httpx2.Request("POST", server.url, content=b"{}")
            response = await transport.handle_async_request(request)
            state = response.stream._httpcore_stream._stream._connection._h11_state  # type: ignore[attr-defined]
            seen: list[object] = []
            next_event = state.next_event

            def counted() -> object:
                event = next_event()
                seen.append(type(event))
                return event

            state.next_event = counted
            try:
                got = b"".join([part async for part in response.stream])
            finally:
                await response.aclose()
                await transport.aclose()
            assert got == b"".join(pieces)
            assert seen.count(h11.Data) <= 3 < len(pieces)  # one per read, not per chunk
            assert seen[-1] is h11.EndOfMessage

    run(main())


def test_connection_is_kept_alive_after_a_bulk_body() -> None:
    pieces = events(WORDS[:20])

    async def main() -> None:
        async with serving(stream_of(pieces)) as server:
            async with httpx2.AsyncClient(transport=BulkTransport()) as client:
                for _ in range(3):
                    async with client.stream("POST", server.url, content=b"{}") as response:
                        assert await response.aread() == b"".join(pieces)
            # The end of each message was seen: the one connection served all three.
            assert (server.connections, server.requests) == (1, 3)

    run(main())


def test_a_broken_chunk_after_good_ones_raises_only_after_them() -> None:
    good = events(WORDS[:3])[:3]  # role, w0, w1: no proof

    def answer(head: bytes) -> bytes:
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in good)
        return HEAD + b"\r\n" + body + b"zz-not-a-chunk-size\r\n\r\n"

    async def main() -> None:
        async with serving(answer) as server:
            got: list[bytes] = []
            async with (
                httpx2.AsyncClient(transport=BulkTransport()) as client,
                client.stream("POST", server.url, content=b"{}") as response,
            ):
                with pytest.raises(httpx2.RemoteProtocolError):
                    async for chunk in response.aiter_raw():
                        got.append(chunk)
            assert b"".join(got) == b"".join(good)  # every good chunk arrived first

            # Through the client: a Partial turn that kept the text before the break.
            config = ClientConfig(
                provider="openai", model="m", base_url=server.url + "/v1", api_key="k"
            )
            async with AsyncProviderClient(config) as railings:
                turn = await railings.stream_turn([User("hi")]).result()
            assert (turn.outcome, turn.text) == (Outcome.PARTIAL, "w0 w1 ")

    run(main())


def test_the_private_names_bulk_reading_uses_are_there() -> None:
    # bulk.py reaches into httpcore2; a release that renames one of these makes
    # install() leave connections alone (slower, never wrong) and this test fail.
    for name in ("_receive_response_body", "_receive_event"):
        assert callable(getattr(httpcore2.AsyncHTTP11Connection, name, None)), name
    pieces = events(WORDS[:5])

    async def main() -> None:
        async with serving(stream_of(pieces)) as server:
            transport = httpx2.AsyncHTTPTransport()
            request = httpx2.Request("POST", server.url, content=b"{}")
            response = await transport.handle_async_request(request)
            try:
                assert install(response) is True
                connection = response.stream._httpcore_stream._stream._connection  # type: ignore[attr-defined]
                assert all(hasattr(connection, name) for name in _NEEDED)
                assert isinstance(connection._h11_state, h11.Connection)
                assert "_receive_response_body" in vars(connection)
            finally:
                await response.aclose()
                await transport.aclose()

    run(main())


# -- compressed bodies keep their decoder ------------------------------------------------


@pytest.mark.parametrize(
    ("coding", "compress"),
    [("gzip", gzip.compress), ("deflate", zlib.compress)],
)
def test_a_compressed_event_stream_is_still_decoded(
    coding: str, compress: Callable[[bytes], bytes]
) -> None:
    data = compress(b"".join(events(WORDS[:50])))
    pieces = [data[i : i + 97] for i in range(0, len(data), 97)]  # cut anywhere

    async def main() -> None:
        header = b"content-encoding: " + coding.encode() + b"\r\n"
        async with serving(stream_of(pieces, header)) as server:
            config = ClientConfig(
                provider="openai", model="m", base_url=server.url + "/v1", api_key="k"
            )
            async with AsyncProviderClient(config) as client:
                turn = await client.stream_turn([User("hi")]).result()
        assert (turn.outcome, turn.text) == (Outcome.COMPLETE, "".join(WORDS[:50]))

    run(main())


# -- the pool ------------------------------------------------------------------------------


def test_150_concurrent_turns_through_one_client_all_complete() -> None:
    # More than one shard and more than the 100 connections kept alive when idle.
    pieces = events(WORDS[:10])

    async def main() -> None:
        async with serving(stream_of(pieces)) as server:
            server.gate = asyncio.Event()  # every turn open at once before any answer
            config = ClientConfig(
                provider="openai", model="m", base_url=server.url + "/v1", api_key="k"
            )
            async with AsyncProviderClient(config) as client:

                async def one() -> tuple[Outcome, str]:
                    stream = client.stream_turn([User("hi")])
                    text = [e.text async for e in stream if type(e) is TextDelta]
                    return stream.turn.outcome, "".join(text)

                turns = [asyncio.create_task(one()) for _ in range(150)]
                while server.requests < 150:
                    await asyncio.sleep(0.01)
                server.gate.set()
                done = await asyncio.gather(*turns)
        assert done == [(Outcome.COMPLETE, "".join(WORDS[:10]))] * 150
        assert server.connections == 150  # none queued behind another

    run(main())


def test_shards_spread_a_burst_and_reuse_one_connection_alone() -> None:
    pieces = events(WORDS[:3])

    async def main() -> None:
        async with serving(stream_of(pieces)) as server:
            server.gate = asyncio.Event()
            limits = httpx2.Limits(max_connections=100, max_keepalive_connections=100)
            sharded = ShardedTransport(lambda per: BulkTransport(limits=per), limits)
            assert len(sharded.shards) == -(-100 // SHARD)
            async with httpx2.AsyncClient(transport=sharded) as client:
                for _ in range(3):  # one at a time: the first shard, one connection
                    server.gate.set()
                    assert (await client.post(server.url, content=b"{}")).status_code == 200
                assert server.connections == 1
                assert sharded.open == [0] * len(sharded.shards)

                server.gate.clear()
                sends = [
                    asyncio.create_task(client.post(server.url, content=b"{}")) for _ in range(70)
                ]
                while server.requests < 3 + 70:
                    await asyncio.sleep(0.01)
                assert sum(sharded.open) == 70
                assert max(sharded.open) - min(sharded.open) <= 1  # spread evenly
                server.gate.set()
                assert all(r.status_code == 200 for r in await asyncio.gather(*sends))
                assert sharded.open == [0] * len(sharded.shards)

    run(main())


@pytest.mark.parametrize(("size", "keep"), [(33, 33), (65, 2), (97, 100)])
def test_a_burst_past_the_limit_opens_exactly_max_connections(size: int, keep: int) -> None:
    # size + 7 responses held open at once: exactly ``size`` connections, the rest wait for
    # one; once all are done, exactly ``keep`` of them stay alive (at most ``size``).
    pieces = events(WORDS[:3])
    burst = size + 7

    async def main() -> None:
        async with serving(stream_of(pieces)) as server:
            server.gate = asyncio.Event()  # every answer held until all are sent
            limits = httpx2.Limits(max_connections=size, max_keepalive_connections=keep)
            sharded = ShardedTransport(lambda per: BulkTransport(limits=per), limits)
            async with httpx2.AsyncClient(transport=sharded, timeout=30) as client:
                sends = [
                    asyncio.create_task(client.post(server.url, content=b"{}"))
                    for _ in range(burst)
                ]
                # Each request has its connection, or its place in a shard's queue, once it
                # is counted open (the pool assigns it in the same step).
                while sum(sharded.open) < burst or server.requests < size:
                    await asyncio.sleep(0.01)
                server.gate.set()
                assert all(r.status_code == 200 for r in await asyncio.gather(*sends))
                idle = [len(s._pool.connections) for s in sharded.shards if s is not None]  # type: ignore[attr-defined]
            assert server.connections == size
            assert server.requests == burst
            assert sum(idle) == min(keep, size)

    run(main())


def test_the_limits_are_split_exactly_and_every_shard_keeps_a_connection() -> None:
    def split(size: int, keep: int | None) -> list[httpx2.Limits]:
        limits = httpx2.Limits(max_connections=size, max_keepalive_connections=keep)
        return ShardedTransport(lambda per: BulkTransport(limits=per), limits).limits

    for size, keep in [(33, 33), (65, 100), (1000, 100), (5000, 100), (64, 1), (40, None)]:
        shards = split(size, keep)
        assert sum(s.max_connections or 0 for s in shards) == size
        assert all(s.max_connections for s in shards)  # none without a connection
        if keep is not None:
            assert sum(s.max_keepalive_connections or 0 for s in shards) == keep
            assert all(s.max_keepalive_connections for s in shards)  # each keeps one
        counts = [s.max_connections or 0 for s in shards]
        assert counts == sorted(counts, reverse=True)  # the larger shards first
        assert max(counts) - min(counts) <= 1
    assert len(split(1000, 100)) == -(-1000 // SHARD)
    assert len(split(5000, 100)) == 100  # no more shards than connections kept alive


def test_an_unbounded_pool_stays_one_shard() -> None:
    unbounded = ShardedTransport(lambda per: BulkTransport(limits=per), httpx2.Limits())
    assert len(unbounded.shards) == 1  # no bound to split: one pool, as httpx2 would make


def test_a_turn_without_a_tracer_or_sdk_skips_the_tracing_layer() -> None:
    # With OpenTelemetry's API alone the global provider makes non-recording spans.
    assert recording(None) is False
    assert recording(object()) is True


def test_a_body_already_in_memory_is_read_from_there() -> None:
    # httpx2.MockTransport answers with Response(content=...): no stream left to read raw.
    body = b"".join(events(WORDS[:4]))

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async def main() -> None:
        config = ClientConfig(provider="openai", model="m", api_key="k")
        transport = httpx2.MockTransport(handler)
        async with AsyncProviderClient(config, transport=transport) as client:
            turn = await client.stream_turn([User("hi")]).result()
        assert (turn.outcome, turn.text) == (Outcome.COMPLETE, "".join(WORDS[:4]))

    run(main())
