"""Letting go of a blocking stream stops its reader: within a batch, and the response closed.

A real server on 127.0.0.1 streams far more events than a batch; the client's
transport counts the bytes the reader pulled off the response and sees it
closed. Bounds are in bytes and events, never in seconds (the one wait is a
guard against a hang).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator

import httpx2
import pytest

from _server import CannedServer, Reply, openai_text
from railings.events import TextDelta
from railings.messages import User
from railings.transport import ClientConfig, ClientContext, ProviderClient, RetryBanner
from railings.transport import sync as sync_module

BATCH = 512  # the most events the reader runs ahead of the consumer (sync._AHEAD)
EVENTS = 40_000  # about 80 batches
CHUNKS = openai_text([f"word{n:06d} " for n in range(EVENTS)])  # one event per HTTP chunk
LARGEST = max(map(len, CHUNKS))
READS = 2 * 65536  # what the HTTP layer may hold in flight beyond the events read


class Counting(httpx2.AsyncBaseTransport):
    """A real HTTP transport that counts the body bytes pulled and sees the body closed."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.pulled = 0
        self.closed = threading.Event()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = CountedBody(response.stream, self)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class CountedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, owner: Counting) -> None:
        self.inner, self.owner = inner, owner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.owner.pulled += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        self.owner.closed.set()
        await self.inner.aclose()


@pytest.fixture
def server() -> Iterator[CannedServer]:
    with CannedServer() as running:
        running.push(Reply(chunks=CHUNKS))
        yield running


@pytest.fixture
def transport() -> Counting:
    return Counting()


@pytest.fixture
def client(server: CannedServer, transport: Counting) -> Iterator[ProviderClient]:
    config = ClientConfig(
        provider="openai",
        model="m",
        base_url=server.openai_base_url,
        api_key="sk-sync-close-0001",
        http2=False,
    )
    context = ClientContext(zero_waits=True, banner=RetryBanner())
    with ProviderClient(config, transport=transport, context=context) as running:
        yield running


def within(consumed: int) -> int:
    """The most the reader may have pulled once ``consumed`` events were taken and the
    consumer let go: those, the rest of the batch it held, and one batch read ahead."""
    return (consumed + 2 * BATCH + 2) * LARGEST + READS


def test_a_batch_is_far_less_than_the_stream() -> None:
    assert sync_module._AHEAD <= BATCH
    assert within(5 * BATCH) * 4 < sum(map(len, CHUNKS))


def test_leaving_with_after_a_break_stops_the_reader(
    client: ProviderClient, transport: Counting
) -> None:
    with client.stream_turn([User("go")]) as stream:
        for event in stream:
            if isinstance(event, TextDelta):
                break
    assert transport.closed.is_set()  # close() returned once the response was closed
    assert transport.pulled <= within(2)


def test_closing_after_many_batches_stops_the_reader(
    client: ProviderClient, transport: Counting
) -> None:
    stream = client.stream_turn([User("go")])
    consumed = 0
    for _ in stream:
        consumed += 1
        if consumed == 5 * BATCH:
            break
    stream.close()
    assert transport.closed.is_set()
    assert transport.pulled <= within(consumed)
    assert list(stream) == []  # a closed stream hands out nothing more


def test_a_stream_dropped_after_a_break_stops_its_reader(
    client: ProviderClient, transport: Counting
) -> None:
    for event in client.stream_turn([User("go")]):
        if isinstance(event, TextDelta):
            break  # the stream is dropped here, never closed
    assert transport.closed.wait(30)  # a guard against a hang, not a measure
    assert transport.pulled <= within(2)


def test_the_client_reads_on_after_a_stream_was_let_go(
    client: ProviderClient, server: CannedServer
) -> None:
    with client.stream_turn([User("go")]) as stream:
        next(stream)
    server.push(Reply(chunks=openai_text(["a", "b"])))
    assert client.stream_turn([User("again")]).result().text == "ab"
