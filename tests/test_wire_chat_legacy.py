"""The Chat Completions wire's legacy call shape: ``function_call`` (``functions=``).

A request with ``functions=`` (the Chat API's first tool interface, still served by
OpenAI, Azure and the OpenAI-compatible servers) gets its one call as
``delta.function_call`` (streamed: ``{"name"}`` then ``{"arguments"}`` fragments) or
``message.function_call`` (a JSON answer), with ``finish_reason: "function_call"``,
or ``"length"`` when the output limit cut it. It is read as a tool call like any
other: position 0, no id, its arguments parsed strictly. Each stream runs whole, byte
by byte and with trailing data after the proof.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from _server import CannedServer, Reply, openai_text
from railings import RejectReason, Termination, inspect, replay
from railings.agent import Agent
from railings.conversation import Assistant, ToolResult, User
from railings.dispatch import ToolRegistry, builtin_tools
from railings.events import StopReason, ToolArgumentsDelta, ToolCallEnd, ToolCallStart, Unknown
from railings.providers.openai_chat.encoder import openai_chat_body
from railings.replay import Replay, to_json
from railings.transport import AsyncProviderClient, ClientConfig, Timeouts, set_testing
from railings.turn.reader import provider_decoder
from railings.wire.sse import SSEDecoder
from streams import openai_chunk, sse

CUT = '{"command": "rm -rf /tmp/leg'
WHOLE = '{"command": "ls"}'
DONE = b"data: [DONE]\n\n"
USAGE = sse({"id": "chatcmpl-1", "model": "m", "choices": [], "usage": {"completion_tokens": 9}})


def legacy_stream(fragments: list[str], finish: str) -> bytes:
    """A ``functions=`` stream: the call's name, then its arguments in fragments."""
    parts = [
        openai_chunk({"role": "assistant", "content": None}),
        openai_chunk({"function_call": {"name": "shell", "arguments": ""}}),
    ]
    parts += [openai_chunk({"function_call": {"arguments": f}}) for f in fragments]
    return b"".join([*parts, openai_chunk({}, finish), USAGE, DONE])


def three_ways(body: bytes) -> list[Replay]:
    """The replay whole, byte by byte, and with a whole second stream after the proof."""
    return [
        replay(body),
        replay(body, chunk_size=1),
        replay(body + legacy_stream(["garbage"], "stop") + b"data: {not json\n\n"),
    ]


def split(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_the_decoder_reads_a_legacy_call_as_a_call_at_position_zero_without_id() -> None:
    decoder = provider_decoder("openai")
    events = []
    for event in SSEDecoder().feed(legacy_stream(['{"command": ', '"ls"}'], "function_call")):
        events.extend(decoder.feed(event))
    calls = [e for e in events if isinstance(e, ToolCallStart | ToolArgumentsDelta | ToolCallEnd)]
    assert calls == [
        ToolCallStart(index=0, id="", name="shell"),
        ToolArgumentsDelta(index=0, fragment='{"command": ', parsed=False),
        ToolArgumentsDelta(index=0, fragment='"ls"}', parsed=False),
        ToolCallEnd(index=0),
    ]
    assert StopReason(wire="function_call") in events
    assert not [e for e in events if isinstance(e, Unknown)]


def test_a_complete_legacy_call_is_a_tool_use_that_executes() -> None:
    for result in three_ways(legacy_stream(split(WHOLE), "function_call")):
        turn = result.turn
        assert turn.termination is Termination.CLEAN and turn.complete
        assert (turn.stop_reason, turn.stop_reason_wire) == ("tool_use", "function_call")
        assert not turn.truncated and turn.unknown_events == 0
        (verdict,) = result.verdicts
        assert (verdict.call.id, verdict.call.name) == ("", "shell")
        assert verdict.execute and not verdict.repaired
        assert verdict.arguments == {"command": "ls"}


def test_a_cut_legacy_call_is_rejected_as_truncated() -> None:
    for result in three_ways(legacy_stream(split(CUT), "length")):
        assert result.turn.truncated and result.turn.stop_reason == "max_tokens"
        (verdict,) = result.verdicts
        assert verdict.call.raw_arguments == CUT
        assert not verdict.execute and verdict.reason is RejectReason.TRUNCATED
        (call,) = to_json(result)["tool_calls"]
        assert (call["verdict"], call["reason"], call["arguments"]) == ("reject", "truncated", None)


def test_a_legacy_call_whose_arguments_arrive_as_an_object_proves_nothing() -> None:
    body = b"".join(
        [
            openai_chunk({"function_call": {"name": "shell", "arguments": {"command": "rm"}}}),
            openai_chunk({}, "length"),
            DONE,
        ]
    )
    (verdict,) = replay(body).verdicts
    assert not verdict.execute and verdict.reason is RejectReason.TRUNCATED


def test_an_unknown_field_of_a_legacy_call_is_counted() -> None:
    call = {"name": "shell", "arguments": WHOLE, "brand_new": 1}
    body = openai_chunk({"function_call": call}) + openai_chunk({}, "function_call") + DONE
    result = replay(body)
    assert result.turn.unknown_events == 1
    assert result.verdicts[0].execute


@pytest.mark.parametrize("value", ["shell", ["shell"], 7])
def test_a_legacy_call_that_is_not_an_object_is_unknown_not_a_call(value: Any) -> None:
    body = openai_chunk({"function_call": value}) + openai_chunk({}, "stop") + DONE
    result = replay(body)
    assert result.turn.unknown_events == 1 and not result.verdicts


# -- a JSON answer (inspect) -------------------------------------------------------------------


def completion(function_call: dict[str, Any], finish: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "function_call": function_call}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 10, "total_tokens": 15},
    }


