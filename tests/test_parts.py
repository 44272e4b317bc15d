"""A turn is an ordered tuple of typed parts; its text, thinking and calls are read from them.

The order is the order each part began on the wire (real captures from tests/corpus);
the derived fields agree with the parts on every capture; parts and events are frozen
and keyword-only; and what goes back in the next request is read from the parts
without a JSON string in between.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from conftest import CORPUS, captures
from railings import replay
from railings.events import TextDelta
from railings.messages import Assistant, ServerBlock
from railings.providers.anthropic.encoder import anthropic_messages_body
from railings.providers.openai_responses.encoder import openai_responses_body
from railings.turn.model import Stop, StopSource, Turn
from railings.turn.parts import (
    Part,
    ProviderItem,
    RedactedThinkingPart,
    RefusalPart,
    ServerToolCall,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCall,
)
from railings.wire.sse import SSEDecoder


def turn_of(path: str, chunk_size: int | None = None) -> Turn:
    return replay((CORPUS / path).read_bytes(), chunk_size=chunk_size).turn


def kinds(turn: Turn) -> list[type[Any]]:
    return [type(part) for part in turn.parts]


ORDER: dict[str, list[type[Any]]] = {
    # Chat: reasoning first, then the call (Groq gpt-oss, DeepSeek).
    "real/groq/tool_call_with_reasoning.sse": [ThinkingPart, ToolCall],
    "real/deepseek/reasoning_content_stream.sse": [ThinkingPart, TextPart],
    "real/openai/refusal_deltas.sse": [RefusalPart],
    # Anthropic: text before a call; thinking, text, a provider-run call, its result, text.
    "real/anthropic/tool_use_input_json_delta.sse": [TextPart, ToolCall],
    "real/anthropic/server_tool_code_execution.sse": [
        ThinkingPart,
        TextPart,
        ServerToolCall,
        ServerToolResultPart,
        TextPart,
    ],
    "real/anthropic/mcp_tool_use.sse": [
        ThinkingPart,
        ServerToolCall,
        ServerToolResultPart,
        TextPart,
    ],
    "real/anthropic/redacted_thinking_blocks.sse": [
        RedactedThinkingPart,
        RedactedThinkingPart,
        TextPart,
    ],
    # Responses: the call as it streamed, then the API's own items (reasoning, the call).
    "responses/swiftagent_function_call_gpt5.sse": [ToolCall, ProviderItem, ProviderItem],
    "responses/pydantic_ai_openrouter_gpt_oss_reasoning_text.sse": [
        ThinkingPart,
        TextPart,
        ProviderItem,
        ProviderItem,
    ],
}


@pytest.mark.parametrize("path", sorted(ORDER))
@pytest.mark.parametrize("chunk_size", [None, 1])
def test_parts_come_in_the_order_they_began(path: str, chunk_size: int | None) -> None:
    assert kinds(turn_of(path, chunk_size)) == ORDER[path]


def test_web_search_pause_interleaves_text_calls_and_results() -> None:
    turn = turn_of("real/anthropic/pause_turn_web_search.sse")
    assert kinds(turn)[:3] == [ThinkingPart, TextPart, ServerToolCall]
    # Every result comes after the provider-run call it answers.
    started: set[str] = set()
    results = 0
    for part in turn.parts:
        if isinstance(part, ServerToolCall):
            started.add(part.id)
        elif isinstance(part, ServerToolResultPart):
            assert part.tool_use_id in started
            results += 1
    assert results == 10 and len(started) == 11  # the last search was paused before its result
    texts = [p for p in turn.parts if isinstance(p, TextPart)]
    assert len(texts) == 3 and turn.stop_reason == Stop.PAUSE_TURN


def test_a_thinking_block_keeps_its_own_signature() -> None:
    turn = turn_of("real/anthropic/thinking_signature_delta.sse")
    (thought,) = [p for p in turn.parts if isinstance(p, ThinkingPart)]
    assert thought.signature and thought.signature == turn.thinking_signature
    assert thought.text == turn.thinking


def test_responses_reasoning_item_keeps_its_encrypted_content() -> None:
    turn = turn_of("responses/swiftagent_function_call_gpt5.sse")
    reasoning, call_item = (p for p in turn.parts if isinstance(p, ProviderItem))
    assert reasoning.type == "reasoning"
    assert str(reasoning.item["encrypted_content"]).startswith("gAAAAA")
    (call,) = turn.tool_calls
    assert call_item.type == "function_call" and call_item.item["call_id"] == call.id
    assert turn.output_items == (reasoning.item, call_item.item)


@pytest.mark.parametrize(("path", "provider"), captures(), ids=lambda v: str(v))
def test_derived_fields_are_read_from_the_parts(path: str, provider: str) -> None:
    turn = replay((CORPUS / path).read_bytes(), provider=provider).turn

    def joined(cls: type[Any], field: str) -> str:
        return "".join(getattr(p, field) for p in turn.parts if isinstance(p, cls))

    assert turn.text == joined(TextPart, "text")
    assert turn.thinking == joined(ThinkingPart, "text")
    assert turn.refusal == joined(RefusalPart, "text")
    assert turn.tool_calls == tuple(p for p in turn.parts if isinstance(p, ToolCall))
    assert [c.index for c in turn.tool_calls] == list(range(len(turn.tool_calls)))
    server = [p for p in turn.parts if isinstance(p, ServerToolCall)]
    assert turn.server_tool_calls == tuple(server)
    # A text part ends at another part: two text parts are never neighbours.
    for before, after in zip(turn.parts, turn.parts[1:], strict=False):
        assert not (type(before) is type(after) and type(before) in (TextPart, RefusalPart))


def test_stop_reason_and_its_source_are_string_enums() -> None:
    turn = turn_of("real/anthropic/thinking_then_tool_use.sse")
    assert turn.stop_reason is Stop.TOOL_USE and turn.stop_reason == "tool_use"
    assert turn.stop_reason_source is StopSource.WIRE and turn.stop_reason_source == "wire"
    assert json.dumps([turn.stop_reason, turn.stop_reason_source]) == '["tool_use", "wire"]'
    derived = replay(b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\ndata: [DONE]\n\n')
    assert derived.turn.stop_reason_source is StopSource.DERIVED
    assert derived.turn.stop_reason is Stop.END_TURN


PARTS: list[Part] = [
    TextPart(text="a"),
    RefusalPart(text="no"),
    ThinkingPart(text="t", signature="s"),
    RedactedThinkingPart(data="d"),
    ServerToolResultPart(tool_use_id="x", type="web_search_tool_result", block={}),
    ProviderItem(item={"type": "reasoning"}),
]


@pytest.mark.parametrize("part", PARTS, ids=lambda p: type(p).__name__)
def test_parts_are_frozen_and_keyword_only(part: Part) -> None:
    field = dataclasses.fields(part)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(part, field, "changed")
    with pytest.raises(TypeError):
        type(part)(getattr(part, field))  # type: ignore[call-arg]


def test_events_and_turn_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        TextDelta("hi")  # type: ignore[misc]
    turn = turn_of("real/openai/content_logprobs.sse")
    with pytest.raises(TypeError):
        Turn(*[getattr(turn, f.name) for f in dataclasses.fields(turn)])  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        turn.parts = ()  # type: ignore[misc]


def test_a_result_block_goes_back_as_the_same_parsed_object() -> None:
    # No JSON string between the layers: the decoder's parsed block is the part's, and the
    # conversation's, and the request body holds it as it came.
    body = (CORPUS / "real/anthropic/mcp_tool_use.sse").read_bytes()
    wire_result = next(
        json.loads(e.data)["content_block"]
        for e in SSEDecoder().feed(body)
        if '"mcp_tool_result"' in e.data and e.event == "content_block_start"
    )
    turn = replay(body).turn
    (result,) = [p for p in turn.parts if isinstance(p, ServerToolResultPart)]
    assert result.block == wire_result
    blocks = Assistant.from_turn(turn).blocks
    (sent,) = [b for b in blocks if isinstance(b, ServerBlock) and b.raw is result.block]
    content = anthropic_messages_body("m", [Assistant.from_turn(turn)], max_tokens=5)["messages"]
    assert wire_result in content[0]["content"]
    assert dict(sent.raw) == wire_result


def test_output_items_go_back_to_the_responses_api_as_they_came() -> None:
    turn = turn_of("responses/swiftagent_function_call_gpt5.sse")
    body = openai_responses_body("m", [Assistant.from_turn(turn)], max_tokens=5)
    assert body["input"] == [dict(item) for item in turn.output_items]
