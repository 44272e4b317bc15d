"""Usage at the cap arms the truncation gate: when a turn's billed output reaches the
request's output limit, a call whose arguments fail strict parsing is refused as
truncated, whatever stop reason the wire claims (vLLM reports ``tool_calls`` for turns
its ``max_tokens`` cut). The verdict decides; replay, the client, inspect, the
integrations and the agent pass the limit."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _server import DONE, CannedServer, Reply, openai_chunk, sse
from railings import inspect, replay
from railings.messages import ToolSpec, User
from railings.transport import AsyncProviderClient, ClientConfig, Timeouts, no_waits
from railings.turn.limit import limit_in_body, requested_limit
from railings.turn.verdict import RejectReason

CUT = '{"command": "rm -rf /tmp/leg'
WHY = "billed output reached the limit of 16 tokens"


def cut_at_cap(*, completion_tokens: int = 16, finish: str = "tool_calls") -> list[bytes]:
    """A Chat stream that says ``tool_calls`` with 16 tokens billed and a cut call."""
    call = {"index": 0, "id": "call_1", "type": "function"}
    return [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"tool_calls": [{**call, "function": {"name": "shell", "arguments": ""}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": CUT}}]}),
        openai_chunk({}, finish),
        sse(
            {
                "id": "chatcmpl-1",
                "choices": [],
                "usage": {"prompt_tokens": 9, "completion_tokens": completion_tokens},
            }
        ),
        DONE,
    ]


BODY = b"".join(cut_at_cap())


def test_replay_refuses_the_cut_call_when_usage_reaches_max_tokens() -> None:
    (verdict,) = replay(BODY, max_tokens=16).verdicts
    assert not verdict.execute and verdict.reason is RejectReason.TRUNCATED
    assert verdict.notice is not None and WHY in verdict.notice
    assert replay(BODY, max_tokens=16).turn.truncated
    assert replay(BODY, max_tokens=16).turn.stop_reason == "tool_use"  # the wire's word, kept


@pytest.mark.parametrize("max_tokens", [None, 17])
def test_below_the_cap_or_without_a_limit_the_stop_reason_decides(max_tokens: int | None) -> None:
    (verdict,) = replay(BODY, max_tokens=max_tokens).verdicts
    assert verdict.execute and verdict.repaired  # a finished call the model fumbled


def test_a_call_that_parses_still_runs_at_the_cap() -> None:
    whole = BODY.replace(CUT.encode().replace(b'"', b'\\"'), b'{\\"command\\": \\"ls\\"}')
    (verdict,) = replay(whole, max_tokens=16).verdicts
    assert verdict.execute and not verdict.repaired and verdict.arguments == {"command": "ls"}


def test_the_replay_command_says_truncated(tmp_path: Path) -> None:
    capture = tmp_path / "vllm.sse"
    capture.write_bytes(BODY)
    done = subprocess.run(
        [sys.executable, "-m", "railings", "replay", str(capture), "--max-tokens", "16"],
        capture_output=True,
        text=True,
        timeout=60,
        # The checkout's own source when the tests run from it (PYTHONPATH=src).
        env={
            "PATH": "/usr/bin:/bin",
            "NO_COLOR": "1",
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        },
    )
    assert done.returncode == 0, done.stderr
    assert "execute (repaired)" not in done.stdout
    assert "truncated" in done.stdout and "16 tokens" in done.stdout


def _client_verdicts(server: CannedServer, **overrides: Any) -> list[Any]:
    options: dict[str, Any] = {
        "model": "m",
        "max_tokens": 16,
        "base_url": server.openai_base_url,
        "api_key": "sk-test",
        "timeouts": Timeouts(connect=2.0, first_byte=5.0, idle=2.0),
    }
    options.update(overrides)
    cfg = ClientConfig(provider="openai", **options)

    async def go() -> list[Any]:
        async with AsyncProviderClient(cfg) as client:
            stream = client.stream_turn(
                [User("hi")], tools=[ToolSpec("shell", "", {"type": "object"})]
            )
            async for _ in stream:
                pass
            return list(stream.verdicts)

    with no_waits():
        return asyncio.run(go())


def test_the_client_refuses_the_cut_call_at_its_max_tokens() -> None:
    with CannedServer() as server:
        server.push(Reply(chunks=cut_at_cap()))
        (verdict,) = _client_verdicts(server)
    assert verdict.reason is RejectReason.TRUNCATED and WHY in verdict.notice


def test_the_client_reads_the_limit_from_the_body_it_sent() -> None:
    # The request's own limit is what counts: here extra_body sets it, not max_tokens.
    with CannedServer() as server:
        server.push(Reply(chunks=cut_at_cap()))
        (verdict,) = _client_verdicts(server, max_tokens=4096, extra_body={"max_tokens": 16})
        assert server.requests[0].json()["max_tokens"] == 16
    assert verdict.reason is RejectReason.TRUNCATED and WHY in verdict.notice


COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "shell", "arguments": CUT},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 9, "completion_tokens": 16, "total_tokens": 25},
}


def test_inspect_refuses_the_cut_call_given_max_tokens() -> None:
    (verdict,) = inspect(COMPLETION, max_tokens=16).verdicts
    assert verdict.reason is RejectReason.TRUNCATED and verdict.notice and WHY in verdict.notice
    (unarmed,) = inspect(COMPLETION).verdicts
    assert unarmed.execute


@pytest.mark.parametrize(
    ("body", "limit"),
    [
        ({"max_tokens": 16}, 16),
        ({"max_completion_tokens": 16}, 16),
        ({"max_output_tokens": 16}, 16),
        ({"generationConfig": {"maxOutputTokens": 16}}, 16),
        ({"inferenceConfig": {"maxTokens": 16}}, 16),
        ({"options": {"num_predict": 16}}, 16),
        ({"options": {"num_predict": -1}}, None),  # Ollama: no limit
        ({"max_tokens": 64, "max_completion_tokens": 16}, 16),  # the tighter one binds
        ({"max_tokens": True}, None),
        ({"max_tokens": "16"}, 16),  # proto3 JSON's spelling; pydantic servers coerce it
        ({"max_tokens": 16.0}, 16),
        ({"max_tokens": 16.5}, None),  # a fraction is no count
        ({"max_tokens": "-16"}, None),
        ({"max_tokens": "sixteen"}, None),
        ({"max_tokens": 0}, None),
        ({}, None),
    ],
)
def test_the_request_limit_in_every_wire_spelling(body: dict[str, Any], limit: int | None) -> None:
    assert requested_limit(body) == limit


def test_the_agent_refuses_the_cut_call_and_tells_the_model_why(tmp_path: Path) -> None:
    from railings.agent.loop import Agent, AgentEvent, RunStatus, ToolsDispatched
    from railings.dispatch import OutcomeStatus, ToolRegistry

    ran: list[str] = []
    registry = ToolRegistry()

    @registry.tool()
    def shell(command: str) -> str:  # accepts repairs: only the verdict stands in the way
        """Run a command (recorded, never run)."""
        ran.append(command)
        return "ok"

    events: list[AgentEvent] = []
    answer = [openai_chunk({"role": "assistant", "content": "done"}), openai_chunk({}, "stop")]
    with CannedServer() as server:
        server.push(Reply(chunks=cut_at_cap()), Reply(chunks=[*answer, DONE]))
        cfg = ClientConfig(
            provider="openai",
            model="m",
            max_tokens=16,
            base_url=server.openai_base_url,
            api_key="sk-test",
            timeouts=Timeouts(connect=2.0, first_byte=5.0, idle=2.0),
        )

        async def go() -> Any:
            async with AsyncProviderClient(cfg) as client:
                return await Agent(client, registry, on_event=events.append).arun("clean up")

        with no_waits():
            result = asyncio.run(go())
        second = server.requests[1].body.decode()
    assert result.status is RunStatus.COMPLETED and ran == []
    (batch,) = [e.batch for e in events if isinstance(e, ToolsDispatched)]
    (outcome,) = batch.outcomes
    assert outcome.status is OutcomeStatus.REJECTED
    assert WHY in second  # the notice the model reads says why


def _cut_message() -> Any:
    messages = pytest.importorskip("langchain_core.messages")
    return messages.AIMessage(
        content="",
        invalid_tool_calls=[{"name": "shell", "args": CUT, "id": "call_1", "error": None}],
        usage_metadata={"input_tokens": 9, "output_tokens": 16, "total_tokens": 25},
        response_metadata={"finish_reason": "tool_calls", "model_provider": "openai"},
    )


def test_inspect_message_refuses_the_cut_call_given_max_tokens() -> None:
    from railings.integrations import inspect_message

    (verdict,) = inspect_message(_cut_message(), max_tokens=16).verdicts
    assert verdict.reason is RejectReason.TRUNCATED and verdict.notice and WHY in verdict.notice
    (unarmed,) = inspect_message(_cut_message()).verdicts
    assert unarmed.execute


def test_the_langgraph_and_langchain_gates_take_the_limit() -> None:
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain")
    from railings.integrations.langchain import TruncationGuard
    from railings.integrations.langgraph import TruncationGate, resend_notices

    state = {"messages": [_cut_message()]}
    (notice,) = resend_notices(state, max_tokens=16)["messages"]
    assert WHY in str(notice.content)
    assert resend_notices(state)["messages"] == []  # without the limit: a fumbled call
    assert TruncationGate(max_tokens=16).max_tokens == 16
    update = TruncationGuard(max_tokens=16).after_model(state, None)  # type: ignore[arg-type]
    assert update is not None and WHY in str(update["messages"][0].content)


@pytest.mark.parametrize(
    ("data", "limit"),
    [
        (b'{"max_tokens": 16, "stream": true}', 16),
        (b'{"generationConfig": {"maxOutputTokens": 16}}', 16),
        (b"[1, 2]", None),
        (b"not json", None),
        (b"\xff\xfe", None),
        (b"", None),
    ],
)
def test_the_limit_of_a_request_body_as_sent(data: bytes, limit: int | None) -> None:
    assert limit_in_body(data) == limit
