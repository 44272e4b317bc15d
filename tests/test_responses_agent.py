"""The agent and the CLI on the Responses API, end to end: scripted server, fault proxy,
real transport, real tools. The demo script's cut ``write_file`` is rejected, the notice
reaches the model as a ``function_call_output`` in the next request, the resend runs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from railings.agent.loop import Agent, AgentEvent, RunResult, RunStatus, ToolsDispatched
from railings.dispatch import OutcomeStatus, ToolRegistry, builtin_tools
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.transport import (
    BANNER,
    AsyncProviderClient,
    BannerState,
    ClientConfig,
    RetryPolicy,
    no_waits,
)


def _run(
    base_url: str,
    workdir: Path,
    *,
    task: str = "write a report",
    events: list[AgentEvent] | None = None,
) -> RunResult:
    config = ClientConfig(
        "openai-responses",
        "scripted",
        base_url=base_url,
        api_key="sk-test-agent-0123456789",
        max_tokens=1024,
        http2=False,
        retry=RetryPolicy(attempts=3),
    )

    async def main() -> RunResult:
        async with AsyncProviderClient(config) as client:
            agent = Agent(
                client,
                ToolRegistry(builtin_tools(workdir)),
                on_event=None if events is None else events.append,
            )
            return await agent.arun(task)

    with no_waits():
        return asyncio.run(main())


def test_the_cut_call_is_rejected_the_notice_goes_back_and_the_resend_runs(
    tmp_path: Path,
) -> None:
    events: list[AgentEvent] = []
    with ScriptedServer(Script.demo()) as server, FaultProxy(server.url) as proxy:
        result = _run(proxy.url + "/v1", tmp_path, events=events)
        requests = server.requests
    assert result.status is RunStatus.COMPLETED
    assert [
        [o.status for o in e.batch.outcomes] for e in events if isinstance(e, ToolsDispatched)
    ] == [[OutcomeStatus.EXECUTED], [OutcomeStatus.REJECTED], [OutcomeStatus.EXECUTED]]
    assert [r.turn for r in requests] == [0, 1, 2, 3]  # one run of items per assistant turn
    cut = result.turns[1]
    assert cut.truncated and cut.stop_reason == "max_tokens"
    # The request after the cut turn: the cut call as the model wrote it, then the notice
    # under the same call_id, as a function_call_output item.
    items: list[Any] = requests[2].body["input"]
    (call,) = [
        i
        for i in items
        if i.get("type") == "function_call" and i["call_id"] == cut.tool_calls[0].id
    ]
    assert call["arguments"] == cut.tool_calls[0].raw_arguments
    (notice,) = [
        i
        for i in items
        if i.get("type") == "function_call_output" and i["call_id"] == call["call_id"]
    ]
    assert "was NOT executed" in notice["output"]
    assert "Resend this tool call in full" in notice["output"]
    assert items.index(notice) > items.index(call)
    assert requests[2].body["instructions"].startswith("You are a careful coding agent")
    assert (tmp_path / "REPORT.md").stat().st_size == 1500
    # The first turn reasoned: its reasoning went back, with its encrypted content, right
    # before the call it led to, both under the ids the server gave them. The server
    # refuses a reasoning item without its item, and an item without its reasoning.
    sent: list[Any] = requests[1].body["input"]
    kinds = [i.get("type", i.get("role")) for i in sent]
    assert kinds == ["user", "reasoning", "message", "function_call", "function_call_output"]
    assert sent[1]["id"].startswith("rs_") and sent[1]["encrypted_content"]
    assert sent[2]["id"].startswith("msg_") and sent[3]["id"].startswith("fc_")


def test_an_empty_interruption_is_resent_with_the_banner(tmp_path: Path) -> None:
    seen: list[BannerState | None] = []
    unsubscribe = BANNER.subscribe(seen.append)
    try:
        script = Script.from_dict({"turns": [{"text": "Hello there, all is well."}]})
        with (
            ScriptedServer(script) as server,
            FaultProxy(server.url, "truncate:events=1,times=1") as proxy,
        ):
            result = _run(proxy.url + "/v1", tmp_path, task="hi")
            attempts = len(server.requests)
    finally:
        unsubscribe()
    assert result.status is RunStatus.COMPLETED and result.text == "Hello there, all is well."
    assert attempts == 2
    states = [s for s in seen if s is not None]
    assert states and states[0].attempt == 2


def test_a_partial_interruption_ends_the_run_and_runs_nothing(tmp_path: Path) -> None:
    script = Script.from_dict(
        {
            "chunk_size": 4,
            "turns": [
                {
                    "text": "The first part arrives, the rest never does.",
                    "tool_calls": [
                        {"name": "shell", "arguments": {"command": "touch SHOULD_NOT_EXIST"}}
                    ],
                }
            ],
        }
    )
    with ScriptedServer(script) as server, FaultProxy(server.url, "drop_terminator") as proxy:
        result = _run(proxy.url + "/v1", tmp_path, task="go")
    assert result.status is RunStatus.INTERRUPTED
    assert result.text == "The first part arrives, the rest never does."
    assert not (tmp_path / "SHOULD_NOT_EXIST").exists()


# -- the CLI ---------------------------------------------------------------------------------


def railings(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NO_COLOR": "1",
        "HOME": str(tmp_path),
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
        "OPENAI_API_KEY": "sk-test-1234567890",
    }
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
        env=env,
        cwd=tmp_path,
    )


def test_railings_run_with_the_responses_provider(tmp_path: Path) -> None:
    with ScriptedServer(Script.demo()) as server:
        done = railings(
            tmp_path,
            "run",
            "write a report",
            "--provider",
            "openai-responses",
            "--base-url",
            server.openai_base_url,
            "--max-tokens",
            "1024",
            "--json",
            "--workdir",
            str(tmp_path),
        )
        paths = {r.path for r in server.requests}
    assert done.returncode == 0, done.stderr
    assert paths == {"/v1/responses"}
    (run,) = json.loads(done.stdout)["runs"]
    assert run["status"] == "completed"
    assert [[c["verdict"] for c in t["tool_calls"]] for t in run["turns"]] == [
        ["execute"],
        ["reject"],
        ["execute"],
        [],
    ]
    assert (tmp_path / "REPORT.md").stat().st_size == 1500


def test_railings_chat_keeps_the_history_as_input_items(tmp_path: Path) -> None:
    script = Script.from_dict({"turns": [{"text": "first answer"}, {"text": "second answer"}]})
    with ScriptedServer(script) as server:
        done = railings(
            tmp_path,
            "chat",
            "--provider",
            "openai-responses",
            "--base-url",
            server.openai_base_url,
            "--model",
            "m",
            "--tools",
            "none",
            stdin="hello\nagain\n/exit\n",
        )
        requests = server.requests
    assert done.returncode == 0, done.stderr
    assert "first answer" in done.stdout and "second answer" in done.stdout
    assert requests[1].body["input"] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "again"},
    ]
    assert [r.turn for r in requests] == [0, 1]


def test_the_provider_is_offered_in_help(tmp_path: Path) -> None:
    done = railings(tmp_path, "run", "--help")
    assert done.returncode == 0 and "openai-responses" in done.stdout