def test_inspect_refuses_a_cut_legacy_call_in_a_chat_completion() -> None:
    result = inspect(completion({"name": "shell", "arguments": CUT}, "length"), max_tokens=10)
    assert result.turn.truncated
    (verdict,) = result.verdicts
    assert (verdict.call.id, verdict.call.name, verdict.call.raw_arguments) == ("", "shell", CUT)
    assert not verdict.execute and verdict.reason is RejectReason.TRUNCATED


def test_inspect_runs_a_complete_legacy_call_in_a_chat_completion() -> None:
    result = inspect(completion({"name": "shell", "arguments": WHOLE}, "function_call"))
    assert result.turn.stop_reason == "tool_use"
    (verdict,) = result.verdicts
    assert verdict.execute and verdict.arguments == {"command": "ls"}


# -- the next request -----------------------------------------------------------------------


def test_the_next_request_answers_a_legacy_call_in_the_legacy_shape() -> None:
    # A call without id cannot be answered by ``tool_call_id``: the legacy reply to a
    # ``function_call`` is a ``role: function`` message naming the function.
    turn = replay(legacy_stream([WHOLE], "function_call")).turn
    history = [User("list"), Assistant.from_turn(turn), ToolResult(call_id="", content="a b")]
    messages = openai_chat_body("m", history, max_tokens=10)["messages"]
    assert messages[1:] == [
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "shell", "arguments": WHOLE},
        },
        {"role": "function", "name": "shell", "content": "a b"},
    ]
    json.dumps(messages)


def test_an_empty_legacy_fragment_begins_no_call() -> None:
    body = openai_chunk({"content": "hi", "function_call": {}}) + openai_chunk({}, "stop") + DONE
    result = replay(body)
    assert result.turn.text == "hi" and not result.verdicts
    assert result.turn.unknown_events == 0


# -- end to end: the Agent and the built-in shell against a server on 127.0.0.1 -------------


def run_agent(server: CannedServer, workdir: Path) -> None:
    set_testing(True)
    config = ClientConfig(
        provider="openai",
        model="m",
        max_tokens=64,
        base_url=server.openai_base_url,
        api_key="sk-test",
        timeouts=Timeouts(connect=2.0, first_byte=5.0, idle=2.0),
    )

    async def go() -> None:
        async with AsyncProviderClient(config) as client:
            agent = Agent(
                client,
                ToolRegistry(builtin_tools(workdir)),
                approve=lambda invocation: True,  # every command allowed: only the gate stops it
                journal=None,
            )
            await agent.arun("make the file")

    try:
        asyncio.run(go())
    finally:
        set_testing(False)


@pytest.mark.parametrize(
    ("arguments", "finish", "ran"),
    [
        ('{"command": "touch RAN"}', "function_call", True),
        ('{"command": "touch RAN', "length", False),
    ],
    ids=["whole", "cut"],
)
def test_the_agent_runs_a_whole_legacy_call_never_a_cut_one_and_answers_it(
    tmp_path: Path, arguments: str, finish: str, ran: bool
) -> None:
    with CannedServer() as server:
        server.push(
            Reply(chunks=[legacy_stream(split(arguments), finish)]),
            Reply(chunks=openai_text(["Done."])),
        )
        run_agent(server, tmp_path)
        sent = server.requests[1].json()["messages"]
    assert (tmp_path / "RAN").exists() is ran
    assistant, answer = sent[-2:]
    assert assistant["function_call"] == {"name": "shell", "arguments": arguments}
    assert (answer["role"], answer["name"]) == ("function", "shell")
    assert ("was NOT executed" in answer["content"]) is not ran
