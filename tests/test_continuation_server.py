"""Continuing a Partial answer against real servers on 127.0.0.1: the scripted model behind
the fault proxy, which cuts the first stream (or the first few) and lets the rest pass.

The scripted server answers a prefill on the Messages wire with only the rest of the turn
(``"prefill": false``: the API's 400 instead), and a user-message continuation with the
same turn again, whole: the model starting over."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from railings.continuation import Continued, continue_turn, continue_turn_sync
from railings.errors import CannotContinue
from railings.events import StreamEvent, TextDelta
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.transport import AsyncProviderClient, ProviderClient, no_waits
from railings.turn.model import Outcome, Turn
from tests.continuing import HISTORY, STORY, config


@pytest.fixture(autouse=True)
def _zero_waits() -> Iterator[None]:
    with no_waits():
        yield


@contextmanager
def _serve(script: dict[str, Any], fault: str) -> Iterator[tuple[ScriptedServer, FaultProxy]]:
    """The scripted model (five characters a delta) behind a proxy with ``fault``."""
    with (
        ScriptedServer(Script.from_dict({"chunk_size": 5, **script})) as server,
        FaultProxy(server.url, fault) as proxy,
    ):
        yield server, proxy


def _shown(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def _cut_then_continue(
    provider: str, script: dict[str, Any], fault: str, **options: Any
) -> tuple[Turn, list[StreamEvent], Continued, list[Any]]:
    """The first answer (cut), the continuation's events and result, and the bodies sent."""
    with _serve(script, fault) as (server, proxy):
        async with AsyncProviderClient(config(provider, proxy.url)) as client:
            partial = await client.stream_turn(HISTORY).result()
            stream = continue_turn(client, HISTORY, partial, **options)
            events = [event async for event in stream]
            continued = stream.continued
        bodies = [r.body for r in server.requests]
    return partial, events, continued, bodies


def test_a_prefill_gets_only_the_rest_and_the_whitespace_it_left_out() -> None:
    partial, events, continued, bodies = asyncio.run(
        _cut_then_continue("anthropic", {"turns": [{"text": STORY}]}, "truncate:events=5,times=1")
    )
    assert partial.outcome is Outcome.PARTIAL and partial.text == "Once upon "
    # The conversation, then the partial text as the assistant's, without its last space.
    asked = bodies[-1]["messages"]
    assert asked[0] == {"role": "user", "content": [{"type": "text", "text": "Tell me a story."}]}
    assert asked[-1] == {"role": "assistant", "content": [{"type": "text", "text": "Once upon"}]}
    assert continued.strategy == "prefill" and not continued.fell_back
    # Only the rest came, with the space the prefill left out; kept once.
    assert (
        continued.attempts[1].text == " a time there was a king who lived in a castle by the sea."
    )
    assert continued.repeated == 1
    assert partial.text + _shown(events) == continued.turn.text == STORY
    assert continued.turn.complete and continued.turn.stop_reason == "end_turn"
    assert continued.attempt_of == (1, 2)


def test_a_user_message_continuation_that_starts_over_keeps_only_the_new_text() -> None:
    partial, events, continued, bodies = asyncio.run(
        _cut_then_continue("openai", {"turns": [{"text": STORY}]}, "truncate:events=4,times=1")
    )
    assert partial.outcome is Outcome.PARTIAL and STORY.startswith(partial.text)
    asked = bodies[-1]["messages"]
    assert [m["role"] for m in asked] == ["system", "user", "user"]  # ends on the user's side
    assert partial.text in asked[-1]["content"]
    # The model wrote the whole answer again; what was shown is only what was new.
    assert continued.strategy == "user"
    assert continued.attempts[1].text == STORY and continued.repeated == len(partial.text)
    assert _shown(events) == STORY[len(partial.text) :]
    assert continued.turn.text == STORY and continued.turn.complete


def test_a_refused_prefill_is_asked_for_again_by_user_message() -> None:
    script = {"prefill": False, "turns": [{"text": STORY}]}
    partial, events, continued, bodies = asyncio.run(
        _cut_then_continue("anthropic", script, "truncate:events=5,times=1")
    )
    # The cut answer, the refused prefill (400, not billed), the user message.
    assert [b["messages"][-1]["role"] for b in bodies] == ["user", "assistant", "user"]
    assert continued.fell_back and continued.strategy == "user"
    assert continued.turn.text == STORY and continued.turn.complete
    assert partial.text + _shown(events) == STORY


