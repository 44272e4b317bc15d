"""Provider fidelity, capture by capture: server-side tools, pause_turn, refusals, what counts
as content, errors beside a finish, and the derivation that is always armed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from conftest import REAL
from railings import Outcome, RejectReason, Termination, replay, to_json
from railings.agent import Agent, RunStatus
from railings.dispatch import ToolRegistry, builtin_tools
from railings.messages import Assistant, User
from railings.providers.anthropic.encoder import anthropic_messages_body
from railings.testing import Script, ScriptedServer
from railings.transport import AsyncProviderClient, ClientConfig
from railings.turn.parts import TextPart, ThinkingPart
from streams import anthropic_event, openai_chunk

SERVER_TOOL_CAPTURES = {
    # capture: (stop reason, number of provider-run calls, their kinds)
    "anthropic/pause_turn_web_search.sse": ("pause_turn", 11, {"server_tool_use"}),
    "anthropic/server_tool_code_execution.sse": ("end_turn", 1, {"server_tool_use"}),
    "anthropic/mcp_tool_use.sse": ("end_turn", 1, {"mcp_tool_use"}),
    "anthropic/web_search_no_ping.sse": ("end_turn", 1, {"server_tool_use"}),
}


@pytest.mark.parametrize("name", sorted(SERVER_TOOL_CAPTURES))
def test_server_side_tools_are_kept_and_never_dispatched(name: str) -> None:
    stop, count, kinds = SERVER_TOOL_CAPTURES[name]
    result = replay((REAL / name).read_bytes())
    turn = result.turn
    assert turn.complete and turn.stop_reason == stop
    assert turn.tool_calls == () and result.verdicts == ()  # nothing gets an execute verdict
    assert len(turn.server_tool_calls) == count
    assert {c.kind for c in turn.server_tool_calls} == kinds
    report = to_json(result)
    assert report["tool_calls"] == []
    assert [c["id"] for c in report["server_tool_calls"]] == [c.id for c in turn.server_tool_calls]
    assert all(c["input"] is not None for c in report["server_tool_calls"])
    # Every provider-run call got its result block, except the one a pause interrupted.
    arrived = [c["result_arrived"] for c in report["server_tool_calls"]]
    assert arrived == [True] * (count - 1) + [stop != "pause_turn"]


@pytest.mark.parametrize("name", sorted(SERVER_TOOL_CAPTURES))
def test_server_blocks_go_back_verbatim_and_in_order(name: str) -> None:
    turn = replay((REAL / name).read_bytes()).turn
    body = anthropic_messages_body("m", [User("q"), Assistant.from_turn(turn)], max_tokens=64)
    blocks = body["messages"][1]["content"]
    kinds = [b["type"] for b in blocks]
    uses = [i for i, k in enumerate(kinds) if k in ("server_tool_use", "mcp_tool_use")]
    assert len(uses) == len(turn.server_tool_calls)
    for i in uses:  # each provider-run call is followed by its own result block...
        if i + 1 < len(blocks):
            assert blocks[i + 1]["tool_use_id"] == blocks[i]["id"]
        else:  # ...except the last one of a paused turn, which the continuation finishes
            assert turn.stop_reason == "pause_turn"
    received = {}
    for line in (REAL / name).read_text().splitlines():
        if line.startswith("data:") and '"content_block_start"' in line:
            block = json.loads(line[5:])["content_block"]
            received[block.get("tool_use_id") or block.get("id")] = block
    for block in blocks:
        if block["type"].endswith("_tool_result"):  # verbatim, as the provider sent it
            assert block == received[block["tool_use_id"]]
    text = "".join(b["text"] for b in blocks if b["type"] == "text")
    assert text == turn.text


def test_pause_turn_is_continued_by_sending_the_conversation_back(tmp_path: Path) -> None:
    script = Script.from_dict(
        {
            "turns": [
                {"text": "Searching, this takes a while.", "stop_reason": "pause_turn"},
                {"text": "Here is what I found."},
            ]
        }
    )
    with ScriptedServer(script) as server:
        config = ClientConfig(
            provider="anthropic",
            model="m",
            base_url=server.anthropic_base_url,
            api_key="sk-ant-test-1234",
        )

        async def main():  # type: ignore[no-untyped-def]
            async with AsyncProviderClient(config) as client:
                return await Agent(client, ToolRegistry(builtin_tools(tmp_path))).arun("find it")

        result = asyncio.run(main())
        second = server.requests[1].body
    assert result.status is RunStatus.COMPLETED
    assert [t.stop_reason for t in result.turns] == ["pause_turn", "end_turn"]
    assert second["messages"][-1]["role"] == "assistant"  # sent back as-is, no new user turn
    assert second["messages"][-1]["content"][0]["text"] == "Searching, this takes a while."


def test_openai_refusal_is_surfaced_and_counts_as_content() -> None:
    body = (REAL / "openai/refusal_deltas.sse").read_bytes()
    turn = replay(body).turn
    assert turn.refusal.startswith("I'm sorry") and turn.text == ""
    assert to_json(replay(body))["refusal"] == turn.refusal
    # Cut right after the first refusal words: content had arrived, so Partial, not Empty.
    cut = body[: body.index(b'"refusal":" sorry"')]
    cut = cut[: cut.rfind(b"\n\n") + 2]
    assert replay(cut).turn.outcome is Outcome.PARTIAL


def test_anthropic_refusal_stop_reason() -> None:
    body = (
        anthropic_event(
            {
                "type": "message_start",
                "message": {
                    "id": "m",
                    "model": "c",
                    "usage": {"input_tokens": 3, "output_tokens": 1},
                },
            }
        )
        + anthropic_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "refusal"},
                "usage": {"output_tokens": 1},
            }
        )
        + anthropic_event({"type": "message_stop"})
    )
    turn = replay(body).turn
    assert turn.complete and turn.stop_reason == "refusal" and not turn.truncated


def test_empty_string_delta_is_not_content() -> None:
    """OpenAI's first chunk {"role": "assistant", "content": ""}: a cut right after it is Empty."""
    turn = replay(openai_chunk({"role": "assistant", "content": "", "refusal": None})).turn
    assert turn.outcome is Outcome.EMPTY and turn.error is not None and turn.error.retryable


