"""Every Responses output item the client must act on is a call: real captures of a
local_shell_call, a shell_call, an apply_patch_call, an mcp_approval_request and a freeform
custom_tool_call, what replay, inspect and the CLI make of them, and the truncation rule
applied to each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from railings import RejectReason, inspect, replay, to_json
from railings.turn.verdict import TRUNCATION_UNPROVEN_NOTICE

CAPTURES = Path(__file__).resolve().parent / "corpus" / "responses"

LOCAL_SHELL = "vercel_local_shell_call_gpt5_codex.sse"
APPLY_PATCH = "vercel_apply_patch_call_gpt5_1.sse"
APPROVAL = "vercel_mcp_approval_request_gpt5_mini.sse"
SHELL = "vercel_shell_call_gpt5_1.sse"
CUSTOM = "pydantic_ai_custom_tool_call_gpt5.sse"


def body(name: str) -> bytes:
    return (CAPTURES / name).read_bytes()


def cut_at_the_limit(data: bytes) -> bytes:
    """The same stream ending in ``response.incomplete`` (max_output_tokens) instead."""
    head, _, last = data.rstrip(b"\n").rpartition(b"\n\n")
    event = json.loads(last.split(b"data: ", 1)[1])
    event["type"] = "response.incomplete"
    event["response"]["status"] = "incomplete"
    event["response"]["incomplete_details"] = {"reason": "max_output_tokens"}
    line = json.dumps(event, separators=(",", ":"))
    return head + f"\n\nevent: response.incomplete\ndata: {line}\n\n".encode()


@pytest.mark.parametrize(
    ("name", "call_type", "call_name", "arguments"),
    [
        (
            LOCAL_SHELL,
            "local_shell",
            "local_shell",
            {"action": {"type": "exec", "command": ["ls", "-a", "~"], "env": {}}},
        ),
        (
            SHELL,
            "shell",
            "shell",
            {
                "action": {
                    "commands": ["ls -a ~/Desktop"],
                    "max_output_length": 8912,
                    "timeout_ms": None,
                }
            },
        ),
        (APPROVAL, "mcp_approval", "create_short_url", None),
        (CUSTOM, "custom", "execute_sql", {"input": "SELECT * FROM users LIMIT 5;"}),
    ],
)
def test_a_capture_asking_the_client_to_act_is_a_call_never_end_turn(
    name: str, call_type: str, call_name: str, arguments: Any
) -> None:
    result = replay(body(name))
    turn = result.turn
    assert turn.complete and turn.stop_reason == "tool_use"
    assert turn.server_tool_calls == () and turn.unknown_events == 0
    (verdict,) = result.verdicts
    assert verdict.call.type == call_type and verdict.call.name == call_name
    assert verdict.execute and verdict.notice is None
    if arguments is not None:
        assert verdict.arguments == arguments
    # inspect() on the finished Response (its output items) agrees with the stream.
    final = json.loads(body(name).rstrip(b"\n").rsplit(b"data: ", 1)[1])["response"]
    again = inspect(final)
    assert [(v.call.type, v.call.name, v.arguments) for v in again.verdicts] == [
        (verdict.call.type, verdict.call.name, verdict.arguments)
    ]
    assert again.turn.stop_reason == "tool_use"


def test_apply_patch_call_carries_the_whole_operation() -> None:
    (verdict,) = replay(body(APPLY_PATCH)).verdicts
    operation = verdict.arguments["operation"] if verdict.arguments else {}
    assert verdict.call.type == "apply_patch" and verdict.call.origin == "parsed"
    assert operation["type"] == "create_file" and operation["path"]
    assert operation["diff"].startswith("+")


def test_the_approval_request_is_pending_with_the_request_id() -> None:
    (verdict,) = replay(body(APPROVAL)).verdicts
    assert verdict.call.id.startswith("mcpr_")  # the approval_request_id of the answer
    assert verdict.arguments is not None and verdict.arguments["url"] == "https://ai-sdk.dev/"


@pytest.mark.parametrize("name", [LOCAL_SHELL, SHELL, APPLY_PATCH, CUSTOM])
def test_an_unprovable_item_in_a_cut_turn_is_rejected_as_truncated(name: str) -> None:
    result = replay(cut_at_the_limit(body(name)))
    assert result.turn.truncated and result.turn.complete
    (verdict,) = result.verdicts
    assert verdict.reason is RejectReason.TRUNCATED and not verdict.call.provable
    assert verdict.notice == TRUNCATION_UNPROVEN_NOTICE.format(
        name=verdict.call.name, id=verdict.call.id, stop_reason="max_tokens"
    )
    # The custom input is never asked to be JSON, cut or not.
    assert "JSON" not in verdict.notice


def test_an_approval_request_with_whole_json_in_a_cut_turn_is_proven_by_its_text() -> None:
    (verdict,) = replay(cut_at_the_limit(body(APPROVAL))).verdicts
    assert verdict.call.provable and verdict.execute


def test_replay_json_and_text_show_the_call_kinds() -> None:
    calls = to_json(replay(body(LOCAL_SHELL)))["tool_calls"]
    assert [(c["type"], c["origin"], c["verdict"]) for c in calls] == [
        ("local_shell", "parsed", "execute")
    ]
    cli = [sys.executable, "-m", "railings", "replay"]
    text = subprocess.run(
        [*cli, str(CAPTURES / APPROVAL)], capture_output=True, text=True, check=True
    ).stdout
    assert "mcp_approval call #0 create_short_url" in text and "pending approval" in text
    out = subprocess.run(
        [*cli, "--json", "-"], input=cut_at_the_limit(body(SHELL)), capture_output=True, check=True
    ).stdout
    (call,) = json.loads(out)["tool_calls"]
    assert (call["type"], call["verdict"], call["reason"]) == ("shell", "reject", "truncated")


# -- each call's result goes back in the item shape of its type --------------------------------


def _history(name: str, *results: tuple[str, bool]) -> list[dict[str, Any]]:
    from railings.messages import Assistant, ToolResult, User
    from railings.providers.openai_responses.encoder import openai_responses_body

    turn = replay(body(name)).turn
    assistant = Assistant.from_turn(turn)
    messages: list[Any] = [User("go"), assistant]
    for (content, is_error), call in zip(results, turn.tool_calls, strict=True):
        messages.append(ToolResult(call.id, content, is_error))
    return openai_responses_body("m", messages, max_tokens=64)["input"]


@pytest.mark.parametrize(
    ("name", "error", "expected"),
    [
        (
            LOCAL_SHELL,
            False,
            {"type": "local_shell_call_output", "call_id": "call_h3nm8hUG0KO9tVNuRACkL1ri",
             "output": "out"},
        ),
        (
            SHELL,
            True,
            {"type": "shell_call_output", "call_id": "call_pbxjNs1tMJUahLZKAS9qLtvw",
             "output": [{"stdout": "", "stderr": "out", "outcome": {"type": "exit",
                                                                   "exit_code": 1}}]},
        ),
        (
            APPROVAL,
            False,
            {"type": "mcp_approval_response", "approve": True,
             "approval_request_id": "mcpr_04a97b4fce127879006949a83ac9308195a7f7b69ea82e91fe"},
        ),
        (
            CUSTOM,
            False,
            {"type": "custom_tool_call_output", "call_id": "call_2GHkSm2Jm0n7vgXsQEryfGmL",
             "output": "out"},
        ),
    ],
)  # fmt: skip
def test_results_go_back_as_the_output_item_of_their_call_type(
    name: str, error: bool, expected: dict[str, Any]
) -> None:
    items = _history(name, ("out", error))
    assert items[-1] == expected


def test_apply_patch_result_and_rebuilt_call_shapes() -> None:
    items = _history(APPLY_PATCH, ("patch failed", True))
    call, result = items[-2], items[-1]
    assert call["type"] == "apply_patch_call" and call["call_id"] == result["call_id"]
    assert call["operation"]["type"] == "create_file" and "id" not in call
    assert result == {
        "type": "apply_patch_call_output",
        "call_id": call["call_id"],
        "status": "failed",
        "output": "patch failed",
    }


def test_the_dispatcher_answers_an_approval_request_and_denies_by_default() -> None:
    import asyncio

    from railings.dispatch import Dispatcher, OutcomeStatus, ToolRegistry

    turn = replay(body(APPROVAL)).turn
    (denied,) = asyncio.run(Dispatcher(ToolRegistry()).dispatch_turn(turn)).outcomes
    assert denied.status is OutcomeStatus.DENIED and "NOT approved" in denied.content
    seen: list[str] = []

    async def approve(verdict: Any) -> bool:
        seen.append(verdict.call.name)
        return True

    dispatcher = Dispatcher(ToolRegistry(), approve_mcp=approve)
    (approved,) = asyncio.run(dispatcher.dispatch_turn(turn)).outcomes
    assert approved.status is OutcomeStatus.EXECUTED and seen == ["create_short_url"]


def test_a_computer_result_is_a_screenshot_and_a_notice_follows_it_as_text() -> None:
    from railings.providers.openai_responses.shapes import result_items

    url = "data:image/png;base64,iVBORw0KGgo="
    assert result_items("computer", "call_c", url, False) == [
        {
            "type": "computer_call_output",
            "call_id": "call_c",
            "output": {"type": "computer_screenshot", "image_url": url},
        }
    ]
    output, notice = result_items("computer", "call_c", "NOT executed: cut", True)
    assert output == {
        "type": "computer_call_output",
        "call_id": "call_c",
        "output": {"type": "computer_screenshot"},
    }
    assert notice == {"role": "user", "content": "NOT executed: cut"}