def test_a_forced_strategy_is_used_on_any_wire() -> None:
    _, _, continued, bodies = asyncio.run(
        _cut_then_continue(
            "anthropic", {"turns": [{"text": STORY}]}, "truncate:events=5,times=1", strategy="user"
        )
    )
    assert bodies[-1]["messages"][-1]["role"] == "user"
    assert continued.strategy == "user" and continued.turn.text == STORY


def test_a_continuation_cut_too_is_partial_and_continues_again() -> None:
    async def go() -> tuple[Continued, Continued, list[Any]]:
        with _serve({"turns": [{"text": STORY}]}, "truncate:events=5,times=2") as (server, proxy):
            async with AsyncProviderClient(config("anthropic", proxy.url)) as client:
                partial = await client.stream_turn(HISTORY).result()
                once = await continue_turn(client, HISTORY, partial).result()
                twice = await continue_turn(client, HISTORY, once).result()
            bodies = [r.body for r in server.requests]
        return once, twice, bodies

    once, twice, bodies = asyncio.run(go())
    assert once.turn.outcome is Outcome.PARTIAL
    assert once.turn.text == "Once upon a time th"  # two cut streams, joined
    # The second continuation prefilled everything the first two brought.
    assert bodies[-1]["messages"][-1]["content"] == [{"type": "text", "text": once.turn.text}]
    assert twice.turn.text == STORY and twice.turn.complete
    assert len(twice.attempts) == 3 and set(twice.attempt_of) == {1, 2, 3}
    usage = twice.turn.usage
    assert usage is not None and usage.input_tokens == sum(
        a.usage.input_tokens for a in twice.attempts if a.usage and a.usage.input_tokens
    )


@pytest.mark.parametrize(
    ("turn", "fault", "reason"),
    [
        # A complete answer: nothing to continue.
        ({"text": STORY}, "none", "complete"),
        # A tool call cut with its stream: never continued.
        (
            {
                "text": "Let me look.",
                "tool_calls": [{"name": "shell", "arguments": {"cmd": "ls -la /tmp"}}],
            },
            "truncate:events=8",
            "tool_call",
        ),
        # A tool call the output limit cut (max_tokens 50), in a complete turn.
        (
            {"tool_calls": [{"name": "shell", "arguments": {"cmd": "x" * 400}}]},
            "none",
            "complete",
        ),
        # Reasoning only, cut before any text.
        (
            {"thinking": "Let me think about kings for a while.", "text": STORY},
            "truncate:events=4",
            "no_text",
        ),
    ],
)
def test_what_is_not_a_partial_text_answer_is_refused_before_any_request(
    turn: dict[str, Any], fault: str, reason: str
) -> None:
    async def go() -> tuple[Turn, int, int]:
        with _serve({"turns": [turn]}, fault) as (server, proxy):
            async with AsyncProviderClient(config("anthropic", proxy.url, 50)) as client:
                answer = await client.stream_turn(HISTORY).result()
                before = len(server.requests)
                with pytest.raises(CannotContinue) as info:
                    continue_turn(client, HISTORY, answer)
                assert info.value.reason == reason
                return answer, before, len(server.requests)

    answer, before, after = asyncio.run(go())
    assert before == after == 1
    if reason == "tool_call":
        assert answer.outcome is Outcome.PARTIAL and answer.tool_calls


def test_the_blocking_client_continues_the_same_way() -> None:
    with (
        _serve({"turns": [{"text": STORY}]}, "truncate:events=4,times=1") as (_, proxy),
        ProviderClient(config("openai", proxy.url)) as client,
    ):
        partial = client.stream_turn(HISTORY).result()
        stream = continue_turn_sync(client, HISTORY, partial)
        shown = _shown(list(stream))
        continued = stream.continued
    assert partial.text + shown == continued.turn.text == STORY
    assert continued.strategy == "user" and stream.attempts == 1


def test_the_blocking_client_falls_back_from_a_refused_prefill_too() -> None:
    script = {"prefill": False, "turns": [{"text": STORY}]}
    with (
        _serve(script, "truncate:events=5,times=1") as (server, proxy),
        ProviderClient(config("anthropic", proxy.url)) as client,
    ):
        partial = client.stream_turn(HISTORY).result()
        continued = continue_turn_sync(client, HISTORY, partial).result()
        statuses = [r.status for r in server.requests]
    assert statuses == [200, 400, 200]
    assert continued.fell_back and continued.turn.text == STORY
