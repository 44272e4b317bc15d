"""The blocking facade hands events over in batches, in order, errors after the events.

Over ``httpx2.MockTransport``: no socket. Hops between the caller's thread and
the client's loop are counted (calls, not seconds).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import httpx2
import pytest

from _server import openai_text
from railings.errors import StreamInterrupted
from railings.events import TextDelta
from railings.messages import User
from railings.transport import ClientConfig, ClientContext, ProviderClient, RetryBanner
from railings.transport import sync as sync_module
from railings.turn.model import Outcome

WORDS = [f"w{n} " for n in range(300)]


class Counted(httpx2.AsyncByteStream):
    """The body's chunks, counting how many were pulled."""

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self.chunks, self.pulled = list(chunks), 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.pulled += 1
            yield chunk


def client_for(*bodies: Counted, **overrides: object) -> ProviderClient:
    queue = list(bodies)

    def handle(request: httpx2.Request) -> httpx2.Response:
        headers = {"content-type": "text/event-stream"}
        return httpx2.Response(200, headers=headers, stream=queue.pop(0))

    fields: dict[str, object] = {
        "provider": "openai",
        "model": "m",
        "base_url": "http://api.example.test/v1",
        "api_key": "sk-sync-facade-0001",
    }
    config = ClientConfig(**(fields | overrides))  # type: ignore[arg-type]
    context = ClientContext(zero_waits=True, banner=RetryBanner())
    return ProviderClient(config, transport=httpx2.MockTransport(handle), context=context)


def test_events_cross_in_batches_not_one_per_hop(monkeypatch: pytest.MonkeyPatch) -> None:
    body = Counted([b"".join(openai_text(WORDS))])  # one chunk: every event at once
    with client_for(body) as client:
        hops = 0
        real = client._runner.run

        def counted(coro):  # type: ignore[no-untyped-def]
            nonlocal hops
            hops += 1
            return real(coro)

        monkeypatch.setattr(client._runner, "run", counted)
        stream = client.stream_turn([User("hi")])
        events = list(stream)
        reading = hops
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts == WORDS and stream.turn.outcome is Outcome.COMPLETE
    # The events of one chunk arrive together: one hop for them, one for the end.
    assert len(events) > 300 and reading == 2


def test_the_order_and_the_turn_are_the_async_clients() -> None:
    chunks = openai_text(WORDS)  # one event per chunk
    with client_for(Counted(chunks)) as client:
        stream = client.stream_turn([User("hi")])
        texts = [e.text for e in stream if isinstance(e, TextDelta)]
        assert texts == WORDS and stream.turn.text == "".join(WORDS)
        assert stream.done and stream.attempts == 1


def test_an_error_comes_after_the_events_before_it() -> None:
    cut = Counted(openai_text(["a", "b", "c"], finish=None, done=False))
    with client_for(cut, raise_on_partial=True) as client:
        stream = client.stream_turn([User("hi")])
        seen: list[str] = []
        with pytest.raises(StreamInterrupted) as raised:
            for event in stream:
                if isinstance(event, TextDelta):
                    seen.append(event.text)
    assert seen == ["a", "b", "c"] and not raised.value.empty
    assert stream.turn.outcome is Outcome.PARTIAL  # the turn is still there


def test_the_pump_stops_reading_while_its_events_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sync_module, "_AHEAD", 8)
    body = Counted(openai_text(WORDS))  # one event per chunk
    with client_for(body) as client:
        stream = client.stream_turn([User("hi")])
        next(stream)
        handed = len(stream._batch)
        # Whatever the threads' timing: at most 8 events collected beyond what was handed
        # over, plus the chunk being read.
        assert body.pulled <= handed + 8 + 1
        stream.close()
    assert body.pulled < len(body.chunks)


def test_a_stream_left_unread_is_stopped_when_the_client_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sync_module, "_AHEAD", 8)
    body = Counted(openai_text(WORDS))
    client = client_for(body)
    stream = client.stream_turn([User("hi")])
    next(stream)
    client.close()  # cancels the pump; warnings are errors, so nothing may leak
    assert not stream.done


def test_result_without_iterating_and_after_some_events() -> None:
    with client_for(Counted(openai_text(WORDS)), Counted(openai_text(WORDS))) as client:
        assert client.stream_turn([User("hi")]).result().text == "".join(WORDS)
        stream = client.stream_turn([User("again")])
        next(stream)
        assert stream.result().text == "".join(WORDS)
