"""A call whose completeness cannot be proven from raw text never runs in a truncated turn,
and an output-limit stop anywhere in a turn marks it truncated (sticky truncation).

The end-to-end cases run the real :class:`~railings.agent.Agent` with the built-in ``shell``
tool against a server on 127.0.0.1 that sends the bytes an OpenAI-compatible server sends
when it parses arguments itself: ``function.arguments`` as an object.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from _server import DONE, CannedServer, Reply, openai_chunk, openai_text
from railings import RejectReason, inspect, replay, to_json
from railings.agent import Agent
from railings.dispatch import ToolRegistry, builtin_tools
from railings.transport import AsyncProviderClient, ClientConfig, Timeouts, set_testing
from railings.turn.verdict import TRUNCATION_NOTICE, TRUNCATION_UNPROVEN_NOTICE

FAST = Timeouts(connect=2.0, first_byte=5.0, idle=2.0)


def call_chunk(arguments: Any, *, index: int = 0, ident: str = "call_1") -> bytes:
    function = {"name": "shell", "arguments": arguments}
    return openai_chunk({"tool_calls": [{"index": index, "id": ident, "type": "function",
                                         "function": function}]})  # fmt: skip


def chat_stream(*calls: bytes, finishes: tuple[str, ...] = ("length",)) -> bytes:
    body = openai_chunk({"role": "assistant", "content": ""}) + b"".join(calls)
    for finish in finishes:
        body += openai_chunk({}, finish)
    return body + DONE


# -- the core rule, replayed -----------------------------------------------------------------


def test_object_arguments_in_a_length_turn_are_rejected_as_truncated() -> None:
    body = chat_stream(call_chunk({"command": "touch CUT_CALL_RAN"}))
    result = replay(body)
    assert result.turn.truncated
    (verdict,) = result.verdicts
    call = verdict.call
    assert call.origin == "parsed" and call.arguments == {"command": "touch CUT_CALL_RAN"}
    assert not verdict.execute and verdict.reason is RejectReason.TRUNCATED
    assert verdict.notice == TRUNCATION_UNPROVEN_NOTICE.format(
        name="shell", id="call_1", stop_reason="max_tokens"
    )
    assert to_json(result)["tool_calls"][0]["origin"] == "parsed"
    assert to_json(replay(body, chunk_size=1)) == to_json(result)


def test_every_unproven_call_is_rejected_not_only_the_last() -> None:
    body = chat_stream(
        call_chunk({"command": "ls"}, index=0, ident="call_a"),
        call_chunk('{"command": "pwd"}', index=1, ident="call_b"),  # raw text: proven
        call_chunk({"command": "rm -rf /tmp/leg"}, index=2, ident="call_c"),
    )
    verdicts = replay(body).verdicts
    assert [(v.call.id, v.call.origin, v.execute) for v in verdicts] == [
        ("call_a", "parsed", False),
        ("call_b", "raw", True),
        ("call_c", "parsed", False),
    ]
    assert verdicts[1].notice is None


def test_object_arguments_in_a_finished_turn_still_run() -> None:
    verdict = replay(chat_stream(call_chunk({"command": "ls"}), finishes=("tool_calls",)))
    (only,) = verdict.verdicts
    assert only.execute and only.arguments == {"command": "ls"} and only.call.origin == "parsed"


def test_inspect_marks_object_arguments_of_a_chat_completion() -> None:
    completion = {
        "id": "c",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "length",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "a", "type": "function",
                         "function": {"name": "shell", "arguments": {"command": "ls"}}},
                        {"id": "b", "type": "function",
                         "function": {"name": "shell", "arguments": '{"command": "pwd"}'}},
                    ],
                },
            }
        ],
    }  # fmt: skip
    verdicts = inspect(completion).verdicts
    assert [(v.call.origin, v.execute) for v in verdicts] == [("parsed", False), ("raw", True)]


# -- sticky truncation --------------------------------------------------------------------


@pytest.mark.parametrize("later", ["stop", "tool_calls"])
def test_length_then_another_finish_reason_is_still_truncated(later: str) -> None:
    body = chat_stream(call_chunk('{"path": "READ'), finishes=("length", later))
    result = replay(body)
    turn = result.turn
    assert turn.truncated and turn.stop_reason == "max_tokens"
    assert turn.stop_reason_wire == "length"
    (verdict,) = result.verdicts
    assert verdict.reason is RejectReason.TRUNCATED and not verdict.repaired
    assert verdict.notice == TRUNCATION_NOTICE.format(
        name="shell", id="call_1", stop_reason="max_tokens"
    )
    assert to_json(replay(body, chunk_size=3)) == to_json(result)


def test_anthropic_max_tokens_then_end_turn_is_still_truncated() -> None:
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
            "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "t1", "name": "shell", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": '{"command": "rm -rf /tmp/leg'}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
                           "usage": {"output_tokens": 9}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    body = b"".join(f"event: {e}\ndata: {json.dumps(d)}\n\n".encode() for e, d in events)
    result = replay(body)
    assert result.turn.truncated and result.turn.stop_reason == "max_tokens"
    assert [v.reason for v in result.verdicts] == [RejectReason.TRUNCATED]


# -- end to end: the Agent and the built-in shell against a server on 127.0.0.1 -------------


def run_agent(server: CannedServer, workdir: Path) -> Any:
    set_testing(True)
    config = ClientConfig(
        provider="openai",
        model="m",
        max_tokens=64,
        base_url=server.openai_base_url,
        api_key="sk-test",
        timeouts=FAST,
    )

    async def go() -> Any:
        async with AsyncProviderClient(config) as client:
            agent = Agent(
                client,
                ToolRegistry(builtin_tools(workdir)),
                approve=lambda invocation: True,  # every command allowed: only the gate stops it
                journal=None,
            )
            return await agent.arun("make the file"), agent

    try:
        return asyncio.run(go())
    finally:
        set_testing(False)


@pytest.mark.parametrize("finishes", [("length",), ("length", "stop")], ids=["length", "sticky"])
def test_the_agent_never_runs_a_shell_call_whose_object_arguments_a_cut_turn_carried(
    tmp_path: Path, finishes: tuple[str, ...]
) -> None:
    cut = chat_stream(call_chunk({"command": "touch CUT_CALL_RAN"}), finishes=finishes)
    with CannedServer() as server:
        server.push(Reply(chunks=[cut]), Reply(chunks=openai_text(["I", " will", " resend."])))
        result, _ = run_agent(server, tmp_path)
        assert not (tmp_path / "CUT_CALL_RAN").exists()
        assert len(server.requests) == 2
        sent = server.requests[1].json()["messages"]
    (notice,) = [m for m in sent if m["role"] == "tool"]
    assert notice["tool_call_id"] == "call_1"
    assert notice["content"] == TRUNCATION_UNPROVEN_NOTICE.format(
        name="shell", id="call_1", stop_reason="max_tokens"
    )
    assert result.text == "I will resend."


def test_the_agent_runs_the_same_call_in_a_finished_turn(tmp_path: Path) -> None:
    whole = chat_stream(call_chunk({"command": "touch RAN"}), finishes=("tool_calls",))
    with CannedServer() as server:
        server.push(Reply(chunks=[whole]), Reply(chunks=openai_text(["Done."])))
        run_agent(server, tmp_path)
    assert (tmp_path / "RAN").exists()  # the gate is what stopped the cut one, not the setup


# -- the new notices, verbatim (the model reads them) -------------------------------------


def test_the_unproven_truncation_notice_verbatim() -> None:
    (verdict,) = replay(chat_stream(call_chunk({"command": "ls"}))).verdicts
    assert verdict.notice == (
        "Tool call 'shell' (id call_1) was NOT executed: the response stopped at the output "
        "limit (stop_reason: max_tokens), and this call's arguments arrived in a form whose "
        "completeness cannot be checked, so it may have been cut. "
        "Resend this tool call in full, with complete arguments. "
        "If the arguments are long, shorten them or split the work into several smaller "
        "calls so that each call fits within the output limit."
    )


def test_the_incomplete_input_notice_verbatim() -> None:
    item = {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_x", "name": "sql"}
    events = [
        {"type": "response.created", "response": {"id": "r", "model": "m"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1",
         "output_index": 0, "delta": "SELECT"},
        {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
    ]  # fmt: skip
    body = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
    (verdict,) = replay(body).verdicts  # the item never closed: its input is not whole
    assert verdict.reason is RejectReason.MALFORMED
    assert verdict.notice == (
        "Tool call 'sql' (id call_x) was NOT executed: its input did not arrive complete. "
        "Resend this tool call in full."
    )


def test_the_mcp_denied_notice_verbatim() -> None:
    from railings.dispatch.notices import MCP_DENIED_NOTICE

    assert MCP_DENIED_NOTICE.format(name="create_short_url", id="mcpr_1") == (
        "The MCP call 'create_short_url' (approval request mcpr_1) was NOT approved: the client "
        "did not allow it. Do not retry it unless the user asks for it."
    )


def test_a_natural_stop_beside_tool_calls_is_tool_use_never_end_turn() -> None:
    turn = replay(chat_stream(call_chunk('{"command": "ls"}'), finishes=("stop",))).turn
    assert turn.stop_reason == "tool_use" and turn.stop_reason_wire == "stop"
    assert replay(chat_stream(finishes=("stop",))).turn.stop_reason == "end_turn"
