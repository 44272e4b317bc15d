"""inspect_message: railings' verdict for a LangChain AIMessage, read by shape.

It agrees with railings.inspect on the SDK object built from the same response, finds
the model's raw argument text wherever LangChain keeps it, and judges a cut call whose
raw text is gone as cut. ``import railings`` imports no framework.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langchain_openai")

import anthropic
import openai
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_openai import ChatOpenAI
from openai.lib.streaming.chat import ChatCompletionStreamState

import railings
from railings import RejectReason, Verdict
from railings.integrations import inspect_message
from railings.testing import Script, ScriptedServer

CUT = '{"command": "rm -rf /tmp/leg'
CUT_AT = len(CUT) // 4
SCRIPT = {
    "seed": 5,
    "turns": [
        {
            "tool_calls": [
                {"name": "list_files", "arguments": {"path": "docs"}},
                {"name": "shell", "arguments": {"command": "rm -rf /tmp/legacy-cleanup"}},
            ]
        }
    ],
}
# Two calls: the first complete, the second cut at CUT (the server counts all argument text).
FIRST = '{"path": "docs"}'
TWO_CALLS_CUT_AT = (len(FIRST) + len(CUT)) // 4
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("list_files", "shell")
]
ASK = [{"role": "user", "content": "x"}]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(Script.from_dict(SCRIPT)) as server:
        yield server


# The two calls of the cut turn: judged by their raw text (the finished one runs), or with
# the raw text gone (neither can be proven whole).
CUT_RAW = (
    "max_tokens",
    True,
    [("list_files", Verdict.EXECUTE, None), ("shell", Verdict.REJECT, RejectReason.TRUNCATED)],
)
CUT_UNPROVEN = (
    "max_tokens",
    True,
    [
        ("list_files", Verdict.REJECT, RejectReason.TRUNCATED),
        ("shell", Verdict.REJECT, RejectReason.TRUNCATED),
    ],
)


def facts(result: railings.Replay) -> tuple[Any, ...]:
    turn = result.turn
    return (
        turn.stop_reason,
        turn.truncated,
        [(v.call.name, v.verdict, v.reason) for v in result.verdicts],
    )


def chat(server: ScriptedServer, max_tokens: int, streaming: bool | None = None) -> Any:
    flag: dict[str, Any] = {} if streaming is None else {"streaming": streaming}
    return ChatOpenAI(
        base_url=server.openai_base_url,
        api_key="sk-test",
        model="m",  # type: ignore[arg-type]
        max_tokens=max_tokens,
        **flag,  # type: ignore[call-arg]
    ).bind_tools(TOOLS)


# -- agreement with railings.inspect on the same response ----------------------------------


@pytest.mark.parametrize("max_tokens", [TWO_CALLS_CUT_AT, 1000], ids=["cut", "complete"])
def test_agrees_with_inspect_non_streamed(server: ScriptedServer, max_tokens: int) -> None:
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)
    completion = client.chat.completions.create(
        model="m",
        messages=ASK,
        tools=TOOLS,
        max_tokens=max_tokens,  # type: ignore[arg-type]
    )
    message = chat(server, max_tokens, streaming=False).invoke(ASK)
    if max_tokens == TWO_CALLS_CUT_AT:
        # The completion keeps both raw strings: the finished first call runs. LangChain kept
        # only its parse of the first call: unproven in a cut message, so it is rejected too.
        assert facts(railings.inspect(completion)) == CUT_RAW
        assert facts(inspect_message(message)) == CUT_UNPROVEN
    else:
        assert facts(inspect_message(message)) == facts(railings.inspect(completion))


@pytest.mark.parametrize("max_tokens", [TWO_CALLS_CUT_AT, 1000], ids=["cut", "complete"])
def test_agrees_with_inspect_streamed(server: ScriptedServer, max_tokens: int) -> None:
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)
    state = ChatCompletionStreamState()
    for chunk in client.chat.completions.create(
        model="m",
        messages=ASK,
        tools=TOOLS,
        max_tokens=max_tokens,
        stream=True,  # type: ignore[arg-type]
    ):
        state.handle_chunk(chunk)
    expected = facts(railings.inspect(state.current_completion_snapshot))

    total: Any = None
    for piece in chat(server, max_tokens).stream(ASK):  # chunks added: the raw text is kept
        total = piece if total is None else total + piece
    assert facts(inspect_message(total)) == expected
    # streaming=True invoke(): chunks merged and dropped, only the repairs are left: in a cut
    # message no call can be proven whole, so none runs.
    invoked = facts(inspect_message(chat(server, max_tokens, streaming=True).invoke(ASK)))
    assert invoked == (CUT_UNPROVEN if max_tokens == TWO_CALLS_CUT_AT else expected)


@pytest.mark.parametrize("streaming", [False, True], ids=["non-streamed", "streamed"])
def test_agrees_with_inspect_on_the_responses_api(server: ScriptedServer, streaming: bool) -> None:
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)
    tools: Any = [
        {"type": "function", "name": n, "parameters": {"type": "object"}}
        for n in ("list_files", "shell")
    ]
    response = client.responses.create(
        model="m",
        input=ASK,
        tools=tools,
        max_output_tokens=TWO_CALLS_CUT_AT,  # type: ignore[arg-type]
    )
    expected = facts(railings.inspect(response))
    assert expected[0] == "max_tokens"
    model = ChatOpenAI(
        base_url=server.openai_base_url,
        api_key="sk-test",
        model="m",  # type: ignore[arg-type]
        max_tokens=TWO_CALLS_CUT_AT,
        streaming=streaming,
        use_responses_api=True,  # type: ignore[call-arg]
    ).bind_tools(TOOLS)
    assert facts(inspect_message(model.invoke(ASK))) == expected


def test_no_call_without_its_raw_text_runs_in_a_cut_message(server: ScriptedServer) -> None:
    message = chat(server, TWO_CALLS_CUT_AT, streaming=True).invoke(ASK)
    assert message.tool_calls[1]["args"] == {"command": "rm -rf /tmp/leg"}  # LangChain's repair
    first, second = inspect_message(message).verdicts
    assert first.call.origin == second.call.origin == "parsed"
    for verdict in (first, second):
        assert verdict.verdict is Verdict.REJECT and verdict.reason is RejectReason.TRUNCATED
        assert verdict.notice is not None and "cannot be checked" in verdict.notice


def test_the_cut_call_alone_is_rejected_when_the_raw_text_is_kept(server: ScriptedServer) -> None:
    total: Any = None
    for piece in chat(server, TWO_CALLS_CUT_AT).stream(ASK):
        total = piece if total is None else total + piece
    first, second = inspect_message(total).verdicts
    assert first.call.origin == "raw" and first.verdict is Verdict.EXECUTE
    assert first.arguments == {"path": "docs"}
    assert second.verdict is Verdict.REJECT and second.reason is RejectReason.TRUNCATED


def test_agrees_with_inspect_for_anthropic_streamed(server: ScriptedServer) -> None:
    lc_anthropic = pytest.importorskip("langchain_anthropic")
    client = anthropic.Anthropic(
        base_url=server.anthropic_base_url, api_key="sk-test", max_retries=0
    )
    tools = [{"name": n, "input_schema": {"type": "object"}} for n in ("list_files", "shell")]
    with client.messages.stream(
        model="m",
        max_tokens=TWO_CALLS_CUT_AT,
        messages=ASK,
        tools=tools,  # type: ignore[arg-type]
    ) as stream:
        final = stream.get_final_message()
    # A Message keeps only parsed inputs: in a cut message no tool_use block is proven.
    assert facts(railings.inspect(final)) == CUT_UNPROVEN
    model = lc_anthropic.ChatAnthropic(
        base_url=server.anthropic_base_url,
        api_key="sk-test",
        model="m",
        max_tokens=TWO_CALLS_CUT_AT,
        streaming=True,
    ).bind_tools(tools)
    message = model.invoke(ASK)
    assert message.content[-1]["partial_json"] == CUT  # where ChatAnthropic keeps the raw text
    # ChatAnthropic streamed keeps each block's raw partial_json: judged by the text.
    assert facts(inspect_message(message)) == CUT_RAW


# -- where the raw text is read from ----------------------------------------------------------


def call(ident: str, args: dict[str, Any], name: str = "shell") -> dict[str, Any]:
    return {"name": name, "args": args, "id": ident, "type": "tool_call"}


def verdicts(message: Any) -> list[tuple[str, Verdict, RejectReason | None]]:
    return [(v.call.id, v.verdict, v.reason) for v in inspect_message(message).verdicts]


def test_raw_text_in_additional_kwargs_wins_over_the_repair() -> None:
    message = AIMessage(
        content="",
        tool_calls=[call("a", {"command": "rm -rf /tmp/leg"})],
        additional_kwargs={
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "shell", "arguments": CUT}}
            ]
        },
        response_metadata={"finish_reason": "length"},
    )
    assert verdicts(message) == [("a", Verdict.REJECT, RejectReason.TRUNCATED)]


def test_a_complete_raw_call_in_a_cut_message_runs() -> None:
    """The raw text proves the call finished: only a call without proof is judged cut."""
    message = AIMessage(
        content="",
        tool_calls=[call("a", {"command": "ls"})],
        additional_kwargs={
            "tool_calls": [
                {"id": "a", "function": {"name": "shell", "arguments": '{"command": "ls"}'}}
            ]
        },
        response_metadata={"finish_reason": "length"},
    )
    assert verdicts(message) == [("a", Verdict.EXECUTE, None)]


def test_tool_call_chunks_are_joined_by_index() -> None:
    chunk = AIMessageChunk(
        content="",
        tool_call_chunks=[
            {
                "name": "shell",
                "args": '{"command": ',
                "id": "a",
                "index": 0,
                "type": "tool_call_chunk",
            },
            {
                "name": None,
                "args": '"rm -rf /tmp/leg',
                "id": None,
                "index": 0,
                "type": "tool_call_chunk",
            },
        ],
        response_metadata={"finish_reason": "length"},
    )
    result = inspect_message(chunk)
    assert result.verdicts[0].call.raw_arguments == CUT
    assert result.verdicts[0].reason is RejectReason.TRUNCATED


def test_responses_api_incomplete_status() -> None:
    message = AIMessage(
        content=[{"type": "function_call", "call_id": "a", "name": "shell", "arguments": CUT}],
        tool_calls=[call("a", {"command": "rm -rf /tmp/leg"})],
        response_metadata={
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
        },
    )
    result = inspect_message(message)
    assert result.turn.stop_reason == "max_tokens"
    assert verdicts(message) == [("a", Verdict.REJECT, RejectReason.TRUNCATED)]


def test_anthropic_non_streamed_shape_every_tool_use_is_unproven() -> None:
    message = AIMessage(
        content=[
            {"type": "text", "text": "Cleaning up."},
            {"type": "tool_use", "id": "a", "name": "list_files", "input": {"path": "."}},
            {"type": "tool_use", "id": "b", "name": "shell", "input": {}},
        ],
        tool_calls=[call("a", {"path": "."}, "list_files"), call("b", {})],
        response_metadata={"stop_reason": "max_tokens"},
    )
    assert verdicts(message) == [
        ("a", Verdict.REJECT, RejectReason.TRUNCATED),
        ("b", Verdict.REJECT, RejectReason.TRUNCATED),
    ]
    assert inspect_message(message).turn.text == "Cleaning up."


@pytest.mark.parametrize(
    "metadata",
    [{"finish_reason": "tool_calls"}, {"stop_reason": "tool_use"}, {"status": "completed"}, {}],
)
def test_a_finished_turn_runs_its_calls(metadata: dict[str, Any]) -> None:
    message = AIMessage(
        content="", tool_calls=[call("a", {"command": "ls"})], response_metadata=metadata
    )
    assert verdicts(message) == [("a", Verdict.EXECUTE, None)]


def test_a_message_without_calls_has_no_verdicts() -> None:
    result = inspect_message(AIMessage(content="hi", response_metadata={"finish_reason": "stop"}))
    assert result.verdicts == () and result.turn.text == "hi"


# -- the import boundary ----------------------------------------------------------------------


def test_import_railings_imports_no_framework() -> None:
    code = (
        "import sys, railings, railings.integrations\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain', 'langchain_core', 'langgraph', 'langchain_openai', 'pydantic_ai'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
