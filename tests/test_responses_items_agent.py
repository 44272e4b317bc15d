"""The scripted server writes every call type, and the agent answers each in the item
shape the API expects; a Chat server that sends object arguments cannot get a cut call
run through ``railings run``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from railings import replay
from railings.agent import Agent
from railings.dispatch import ToolRegistry, tool
from railings.testing import Script, ScriptedServer
from railings.transport import AsyncProviderClient, ClientConfig, Timeouts, set_testing

FAST = Timeouts(connect=2.0, first_byte=5.0, idle=2.0)


def run_agent(server: ScriptedServer, registry: ToolRegistry, max_tokens: int = 512) -> Any:
    set_testing(True)
    config = ClientConfig(
        provider="openai-responses",
        model="m",
        max_tokens=max_tokens,
        base_url=server.openai_base_url,
        api_key="sk-test",
        timeouts=FAST,
    )

    async def go() -> Any:
        async with AsyncProviderClient(config) as client:
            agent = Agent(client, registry, approve=None, journal=None)
            return await agent.arun("go")

    try:
        return asyncio.run(go())
    finally:
        set_testing(False)


def second_input(server: ScriptedServer) -> list[dict[str, Any]]:
    requests = server.requests
    assert len(requests) == 2
    items: list[dict[str, Any]] = requests[1].body["input"]
    return items


ACTION = {"type": "exec", "command": ["ls", "-a"], "env": {}}


def test_a_local_shell_call_is_run_and_answered_with_local_shell_call_output() -> None:
    ran: list[Any] = []

    @tool(name="local_shell", schema={"type": "object", "properties": {"action": {}}})
    def local_shell(action: dict[str, Any]) -> str:
        ran.append(action)
        return "a b c"

    script = Script.from_dict(
        {
            "turns": [
                {
                    "text": "Listing.",
                    "tool_calls": [
                        {
                            "name": "local_shell",
                            "type": "local_shell",
                            "arguments": {"action": ACTION},
                        }
                    ],
                },
                {"text": "Three files."},
            ]
        }
    )
    with ScriptedServer(script) as server:
        result = run_agent(server, ToolRegistry([local_shell]))
        items = second_input(server)
    assert ran == [ACTION] and result.text == "Three files."
    call = next(i for i in items if i.get("type") == "local_shell_call")
    assert call["action"] == ACTION and call["status"] == "completed"
    (output,) = [i for i in items if i.get("type") == "local_shell_call_output"]
    assert output == {
        "type": "local_shell_call_output",
        "call_id": call["call_id"],
        "output": "a b c",
    }


def test_a_freeform_custom_call_runs_on_its_raw_input() -> None:
    seen: list[str] = []

    @tool(
        name="execute_sql", schema={"type": "object", "properties": {"input": {"type": "string"}}}
    )
    def execute_sql(input: str) -> str:
        seen.append(input)
        return "3 rows"

    sql = "SELECT * FROM users WHERE age > 25"
    call = {"name": "execute_sql", "type": "custom", "arguments": sql}
    script = {"turns": [{"tool_calls": [call]}, {"text": "ok"}]}
    with ScriptedServer(Script.from_dict(script)) as server:
        run_agent(server, ToolRegistry([execute_sql]))
        items = second_input(server)
    assert seen == [sql]
    call = next(i for i in items if i.get("type") == "custom_tool_call")
    assert call["input"] == sql
    assert items[-1] == {
        "type": "custom_tool_call_output",
        "call_id": call["call_id"],
        "output": "3 rows",
    }


def test_an_mcp_approval_request_is_denied_without_an_approver() -> None:
    arguments = {"url": "https://example.com/"}
    script = {"turns": [{"tool_calls": [{"name": "create_short_url", "type": "mcp_approval",
                                         "arguments": arguments}]}, {"text": "ok"}]}  # fmt: skip
    with ScriptedServer(Script.from_dict(script)) as server:
        run_agent(server, ToolRegistry())
        items = second_input(server)
    request = next(i for i in items if i.get("type") == "mcp_approval_request")
    answer = items[-1]
    assert answer["type"] == "mcp_approval_response" and answer["approve"] is False
    assert answer["approval_request_id"] == request["id"]


def test_a_cut_local_shell_call_is_never_run() -> None:
    ran: list[Any] = []

    @tool(name="local_shell", schema={"type": "object", "properties": {"action": {}}})
    def local_shell(action: dict[str, Any]) -> str:
        ran.append(action)
        return ""

    long = {"type": "exec", "command": ["rm", "-rf", "/tmp/leg" + "x" * 200], "env": {}}
    cut = {"name": "local_shell", "type": "local_shell", "arguments": {"action": long}}
    script = {"turns": [{"tool_calls": [cut]}, {"text": "ok"}]}
    with ScriptedServer(Script.from_dict(script)) as server:
        run_agent(server, ToolRegistry([local_shell]), max_tokens=10)
        items = second_input(server)
    assert ran == []  # the server repaired the cut action into an object: not trusted
    (output,) = [i for i in items if i.get("type") == "local_shell_call_output"]
    assert "completeness cannot be checked" in output["output"]


@pytest.mark.parametrize("call_type", ["shell", "apply_patch", "computer", "mcp_approval"])
def test_the_scripted_server_writes_each_call_type_as_its_item(call_type: str) -> None:
    arguments: Any = {
        "shell": {"action": {"commands": ["ls"]}},
        "apply_patch": {"operation": {"type": "delete_file", "path": "old.txt"}},
        "computer": {"action": {"type": "screenshot"}, "pending_safety_checks": []},
        "mcp_approval": {"url": "https://e.com"},
    }[call_type]
    script = {"turns": [{"tool_calls": [{"name": call_type, "type": call_type,
                                         "arguments": arguments}]}]}  # fmt: skip
    import httpx2

    with ScriptedServer(Script.from_dict(script)) as server:
        response = httpx2.post(
            f"{server.openai_base_url}/responses",
            json={"model": "m", "input": "go", "stream": True, "max_output_tokens": 100},
        )
    result = replay(response.content)
    assert result.turn.complete and result.turn.stop_reason == "tool_use"
    (verdict,) = result.verdicts
    assert verdict.call.type == call_type and verdict.execute
    assert verdict.arguments == arguments


def test_railings_run_never_runs_a_cut_call_sent_with_object_arguments(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    script = {
        "turns": [
            {"tool_calls": [{"name": "shell", "object_arguments": True,
                             "arguments": {"command": "touch CUT_CALL_RAN && touch MORE"}}]},
            {"text": "I will resend it."},
        ]
    }  # fmt: skip
    with ScriptedServer(Script.from_dict(script)) as server:
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "NO_COLOR": "1"}
        env.pop("ANTHROPIC_API_KEY", None)
        done = subprocess.run(
            [sys.executable, "-m", "railings", "run", "make the files", "--provider", "openai",
             "--base-url", server.openai_base_url, "--model", "m", "--max-tokens", "8", "--yes",
             "--workdir", str(workdir), "--journal", str(tmp_path / "j.sqlite3"), "--json"],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        first = server.requests[0]
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in workdir.iterdir()) == []  # nothing ran, not even "touch C..."
    # The server did send the cut call whole, as an object it had repaired.
    assert first.body["max_tokens"] == 8
    transcript = json.loads(done.stdout)
    assert "truncated" in json.dumps(transcript)
