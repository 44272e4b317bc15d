"""The LangGraph guard with the real langchain-openai, langgraph (and langchain,
langchain-anthropic when installed) against the scripted model server, which cuts a
shell call at max_tokens: ``{"command": "rm -rf /tmp/leg``.

The tool is a spy named ``shell`` that records the command it got; nothing runs a shell.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent, tools_condition
from langgraph.prebuilt.tool_node import ToolCallRequest

from railings.integrations.langgraph import (
    GuardedToolNode,
    atruncation_gate,
    resend_notices,
    truncation_gate,
)
from railings.testing import Script, ScriptedServer
from railings.turn.verdict import TRUNCATION_NOTICE, TRUNCATION_UNPROVEN_NOTICE

# create_react_agent is deprecated in langgraph 1.x (for langchain.agents.create_agent) but
# is what most LangGraph code still calls: it is tested as it is.
pytestmark = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")

CUT = '{"command": "rm -rf /tmp/leg'
CUT_AT = len(CUT) // 4  # the scripted server: 1 token = 4 characters of output
REPAIRED = "rm -rf /tmp/leg"
ASK = [("user", "Clean up the legacy directory.")]

# The model cuts a call, then -- told to resend it -- sends a short complete one, then ends.
SCRIPT = {
    "seed": 3,
    "turns": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "rm -rf /tmp/legacy-cleanup"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]},
        {"text": "done"},
    ],
}


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(Script.from_dict(SCRIPT)) as server:
        yield server


def spy_tool(spy: list[str]) -> BaseTool:
    @tool
    def shell(command: str) -> str:
        """Run a shell command."""
        spy.append(command)
        return "ok"

    return shell


def chat(server: ScriptedServer, streaming: bool | None, max_tokens: int = CUT_AT) -> ChatOpenAI:
    flag: dict[str, Any] = {} if streaming is None else {"streaming": streaming}
    return ChatOpenAI(
        base_url=server.openai_base_url,
        api_key="sk-test",
        model="m",  # type: ignore[arg-type]
        max_tokens=max_tokens,
        **flag,  # type: ignore[call-arg]
    )


def tool_messages(server: ScriptedServer, number: int) -> list[dict[str, Any]]:
    """The tool messages in the ``number``-th request (1-based) the model received."""
    return [m for m in server.requests[number - 1]["messages"] if m["role"] == "tool"]


def assert_notice_reached_the_model(server: ScriptedServer, *, raw_kept: bool = False) -> None:
    """Request 2 answers the cut call with railings' truncation notice, verbatim: the
    "cannot be checked" one when LangChain dropped the raw text (a streamed ``invoke()``
    keeps only its parse), the plain one when it kept it (``invalid_tool_calls``)."""
    assert len(server.requests) >= 2
    assistant = next(m for m in server.requests[1]["messages"] if m["role"] == "assistant")
    call_id = assistant["tool_calls"][0]["id"]
    template = TRUNCATION_NOTICE if raw_kept else TRUNCATION_UNPROVEN_NOTICE
    expected = template.format(name="shell", id=call_id, stop_reason="max_tokens")
    assert tool_messages(server, 2) == [
        {"role": "tool", "content": expected, "tool_call_id": call_id}
    ]


# -- without railings ----------------------------------------------------------------------


def test_without_railings_a_streamed_agent_runs_the_repaired_command(
    server: ScriptedServer,
) -> None:
    spy: list[str] = []
    agent = create_react_agent(chat(server, streaming=True), tools=[spy_tool(spy)])
    agent.invoke({"messages": ASK})
    # langchain-core closed the fragment, and the tool ran it.
    assert spy[0] == REPAIRED
    assert server.requests[0].stream


def test_without_railings_stream_mode_messages_streams_the_model_and_runs_the_repair(
    server: ScriptedServer,
) -> None:
    """A default ChatOpenAI() is streamed under stream_mode="messages": nobody opted in."""
    spy: list[str] = []
    agent = create_react_agent(chat(server, streaming=None), tools=[spy_tool(spy)])
    list(agent.stream({"messages": ASK}, stream_mode="messages"))
    assert spy[0] == REPAIRED


def test_without_railings_a_non_streamed_agent_ends_with_the_call_unanswered(
    server: ScriptedServer,
) -> None:
    spy: list[str] = []
    agent = create_react_agent(chat(server, streaming=False), tools=[spy_tool(spy)])
    result = agent.invoke({"messages": ASK})
    last = result["messages"][-1]
    assert spy == []
    assert isinstance(last, AIMessage) and last.tool_calls == []
    assert last.invalid_tool_calls[0]["args"] == CUT
    assert len(server.requests) == 1  # the model is never told


# -- with the guard ------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "non-streamed"])
def test_guard_and_hook_stop_the_cut_call_and_the_model_resends_it(
    server: ScriptedServer, streaming: bool
) -> None:
    spy: list[str] = []
    agent = create_react_agent(
        chat(server, streaming),
        tools=GuardedToolNode([spy_tool(spy)]),
        post_model_hook=resend_notices,
    )
    result = agent.invoke({"messages": ASK})
    assert spy == ["ls"]  # only the complete resend ran
    assert_notice_reached_the_model(server, raw_kept=not streaming)
    assert result["messages"][-1].content == "done"


def test_guarded_tool_node_alone_stops_a_streamed_agent(server: ScriptedServer) -> None:
    spy: list[str] = []
    agent = create_react_agent(chat(server, streaming=True), tools=GuardedToolNode([spy_tool(spy)]))
    result = agent.invoke({"messages": ASK})
    assert spy == ["ls"]
    assert_notice_reached_the_model(server)
    rejected = next(m for m in result["messages"] if isinstance(m, ToolMessage))
    assert rejected.status == "error" and rejected.name == "shell"


@pytest.mark.parametrize("guarded", [False, True], ids=["without", "with-guard"])
def test_responses_api_model(server: ScriptedServer, guarded: bool) -> None:
    model = ChatOpenAI(
        base_url=server.openai_base_url,
        api_key="sk-test",
        model="m",  # type: ignore[arg-type]
        max_tokens=CUT_AT,
        streaming=True,
        use_responses_api=True,  # type: ignore[call-arg]
    )
    spy: list[str] = []
    tools: Any = GuardedToolNode([spy_tool(spy)]) if guarded else [spy_tool(spy)]
    create_react_agent(model, tools=tools).invoke({"messages": ASK})
    if not guarded:
        assert spy[0] == REPAIRED
        return
    assert spy == ["ls"]
    outputs = [i for i in server.requests[1]["input"] if i.get("type") == "function_call_output"]
    assert "stopped at the output limit (stop_reason: max_tokens)" in outputs[0]["output"]


def test_guard_under_stream_mode_messages(server: ScriptedServer) -> None:
    spy: list[str] = []
    agent = create_react_agent(chat(server, streaming=None), tools=GuardedToolNode([spy_tool(spy)]))
    list(agent.stream({"messages": ASK}, stream_mode="messages"))
    assert spy == ["ls"]
    assert_notice_reached_the_model(server)


def test_guard_async(server: ScriptedServer) -> None:
    spy: list[str] = []
    agent = create_react_agent(chat(server, streaming=True), tools=GuardedToolNode([spy_tool(spy)]))
    asyncio.run(agent.ainvoke({"messages": ASK}))
    assert spy == ["ls"]
    assert_notice_reached_the_model(server)


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "non-streamed"])
def test_a_complete_call_in_a_finished_turn_runs_through_the_guard(
    server: ScriptedServer, streaming: bool
) -> None:
    spy: list[str] = []
    agent = create_react_agent(
        chat(server, streaming, max_tokens=1000),
        tools=GuardedToolNode([spy_tool(spy)]),
        post_model_hook=resend_notices,
    )
    agent.invoke({"messages": ASK})
    assert spy == ["rm -rf /tmp/legacy-cleanup", "ls"]
    assert [m["content"] for m in tool_messages(server, 2)] == ["ok"]


def test_hand_built_state_graph(server: ScriptedServer) -> None:
    spy: list[str] = []
    tools = [spy_tool(spy)]
    model = chat(server, streaming=True).bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", GuardedToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "model")
    builder.compile().invoke({"messages": ASK})
    assert spy == ["ls"]
    assert_notice_reached_the_model(server)


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
def test_plain_tool_node_with_the_gate_as_its_interceptor(
    server: ScriptedServer, run_async: bool
) -> None:
    spy: list[str] = []
    node = ToolNode(
        [spy_tool(spy)], wrap_tool_call=truncation_gate, awrap_tool_call=atruncation_gate
    )
    agent = create_react_agent(chat(server, streaming=True), tools=node)
    if run_async:
        asyncio.run(agent.ainvoke({"messages": ASK}))
    else:
        agent.invoke({"messages": ASK})
    assert spy == ["ls"]
    assert_notice_reached_the_model(server)


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
def test_a_users_wrapper_runs_inside_the_gate(server: ScriptedServer, run_async: bool) -> None:
    seen: list[str] = []

    def wrapper(request: Any, execute: Any) -> Any:
        seen.append(request.tool_call["args"]["command"])
        return execute(request)

    spy: list[str] = []
    node = GuardedToolNode([spy_tool(spy)], wrap_tool_call=wrapper)
    agent = create_react_agent(chat(server, streaming=True), tools=node)
    if run_async:  # a sync-only wrapper: LangGraph runs the sync chain for async runs
        asyncio.run(agent.ainvoke({"messages": ASK}))
    else:
        agent.invoke({"messages": ASK})
    assert seen == spy == ["ls"]  # the rejected call never reached the user's wrapper


def test_a_users_async_wrapper_runs_inside_the_gate(server: ScriptedServer) -> None:
    seen: list[str] = []

    async def awrapper(request: Any, execute: Any) -> Any:
        seen.append(request.tool_call["args"]["command"])
        return await execute(request)

    spy: list[str] = []
    node = GuardedToolNode([spy_tool(spy)], awrap_tool_call=awrapper)
    agent = create_react_agent(chat(server, streaming=True), tools=node)
    asyncio.run(agent.ainvoke({"messages": ASK}))
    assert seen == spy == ["ls"]


def test_bare_tool_calls_carry_no_evidence_and_run() -> None:
    """A call whose message is not in the state (a node fed bare tool calls) has nothing
    to judge: it runs. One whose message is there is judged."""
    call = {"name": "shell", "args": {"command": REPAIRED}, "id": "c1", "type": "tool_call"}
    ran = ToolMessage("ok", tool_call_id="c1")

    def request(state: Any) -> ToolCallRequest:
        return ToolCallRequest(tool_call=call, tool=None, state=state, runtime=None)  # type: ignore[arg-type]

    assert truncation_gate(request([call]), lambda r: ran) is ran
    cut = AIMessage(content="", tool_calls=[call], response_metadata={"finish_reason": "length"})
    rejected = truncation_gate(request({"messages": [cut]}), lambda r: ran)
    assert isinstance(rejected, ToolMessage) and rejected.status == "error"
    assert "NOT executed" in str(rejected.content)


def test_resend_notices_leaves_answered_and_allowed_calls_alone() -> None:
    cut = AIMessage(
        content="",
        tool_calls=[
            {"name": "shell", "args": {"command": "ls"}, "id": "a", "type": "tool_call"},
            {"name": "shell", "args": {"command": REPAIRED}, "id": "b", "type": "tool_call"},
        ],
        response_metadata={"finish_reason": "length"},
    )
    update = resend_notices({"messages": [cut]})
    # Neither call kept its raw text, and the message stopped at the limit: both unproven.
    assert [m.tool_call_id for m in update["messages"]] == ["a", "b"]
    answered = [ToolMessage("x", tool_call_id="a"), ToolMessage("x", tool_call_id="b")]
    assert resend_notices({"messages": [cut, *answered]}) == {"messages": []}
    assert resend_notices([]) == {"messages": []}


# -- other stacks, when installed ------------------------------------------------------------


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "non-streamed"])
def test_create_agent_middleware(server: ScriptedServer, streaming: bool) -> None:
    agents = pytest.importorskip("langchain.agents")
    from railings.integrations.langchain import TruncationGuard

    spy: list[str] = []
    agent = agents.create_agent(
        chat(server, streaming), [spy_tool(spy)], middleware=[TruncationGuard()]
    )
    agent.invoke({"messages": ASK})
    assert spy == ["ls"]
    assert_notice_reached_the_model(server, raw_kept=not streaming)


def test_create_agent_without_railings_runs_the_repair(server: ScriptedServer) -> None:
    agents = pytest.importorskip("langchain.agents")
    spy: list[str] = []
    agents.create_agent(chat(server, streaming=True), [spy_tool(spy)]).invoke({"messages": ASK})
    assert spy[0] == REPAIRED


def test_create_agent_middleware_async(server: ScriptedServer) -> None:
    agents = pytest.importorskip("langchain.agents")
    from railings.integrations.langchain import TruncationGuard

    spy: list[str] = []
    agent = agents.create_agent(
        chat(server, streaming=True), [spy_tool(spy)], middleware=[TruncationGuard()]
    )
    asyncio.run(agent.ainvoke({"messages": ASK}))
    assert spy == ["ls"]
    assert_notice_reached_the_model(server)


@pytest.mark.parametrize("guarded", [False, True], ids=["without", "with-guard"])
def test_chat_anthropic_streamed(server: ScriptedServer, guarded: bool) -> None:
    lc_anthropic = pytest.importorskip("langchain_anthropic")
    model = lc_anthropic.ChatAnthropic(
        base_url=server.anthropic_base_url,
        api_key="sk-test",
        model="m",
        max_tokens=CUT_AT,
        streaming=True,
    )
    spy: list[str] = []
    tools: Any = GuardedToolNode([spy_tool(spy)]) if guarded else [spy_tool(spy)]
    create_react_agent(model, tools=tools).invoke({"messages": ASK})
    if not guarded:
        assert spy[0] == REPAIRED
        return
    assert spy == ["ls"]
    second = server.requests[1]["messages"]
    results = [
        b
        for m in second
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert "stopped at the output limit (stop_reason: max_tokens)" in str(results[0]["content"])
    assert results[0]["is_error"] is True
