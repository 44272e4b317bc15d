"""The pytest plugin's fixtures and the bundled demo script, driven like a coding agent."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from railings.replay import replay
from railings.testing import TOKEN_CHARS, FaultProxy, Script, ScriptedServer, filler, pytest_plugin
from railings.turn.model import Outcome
from railings.turn.verdict import RejectReason

# What ``pytest_plugins = ["railings.testing.pytest_plugin"]`` registers (only a
# top-level conftest may declare it, and this file may not touch that one).
railings_script = pytest_plugin.railings_script
railings_fault = pytest_plugin.railings_fault
scripted_server = pytest_plugin.scripted_server
fault_proxy = pytest_plugin.fault_proxy


def ask(url: str, messages: list[Any], **extra: Any) -> bytes:
    body = {"model": "m", "messages": messages, "stream": True, "max_tokens": 1024, **extra}
    r = httpx2.post(url + "/v1/chat/completions", json=body, timeout=10)
    assert r.status_code == 200
    return r.content


def test_demo_script_as_an_agent_loop(scripted_server: ScriptedServer) -> None:
    """list files -> a write cut by max_tokens (rejected, notice sent) -> shorter -> answer."""
    messages: list[Any] = [{"role": "user", "content": "Write a report on this project."}]
    seen: list[tuple[str, ...]] = []
    for _ in range(6):
        result = replay(ask(scripted_server.url, messages), provider="openai", max_tokens=1024)
        turn = result.turn
        assert turn.outcome is Outcome.COMPLETE
        if not turn.tool_calls:
            assert "never executed" in turn.text
            break
        seen.append(tuple(v.verdict.value for v in result.verdicts))
        messages.append(
            {
                "role": "assistant",
                "content": turn.text,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.raw_arguments},
                    }
                    for c in turn.tool_calls
                ],
            }
        )
        for v in result.verdicts:
            if v.reason is RejectReason.TRUNCATED:
                assert turn.truncated and v.call.raw_arguments.startswith(
                    '{"path": "REPORT.md", "content": "'
                )
            messages.append(
                {"role": "tool", "tool_call_id": v.call.id, "content": v.notice or "ok"}
            )
    assert seen == [("execute",), ("reject",), ("execute",)]
    assert [r.turn for r in scripted_server.requests] == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "railings_script", [{"turns": [{"text": "plugin says hi"}]}], indirect=True
)
@pytest.mark.parametrize("railings_fault", ["drop_terminator"], indirect=True)
def test_fixtures_take_script_and_fault(fault_proxy: FaultProxy) -> None:
    body = ask(fault_proxy.url, [{"role": "user", "content": "hi"}])
    assert b"[DONE]" not in body
    turn = replay(body, provider="openai").turn
    assert turn.text == "plugin says hi" and turn.outcome is Outcome.PARTIAL
    assert fault_proxy.log[0].fault == "drop_terminator"


def test_demo_script_loads_and_is_documented() -> None:
    demo = Script.demo()
    assert len(demo.turns) == 4 and demo.model == "railings-scripted-1"
    cut = json.dumps({"path": "REPORT.md", "content": filler(6000)}, ensure_ascii=False)
    assert demo.turns[1].tool_calls[0].arguments == cut and len(cut) > 1024 * TOKEN_CHARS
