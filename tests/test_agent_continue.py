"""``Agent.continue_reply``: the rest of an interrupted reply, and the run going on from the
joined turn. Scripted server, fault proxy, real transport, real tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from railings.agent.loop import Agent, AgentEvent, RunStatus, ToolsDispatched
from railings.dispatch import OutcomeStatus, ToolRegistry, builtin_tools
from railings.errors import CannotContinue
from railings.messages import Assistant, User
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.testing.faults import Fault
from railings.transport import ClientConfig, ProviderClient, no_waits
from railings.turn.model import Outcome

STORY = "Once upon a time there was a king who lived in a castle by the sea."


def _agent(
    proxy: FaultProxy, workdir: Path, events: list[AgentEvent]
) -> tuple[Agent, ProviderClient]:
    config = ClientConfig(
        provider="openai",
        model="scripted",
        base_url=proxy.url + "/v1",
        api_key="sk-test-agent-continue-0000",
        http2=False,
    )
    client = ProviderClient(config)
    return Agent(client, ToolRegistry(builtin_tools(workdir)), on_event=events.append), client


def test_the_joined_reply_takes_the_partials_place_and_its_calls_run(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("kings and castles\n")
    call = {"name": "read_file", "arguments": {"path": "notes.txt"}}
    script = Script.from_dict(
        {"chunk_size": 5, "turns": [{"text": STORY, "tool_calls": [call]}, {"text": "Read it."}]}
    )
    events: list[AgentEvent] = []
    with (
        no_waits(),
        ScriptedServer(script) as server,
        FaultProxy(server.url, "truncate:events=4,times=1") as proxy,
    ):
        agent, client = _agent(proxy, tmp_path, events)
        with client:
            first = agent.run("tell me a story")
            assert first.status is RunStatus.INTERRUPTED and first.text == STORY[:15]
            result = agent.continue_reply()
        asked = [r.body["messages"] for r in server.requests]
    assert result.status is RunStatus.COMPLETED
    assert result.continued is not None and result.continued.strategy == "user"
    joined = result.turns[0]
    assert joined.text == STORY and joined.outcome is Outcome.COMPLETE
    # The continuation's call went through the dispatcher like any turn's.
    (batch,) = [e.batch for e in events if isinstance(e, ToolsDispatched)]
    assert [o.status for o in batch.outcomes] == [OutcomeStatus.EXECUTED]
    assert "kings and castles" in batch.outcomes[0].content
    assert result.text == "Read it."
    # The history holds the joined reply once, in the partial one's place; the request
    # that asked for the rest is not kept.
    assert [type(m).__name__ for m in agent.messages[1:]] == [
        "User",
        "Assistant",
        "ToolResult",
        "Assistant",
    ]
    reply = agent.messages[2]
    assert isinstance(reply, Assistant) and reply.text == STORY
    assert [m["role"] for m in asked[-1]][:3] == ["system", "user", "assistant"]


def test_nothing_to_continue_is_refused_before_any_request(tmp_path: Path) -> None:
    script = Script.from_dict({"turns": [{"text": "Hello."}]})
    events: list[AgentEvent] = []
    with no_waits(), ScriptedServer(script) as server, FaultProxy(server.url) as proxy:
        agent, client = _agent(proxy, tmp_path, events)
        with client:
            with pytest.raises(CannotContinue) as before:
                agent.continue_reply()
            done = agent.run("hi")
            with pytest.raises(CannotContinue) as after:
                agent.continue_reply()
            requests = len(server.requests)
    assert (before.value.reason, after.value.reason) == ("no_reply", "complete")
    assert done.status is RunStatus.COMPLETED and requests == 1
    assert agent.messages[-2:] == [User("hi"), Assistant.of("Hello.")]


def test_a_continuation_that_failed_leaves_the_reply_to_continue(tmp_path: Path) -> None:
    script = Script.from_dict({"chunk_size": 5, "turns": [{"text": STORY}]})
    events: list[AgentEvent] = []
    with (
        no_waits(),
        ScriptedServer(script) as server,
        FaultProxy(server.url, "truncate:events=4,times=1") as proxy,
    ):
        agent, client = _agent(proxy, tmp_path, events)
        with client:
            agent.run("tell me a story")
            proxy.fault = Fault.parse("status:code=400,times=1")  # the next request only
            failed = agent.continue_reply()
            result = agent.continue_reply()
    assert failed.status is RunStatus.ERROR and failed.continued is None
    assert result.status is RunStatus.COMPLETED and result.turns[0].text == STORY
    assert agent.messages[-1] == Assistant.of(STORY)
