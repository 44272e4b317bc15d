"""The client's transport with its accelerations, without them, and on unverified versions.

The bulk read path (transport/bulk.py, transport/chunks.py) uses private names of httpx2,
httpcore2 and h11, so it runs only on the versions the suite verified
(transport/verified.py, checked at import); with the accelerations off the client uses
httpx2's own ``AsyncHTTPTransport``. Each behaviour test here runs three ways: the
default (shards of bulk transports), the switch off, and the verified check failing
(the version lookup answering another version): every way reads the same turns from a
real HTTP/1.1 server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import gzip
import importlib
import importlib.metadata
from collections.abc import Iterator

import httpx2
import pytest

from railings import accelerations
from railings.events import TextDelta
from railings.messages import User
from railings.transport import AsyncProviderClient, ClientConfig, verified
from railings.transport.bulk import BulkTransport, install
from railings.transport.shards import ShardedTransport, pooled
from railings.turn.model import Outcome
from test_transport_read_path import HEAD, WORDS, events, run, serving, stream_of

PATHS = ["accelerated", "plain", "unverified"]


@pytest.fixture
def unverified(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process as it is where httpx2, httpcore2 and h11 are other versions."""
    with monkeypatch.context() as patch:
        patch.setattr(importlib.metadata, "version", lambda name: "0.0.1")
        importlib.reload(verified)  # the table is checked at import
    try:
        yield
    finally:
        importlib.reload(verified)
    assert verified.MATCHES


@pytest.fixture(params=PATHS)
def read_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """The client's transport chosen each way (the module docstring)."""
    if request.param == "unverified":
        request.getfixturevalue("unverified")
    with accelerations.override(request.param != "plain"):
        yield request.param


def _kinds(transport: httpx2.AsyncBaseTransport) -> set[type]:
    """The classes of the transports that carry the requests."""
    if isinstance(transport, ShardedTransport):
        return {type(transport.make(limits)) for limits in transport.limits}
    return {type(transport)}


def test_the_verified_versions_are_the_installed_ones() -> None:
    # The suite runs on the verified versions: otherwise this run tested the stock path only.
    assert verified.MATCHES
    assert {name: verified.installed(name) for name in verified.VERIFIED} == verified.VERIFIED


def test_the_default_transport_each_way(read_path: str) -> None:
    for http2, tls in [(False, True), (True, False), (True, True)]:
        transport = pooled(http2, True, 1000, tls=tls)
        if read_path == "plain":  # httpx2's own, one pool of the same limits
            assert type(transport) is httpx2.AsyncHTTPTransport
            continue
        kind = BulkTransport if read_path == "accelerated" else httpx2.AsyncHTTPTransport
        assert _kinds(transport) == {kind}
        assert isinstance(transport, ShardedTransport) is (not (http2 and tls))


def test_unverified_versions_leave_every_connection_as_httpcore2_made_it(
    unverified: None,
) -> None:
    assert not verified.MATCHES
    pieces = events(WORDS[:5])

    async def main() -> None:
        async with serving(stream_of(pieces)) as server:
            transport = BulkTransport()  # even asked for by name
            request = httpx2.Request("POST", server.url, content=b"{}")
            response = await transport.handle_async_request(request)
            try:
                connection = response.stream._httpcore_stream._stream._connection  # type: ignore[attr-defined]
                assert "_receive_response_body" not in vars(connection)
                assert install(response) is False
                assert b"".join([part async for part in response.stream]) == b"".join(pieces)
            finally:
                await response.aclose()
                await transport.aclose()

    run(main())


def _config(url: str) -> ClientConfig:
    return ClientConfig(provider="openai", model="m", base_url=url + "/v1", api_key="k")


def test_a_stream_reads_complete_each_way(read_path: str) -> None:
    pieces = events(WORDS)

    async def main() -> None:
        async with serving(stream_of(pieces)) as server:
            async with AsyncProviderClient(_config(server.url)) as client:
                for _ in range(3):
                    turn = await client.stream_turn([User("hi")]).result()
                    assert (turn.outcome, turn.text) == (Outcome.COMPLETE, "".join(WORDS))
            assert server.requests == 3
            if read_path == "accelerated":
                # The bulk read took the last chunk with the proof's: the connection went
                # back to the pool. httpx2's own reader stops at the proof's chunk, and the
                # client closes the response there, so httpcore2 drops that connection.
                assert server.connections == 1

    run(main())


def test_a_broken_chunk_keeps_the_text_before_it_each_way(read_path: str) -> None:
    good = events(WORDS[:3])[:3]  # role, w0, w1: no proof

    def answer(head: bytes) -> bytes:
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in good)
        return HEAD + b"\r\n" + body + b"zz-not-a-chunk-size\r\n\r\n"

    async def main() -> None:
        async with serving(answer) as server, AsyncProviderClient(_config(server.url)) as client:
            turn = await client.stream_turn([User("hi")]).result()
        assert (turn.outcome, turn.text) == (Outcome.PARTIAL, "w0 w1 ")

    run(main())


def test_a_compressed_stream_is_decoded_each_way(read_path: str) -> None:
    data = gzip.compress(b"".join(events(WORDS[:50])))
    pieces = [data[i : i + 97] for i in range(0, len(data), 97)]

    async def main() -> None:
        answer = stream_of(pieces, b"content-encoding: gzip\r\n")
        async with serving(answer) as server, AsyncProviderClient(_config(server.url)) as client:
            turn = await client.stream_turn([User("hi")]).result()
        assert (turn.outcome, turn.text) == (Outcome.COMPLETE, "".join(WORDS[:50]))

    run(main())


def test_concurrent_turns_each_open_a_connection_each_way(read_path: str) -> None:
    pieces = events(WORDS[:10])

    async def main() -> None:
        async with serving(stream_of(pieces)) as server:
            server.gate = asyncio.Event()  # every turn open at once before any answer
            async with AsyncProviderClient(_config(server.url)) as client:

                async def one() -> tuple[Outcome, str]:
                    stream = client.stream_turn([User("hi")])
                    text = [e.text async for e in stream if type(e) is TextDelta]
                    return stream.turn.outcome, "".join(text)

                turns = [asyncio.create_task(one()) for _ in range(60)]
                while server.requests < 60:
                    await asyncio.sleep(0.01)
                server.gate.set()
                done = await asyncio.gather(*turns)
        assert done == [(Outcome.COMPLETE, "".join(WORDS[:10]))] * 60
        assert server.connections == 60  # none queued behind another

    run(main())
