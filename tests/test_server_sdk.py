"""Acceptance: the official ``openai`` and ``anthropic`` packages parse the scripted server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from railings.testing import ScriptedServer

SCRIPT = {
    "seed": 11,
    "chunk_size": 5,
    "turns": [
        {
            "text": "I'll check both.",
            "thinking": "Two lookups, in parallel.",
            "tool_calls": [
                {"name": "get_weather", "arguments": {"city": "Edinburgh"}},
                {"name": "get_stock_price", "arguments": {"ticker": "AAPL"}},
            ],
        },
        {"text": "It is 12°C in Edinburgh and AAPL is at 200."},
    ],
}
TOOLS_OPENAI: list[Any] = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("get_weather", "get_stock_price")
]
TOOLS_ANTHROPIC: list[Any] = [
    {"name": n, "input_schema": {"type": "object"}} for n in ("get_weather", "get_stock_price")
]
USER: list[Any] = [{"role": "user", "content": "Weather in Edinburgh, and AAPL?"}]
ARGS = [{"city": "Edinburgh"}, {"ticker": "AAPL"}]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCRIPT) as srv:
        yield srv


@pytest.fixture
def oai(server: ScriptedServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0) as c:
        yield c


@pytest.fixture
def ant(server: ScriptedServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=server.anthropic_base_url, api_key="sk-ant-test", max_retries=0
    ) as c:
        yield c


def test_openai_create_stream(oai: openai.OpenAI) -> None:
    stream = oai.chat.completions.create(
        model="gpt-4o",
        messages=USER,
        tools=TOOLS_OPENAI,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, args, finish, usage = "", ["", ""], None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                args[call.index] += call.function.arguments or "" if call.function else ""
            finish = choice.finish_reason or finish
    assert text == "I'll check both." and finish == "tool_calls"
    assert [json.loads(a) for a in args] == ARGS
    assert usage is not None and usage.completion_tokens > 0


def test_openai_stream_helper(oai: openai.OpenAI) -> None:
    with oai.chat.completions.stream(model="gpt-4o", messages=USER, tools=TOOLS_OPENAI) as s:
        kinds = {event.type for event in s}
        final = s.get_final_completion()
    assert {"content.delta", "tool_calls.function.arguments.done"} <= kinds
    message = final.choices[0].message
    assert message.content == "I'll check both."
    assert [json.loads(c.function.arguments) for c in message.tool_calls or []] == ARGS


def test_openai_non_streamed_and_second_turn(oai: openai.OpenAI) -> None:
    first = oai.chat.completions.create(model="gpt-4o", messages=USER, tools=TOOLS_OPENAI)
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls" and message.tool_calls
    history: list[Any] = [*USER, message.model_dump(exclude_none=True)]
    history += [{"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in message.tool_calls]
    second = oai.chat.completions.create(model="gpt-4o", messages=history)
    assert second.choices[0].message.content == "It is 12°C in Edinburgh and AAPL is at 200."
    assert second.choices[0].finish_reason == "stop"


def test_openai_length_finish(oai: openai.OpenAI) -> None:
    # 8 tokens = 32 characters: 25 of thinking, then "I'll ch". The helper parses the
    # stream and then refuses the cut completion, as it does with the real API.
    with oai.chat.completions.stream(
        model="gpt-4o", messages=USER, max_tokens=8, stream_options={"include_usage": True}
    ) as s:
        for _ in s:
            pass
        with pytest.raises(openai.LengthFinishReasonError) as info:
            s.get_final_completion()
    completion = info.value.completion
    assert completion.choices[0].message.content == "I'll ch"
    assert completion.usage is not None and completion.usage.completion_tokens == 8


def test_openai_sdk_sees_provider_errors(server: ScriptedServer) -> None:
    with (
        ScriptedServer({"turns": [{"text": "x"}], "api_key": "sk-right"}) as srv,
        openai.OpenAI(base_url=srv.openai_base_url, api_key="sk-wrong", max_retries=0) as c,
    ):
        with pytest.raises(openai.AuthenticationError) as info:
            c.chat.completions.create(model="gpt-4o", messages=USER)
        assert info.value.code == "invalid_api_key" and info.value.request_id


def test_anthropic_create_stream(ant: anthropic.Anthropic) -> None:
    types: list[str] = []
    partial = {0: "", 1: "", 2: "", 3: ""}
    stop = None
    for event in ant.messages.create(
        model="claude-sonnet-4", max_tokens=1024, messages=USER, tools=TOOLS_ANTHROPIC, stream=True
    ):
        types.append(event.type)
        if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            partial[event.index] += event.delta.partial_json
        if event.type == "message_delta":
            stop = event.delta.stop_reason
    assert types[0] == "message_start" and types[-1] == "message_stop"
    assert stop == "tool_use"
    assert [json.loads(partial[i]) for i in (2, 3)] == ARGS


def test_anthropic_stream_helper(ant: anthropic.Anthropic) -> None:
    with ant.messages.stream(
        model="claude-sonnet-4", max_tokens=1024, messages=USER, tools=TOOLS_ANTHROPIC
    ) as s:
        final = s.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert [b.input for b in final.content if b.type == "tool_use"] == ARGS
    assert final.stop_reason == "tool_use" and final.usage.output_tokens > 1


def test_anthropic_non_streamed_and_second_turn(ant: anthropic.Anthropic) -> None:
    first = ant.messages.create(
        model="claude-sonnet-4", max_tokens=1024, messages=USER, tools=TOOLS_ANTHROPIC
    )
    assert first.stop_reason == "tool_use"
    history: list[Any] = [*USER, {"role": "assistant", "content": first.content}]
    history.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": b.id, "content": "ok"}
                for b in first.content
                if b.type == "tool_use"
            ],
        }
    )
    second = ant.messages.create(model="claude-sonnet-4", max_tokens=1024, messages=history)
    assert second.content[0].type == "text"
    assert second.content[0].text == "It is 12°C in Edinburgh and AAPL is at 200."


def test_anthropic_max_tokens_cut(ant: anthropic.Anthropic) -> None:
    # 5 tokens = 20 characters: thinking (25) is cut, nothing else starts
    with ant.messages.stream(model="claude-sonnet-4", max_tokens=5, messages=USER) as s:
        final = s.get_final_message()
    assert final.stop_reason == "max_tokens" and final.usage.output_tokens == 5


def test_anthropic_sdk_sees_provider_errors() -> None:
    with (
        ScriptedServer({"turns": [{"text": "x"}], "require_api_key": True}) as srv,
        anthropic.Anthropic(base_url=srv.anthropic_base_url, auth_token="tok", max_retries=0) as c,
    ):
        # a bearer token is a key too; a missing max_tokens is a 400 in Anthropic's shape
        with pytest.raises(anthropic.BadRequestError) as info:
            c.messages.create(model="claude", messages=USER, max_tokens=0)
        assert info.value.status_code == 400 and info.value.request_id