def test_error_beside_a_finish_keeps_stop_reason_and_usage() -> None:
    turn = replay((REAL / "openrouter/error_in_chunk_after_length.sse").read_bytes()).turn
    assert turn.termination is Termination.ABRUPT
    assert turn.error is not None and turn.error.kind.value == "provider_error"
    assert turn.stop_reason_wire == "length" and turn.usage is not None
    assert turn.usage.output_tokens == 10


def test_groq_tool_use_failed_is_a_non_retryable_provider_error() -> None:
    turn = replay((REAL / "groq/midstream_error_event_no_done.sse").read_bytes()).turn
    assert turn.error is not None
    assert (turn.error.provider_type, turn.error.retryable) == ("tool_use_failed", False)


def test_derivation_armed_by_max_tokens_on_a_provider_without_finish_reason() -> None:
    body = (REAL / "snowflake/cortex_no_finish_reason.sse").read_bytes()
    plain = replay(body).turn
    assert (plain.stop_reason, plain.stop_reason_source) == ("end_turn", "derived")
    armed = replay(body, max_tokens=5).turn  # the capture billed 5 output tokens
    assert (armed.stop_reason, armed.truncated) == ("max_tokens", True)


def test_anthropic_max_tokens_capture_rejects_the_cut_call() -> None:
    result = replay((REAL / "anthropic/max_tokens_inside_tool_input.sse").read_bytes())
    assert result.verdicts[0].reason is RejectReason.TRUNCATED


# -- thinking blocks, each with its own signature ------------------------------------------


def blocks_stream(blocks: list[dict[str, object]], stop_reason: str = "end_turn") -> bytes:
    """An Anthropic stream of these content blocks: thinking and text streamed as deltas
    (thinking closed by its signature_delta), every other block whole in its start."""
    parts = [
        anthropic_event(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_t",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 9, "output_tokens": 1},
                },
            }
        )
    ]
    for index, block in enumerate(blocks):
        kind = block["type"]
        if kind == "thinking":
            start: dict[str, object] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        elif kind == "text":
            start, deltas = (
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": block["text"]}],
            )
        else:
            start, deltas = block, []
        parts.append(
            anthropic_event({"type": "content_block_start", "index": index, "content_block": start})
        )
        parts += [
            anthropic_event({"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        parts.append(anthropic_event({"type": "content_block_stop", "index": index}))
    parts.append(
        anthropic_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 40},
            }
        )
    )
    parts.append(anthropic_event({"type": "message_stop"}))
    return b"".join(parts)


THINK_A = {"type": "thinking", "thinking": "Search first.", "signature": "SIG-A"}
THINK_B = {"type": "thinking", "thinking": "The result answers it.", "signature": "SIG-B"}
SEARCH = {
    "type": "server_tool_use",
    "id": "srvtoolu_1",
    "name": "web_search",
    "input": {"query": "railings"},
}
FOUND = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}


def sent_back(body: bytes) -> list[dict[str, object]]:
    turn = replay(body).turn
    assert turn.complete
    request = anthropic_messages_body("m", [User("q"), Assistant.from_turn(turn)], max_tokens=64)
    return request["messages"][1]["content"]


def test_interleaved_thinking_blocks_go_back_each_with_its_own_signature() -> None:
    text = {"type": "text", "text": "Here it is."}
    body = blocks_stream([THINK_A, SEARCH, FOUND, THINK_B, text])
    assert sent_back(body) == [THINK_A, SEARCH, FOUND, THINK_B, text]
    turn = replay(body).turn
    assert turn.thinking == "Search first.The result answers it."  # all of it, as before


def test_two_thinking_blocks_before_a_local_call_stay_two() -> None:
    call = {"type": "tool_use", "id": "toolu_9", "name": "list_dir", "input": {"path": "."}}
    body = blocks_stream([THINK_A, THINK_B, call], "tool_use")
    assert sent_back(body) == [THINK_A, THINK_B, call]


def test_one_thinking_block_is_sent_back_as_before() -> None:
    text = {"type": "text", "text": "Done."}
    body = blocks_stream([THINK_A, text])
    parts = replay(body).turn.parts
    assert [type(p) for p in parts] == [ThinkingPart, TextPart]
    assert sent_back(body) == [THINK_A, text]
