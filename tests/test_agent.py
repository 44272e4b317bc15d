"""The agent end to end: scripted server, fault proxy, real transport, real tools, journal."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from railings.agent.loop import Agent, AgentEvent, RunResult, RunStatus, ToolsDispatched
from railings.dispatch import OutcomeStatus, ToolRegistry, builtin_tools
from railings.journal import Journal
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.transport import (
    BANNER,
    AsyncProviderClient,
    BannerState,
    ClientConfig,
    RetryPolicy,
    no_waits,
)

PROVIDERS = ["openai", "anthropic"]


def _base(provider: str, url: str) -> str:
    return url + "/v1" if provider == "openai" else url


def _run(
    provider: str,
    url: str,
    workdir: Path,
    journal: Journal | None,
    *,
    max_tokens: int = 1024,
    events: list[AgentEvent] | None = None,
    task: str = "write a report",
) -> RunResult:
    config = ClientConfig(
        provider=provider,  # type: ignore[arg-type]
        model="scripted",
        base_url=_base(provider, url),
        api_key="sk-test-agent-0123456789",
        max_tokens=max_tokens,
        http2=False,
        retry=RetryPolicy(attempts=3),
    )

    async def main() -> RunResult:
        async with AsyncProviderClient(config) as client:
            agent = Agent(
                client,
                ToolRegistry(builtin_tools(workdir)),
                journal=journal,
                on_event=None if events is None else events.append,
            )
            return await agent.arun(task)

    with no_waits():
        return asyncio.run(main())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_truncated_call_is_rejected_notice_reaches_model_and_resend_runs(
    provider: str, tmp_path: Path
) -> None:
    events: list[AgentEvent] = []
    with ScriptedServer(Script.demo()) as server, FaultProxy(server.url) as proxy:
        result = _run(provider, proxy.url, tmp_path, None, events=events)
        requests = list(server.requests)
    assert result.status is RunStatus.COMPLETED
    statuses = [
        [o.status for o in e.batch.outcomes] for e in events if isinstance(e, ToolsDispatched)
    ]
    assert statuses == [
        [OutcomeStatus.EXECUTED],
        [OutcomeStatus.REJECTED],
        [OutcomeStatus.EXECUTED],
    ]
    assert result.turns[1].truncated
    # The request that answered the cut call carries the notice, in the provider's own shape.
    third = str(requests[2].body)
    assert "was NOT executed" in third and "Resend this tool call in full" in third
    assert (tmp_path / "REPORT.md").stat().st_size == 1500


@pytest.mark.parametrize("provider", PROVIDERS)
def test_empty_interruption_is_resent_with_the_banner(provider: str, tmp_path: Path) -> None:
    seen: list[BannerState | None] = []
    unsubscribe = BANNER.subscribe(seen.append)
    try:
        script = Script.from_dict({"turns": [{"text": "Hello there, all is well."}]})
        # The first response stops after its first event: message start / role chunk, no content.
        with (
            ScriptedServer(script) as server,
            FaultProxy(server.url, "truncate:events=1,times=1") as proxy,
        ):
            result = _run(provider, proxy.url, tmp_path, None, task="hi")
            attempts = len(server.requests)
    finally:
        unsubscribe()
    assert result.status is RunStatus.COMPLETED and result.text == "Hello there, all is well."
    assert attempts == 2
    states = [s for s in seen if s is not None]
    assert states and states[0].attempt == 2 and states[0].attempts == 3
    assert seen[-1] is None  # cleared once the retry started


@pytest.mark.parametrize("provider", PROVIDERS)
def test_partial_interruption_ends_the_run_and_the_journal_keeps_the_text(
    provider: str, tmp_path: Path
) -> None:
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
    with (
        ScriptedServer(script) as server,
        FaultProxy(server.url, "drop_terminator") as proxy,
        Journal(tmp_path / "j.db") as journal,
    ):
        result = _run(provider, proxy.url, tmp_path, journal, task="go")
        assert result.status is RunStatus.INTERRUPTED
        assert result.text == "The first part arrives, the rest never does."
        assert not (tmp_path / "SHOULD_NOT_EXIST").exists()
        entries = journal.entries(result.session_id or "")
    texts = "".join(
        e.data["text"] for e in entries if e.kind == "delta" and e.data["kind"] == "text"
    )
    assert texts == result.text
    (end,) = [e for e in entries if e.kind == "turn_end"]
    assert end.data["outcome"] == "partial"
    assert end.data["tool_calls"][0]["verdict"] == "reject"
    assert [e.data["status"] for e in entries if e.kind == "run_end"] == ["interrupted"]


def test_turn_limit(tmp_path: Path) -> None:
    script = Script.from_dict(
        {"turns": [{"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}]}
    )
    with ScriptedServer(script) as server:
        config = ClientConfig(
            provider="openai", model="m", base_url=server.openai_base_url, api_key="k" * 12
        )

        async def main() -> RunResult:
            async with AsyncProviderClient(config) as client:
                return await Agent(client, ToolRegistry(builtin_tools(tmp_path)), max_turns=2).arun(
                    "x"
                )

        result = asyncio.run(main())
    assert result.status is RunStatus.TURN_LIMIT and len(result.turns) == 2


def test_the_blocking_client_and_the_blocking_run_fit_together(tmp_path: Path) -> None:
    # Agent(ProviderClient(config), tools).run(task): both blocking forms, one real tool call.
    from railings.errors import ConfigurationError
    from railings.transport import ProviderClient

    script = Script.from_dict(
        {
            "turns": [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}
                    ]
                },
                {"text": "Written."},
            ]
        }
    )
    with ScriptedServer(script) as server:
        config = ClientConfig(
            provider="openai", model="m", base_url=server.openai_base_url, api_key="x"
        )
        with ProviderClient(config) as client:
            agent = Agent(client, ToolRegistry(builtin_tools(tmp_path)))
            result = agent.run("write a.txt")
            assert result.status is RunStatus.COMPLETED and result.text == "Written."
            assert (tmp_path / "a.txt").read_text() == "x"
            with pytest.raises(ConfigurationError, match=r"agent\.run\(task\)"):
                asyncio.run(agent.arun("again"))
