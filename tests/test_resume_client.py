"""Resuming a kept response through the client, against the scripted server on loopback.

The server keeps a ``background: true`` response and ends a stream after event K when a
request carries ``x-railings-cut-after: K``; the transport below adds that header to the
requests a test names (the POST, then each GET that resumes), so the cut lands where the
test says and the client must read the same response again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import httpx2
import pytest

from railings.errors import BadRequest, ConfigurationError, ResumeFailed
from railings.events import MessageStart, StreamEvent
from railings.messages import User
from railings.testing import Script, ScriptedServer
from railings.transport import (
    AsyncProviderClient,
    ClientConfig,
    ClientContext,
    ProviderClient,
    RetryPolicy,
)
from railings.turn.attempt import Attempt
from railings.turn.ending import Complete
from railings.turn.model import Outcome, Turn

SCRIPT: dict[str, Any] = {
    "seed": 5,
    "chunk_size": 4,
    "turns": [
        {
            "thinking": "Short plan.",
            "text": "Kept responses come back whole, once.",
            "tool_calls": [{"name": "lookup", "arguments": {"q": "resume"}}],
        }
    ],
}


class Directed(httpx2.AsyncBaseTransport):
    """httpx2's transport, adding the cut header the test asks for to its n-th request,
    and letting a test rewrite a request first (``rewrite``)."""

    def __init__(
        self,
        cuts: dict[int, int],
        rewrite: Callable[[httpx2.Request], httpx2.Request] | None = None,
    ) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._cuts = cuts
        self._rewrite = rewrite
        self.sent: list[tuple[str, str]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        n = len(self.sent)
        self.sent.append((request.method, request.url.path))
        if n in self._cuts:
            request.headers["x-railings-cut-after"] = str(self._cuts[n])
        if self._rewrite is not None:
            request = self._rewrite(request)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(Script.from_dict(SCRIPT)) as running:
        yield running


def config(server: ScriptedServer, **options: Any) -> ClientConfig:
    return ClientConfig(
        provider="openai-responses",
        model="m",
        base_url=server.openai_base_url,
        api_key="sk-test-key-0001",
        retry=RetryPolicy(attempts=options.pop("attempts", 4)),
        **options,
    )


async def stream(
    server: ScriptedServer, transport: httpx2.AsyncBaseTransport, **options: Any
) -> tuple[Turn, list[StreamEvent]]:
    context = ClientContext(zero_waits=True)
    async with AsyncProviderClient(
        config(server, **options), transport=transport, context=context
    ) as client:
        turn_stream = client.stream_turn([User("Hi")])
        events = [event async for event in turn_stream]
        return turn_stream.turn, events


def uncut(server: ScriptedServer) -> tuple[Turn, list[StreamEvent]]:
    turn, events = asyncio.run(stream(server, Directed({}), resume=True))
    assert turn.outcome is Outcome.COMPLETE and server.generations == 1
    server.clear()
    return turn, events


def kept(server: ScriptedServer, response_id: str) -> tuple[Turn, list[StreamEvent]]:
    """The kept response streamed whole from its first event, as one uncut stream reads."""
    url = f"{server.openai_base_url}/responses/{response_id}?stream=true"
    body = httpx2.get(url, headers={"authorization": "Bearer sk-test-key-0001"}).content
    attempt = Attempt("openai-responses", max_tokens=4096)
    events = attempt.feed(body, 0.0).events
    ended = attempt.close()
    assert isinstance(ended, Complete)
    return ended.turn, events + attempt.held()


def test_a_stream_cut_at_every_event_resumes_to_the_uncut_turn(server: ScriptedServer) -> None:
    _, whole_events = uncut(server)
    total = len(whole_events)
    assert total > 10
    generated = server.generations
    cut = 0
    while True:
        transport = Directed({0: cut})
        turn, events = asyncio.run(stream(server, transport, resume=True))
        if transport.sent == [("POST", "/v1/responses")]:
            break  # the cut was past the last event: nothing to resume
        assert turn.complete, cut
        assert turn.resumed == (cut,)
        same, same_events = kept(server, turn.message_id)
        assert turn == replace(same, resumed=(cut,)), cut
        assert events == same_events and len(events) == len(whole_events), cut
        assert transport.sent[1][0] == "GET", cut
        assert server.generations == generated + 1, cut  # one generation per turn
        generated = server.generations
        cut += 1
    assert cut > 10


def test_a_stream_resumed_twice_records_both_points(server: ScriptedServer) -> None:
    transport = Directed({0: 3, 1: 9})
    turn, events = asyncio.run(stream(server, transport, resume=True))
    assert turn.complete and turn.resumed == (3, 9)
    same, same_events = kept(server, turn.message_id)
    assert turn == replace(same, resumed=(3, 9)) and events == same_events
    assert [method for method, _ in transport.sent] == ["POST", "GET", "GET"]
    assert server.generations == 1


def test_resuming_is_bounded_by_the_attempts_and_the_turn_stays_partial(
    server: ScriptedServer,
) -> None:
    transport = Directed({0: 6, 1: 7, 2: 8})
    turn, _ = asyncio.run(stream(server, transport, resume=True, attempts=3))
    assert turn.outcome is Outcome.PARTIAL and turn.resumed == (6, 7)
    assert len(transport.sent) == 3 and server.generations == 1


def test_a_refused_resume_leaves_the_turn_partial_with_a_typed_error(
    server: ScriptedServer,
) -> None:
    def unknown(request: httpx2.Request) -> httpx2.Request:
        if request.method != "GET":
            return request
        url = request.url.copy_with(path="/v1/responses/resp_unknown")
        return httpx2.Request("GET", url, headers=request.headers)

    async def run() -> None:
        context = ClientContext(zero_waits=True)
        transport = Directed({0: 8}, rewrite=unknown)
        async with AsyncProviderClient(
            config(server, resume=True), transport=transport, context=context
        ) as client:
            turn_stream = client.stream_turn([User("Hi")])
            turn = await turn_stream.result()
            assert turn.outcome is Outcome.PARTIAL
            failed = turn_stream.interruption
            assert isinstance(failed, ResumeFailed) and failed.after == 8
            assert isinstance(failed.__cause__, BadRequest) and failed.__cause__.status == 404
            assert [method for method, _ in transport.sent] == ["POST", "GET"]

    asyncio.run(run())
    assert server.generations == 1


def test_an_empty_attempt_is_resumed_not_generated_again(server: ScriptedServer) -> None:
    transport = Directed({0: 0})  # only response.created arrives
    turn, _ = asyncio.run(stream(server, transport, resume=True))
    assert turn.complete and turn.resumed == (0,)
    assert turn == replace(kept(server, turn.message_id)[0], resumed=(0,))
    assert server.generations == 1


def test_without_resume_a_cut_background_stream_stays_partial(server: ScriptedServer) -> None:
    transport = Directed({0: 8})
    turn, _ = asyncio.run(stream(server, transport, extra_body={"background": False}))
    assert turn.outcome is Outcome.PARTIAL and turn.resumed == ()
    assert len(transport.sent) == 1


def test_extra_body_background_is_resumed_too(server: ScriptedServer) -> None:
    transport = Directed({0: 8})
    turn, _ = asyncio.run(stream(server, transport, extra_body={"background": True, "store": True}))
    assert turn.complete and turn.resumed == (8,)


def test_abandoning_a_kept_turn_cancels_its_response(server: ScriptedServer) -> None:
    seen: list[StreamEvent] = []

    async def run() -> None:
        context = ClientContext(zero_waits=True)
        async with AsyncProviderClient(
            config(server, resume=True), transport=Directed({}), context=context
        ) as client:
            turn_stream = client.stream_turn([User("Hi")])
            async for event in turn_stream:
                seen.append(event)
                if len(seen) == 3:
                    break
            await turn_stream.aclose()

    asyncio.run(run())
    first = seen[0]
    assert isinstance(first, MessageStart) and first.id.startswith("resp_")
    posted = [(r.method, r.path) for r in server.requests]
    assert posted == [("POST", "/v1/responses"), ("POST", f"/v1/responses/{first.id}/cancel")]


def test_resume_needs_a_wire_that_keeps_responses() -> None:
    with pytest.raises(ConfigurationError, match="keeps no response"):
        ClientConfig(provider="openai", model="m", api_key="k", resume=True)


def test_the_blocking_client_resumes_per_turn(server: ScriptedServer) -> None:
    transport = Directed({0: 5})
    with ProviderClient(
        config(server), transport=transport, context=ClientContext(zero_waits=True)
    ) as client:
        stream = client.stream_turn([User("Hi")], resume=True)
        turn = stream.result()
    assert turn.complete and turn.resumed == (5,)
    assert [method for method, _ in transport.sent] == ["POST", "GET"]
