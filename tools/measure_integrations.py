"""What each SDK and framework does today with a tool call cut at the output limit.

Run ``make measure``, or ``python -m tools.measure_integrations`` from the repository
root (``--json`` for the rows as JSON, ``--markdown`` for a table to paste).
Every row is measured, not assumed: the
scripted model server (:mod:`railings.testing`) answers a shell call,
``{"command": "rm -rf /tmp/legacy-cleanup"}``, and the request's ``max_tokens`` cuts
its arguments at ``{"command": "rm -rf /tmp/leg`` with ``finish_reason: "length"`` /
``stop_reason: "max_tokens"``. Each stack is driven the way its users drive it;
agents get a spy tool named ``shell`` that records the command it was given (never a
real shell). Then the same run again with the one change that adds railings.

A stack whose package is not installed gets a row that says so. Needs the dev extra
(``openai``, ``anthropic``, ``langchain-openai``, ``langgraph``); ``langchain``,
``langchain-anthropic`` and ``pydantic-ai-slim[openai]`` are measured when present.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import railings
from railings.testing import TOKEN_CHARS, Script, ScriptedServer

__all__ = ["CUT", "MAX_TOKENS", "Row", "main", "measure"]

COMMAND = "rm -rf /tmp/legacy-cleanup"
CUT = '{"command": "rm -rf /tmp/leg'  # what the model had written when the limit struck
MAX_TOKENS = len(CUT) // TOKEN_CHARS  # the scripted server cuts at exactly 4 * max_tokens chars
SCRIPT = {
    "seed": 7,
    "turns": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": COMMAND}}]},
        {"text": "done"},
    ],
}
NOTICE_MARK = "was NOT executed"  # every railings notice says it
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]
RESPONSES_TOOLS = [
    {
        "type": "function",
        "name": "shell",
        "description": "Run a shell command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]
ANTHROPIC_TOOLS = [
    {
        "name": "shell",
        "description": "Run a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]
ASK = [{"role": "user", "content": "Clean up the legacy directory."}]


@dataclass(frozen=True, slots=True)
class Row:
    """One measured stack: what the cut call becomes today, and with railings."""

    stack: str
    call: str  # how the stack was driven
    today: str  # what the stack hands on for the cut call
    runs: str  # whether the cut call runs (agents) or who decides (SDKs)
    fix: str  # the one change that adds railings
    with_fix: str  # what happens with it


# -- helpers -------------------------------------------------------------------------------


@contextmanager
def _server() -> Iterator[ScriptedServer]:
    with ScriptedServer(Script.from_dict(SCRIPT)) as server:
        yield server


def _verdict(replay: railings.Replay) -> str:
    if not replay.verdicts:
        return f"no calls; truncated={replay.turn.truncated}"
    return "; ".join(
        f"{v.verdict.value}" + (f" ({v.reason.value}) + resend notice" if v.reason else "")
        for v in replay.verdicts
    )


def _notice_reached(server: ScriptedServer) -> str:
    for number, request in enumerate(server.requests, 1):
        for message in request.get("messages") or []:
            if message.get("role") == "tool" and NOTICE_MARK in str(message.get("content")):
                return f"the notice reached the model (request {number})"
    return "the notice did not reach the model"


def _ran(spy: list[str]) -> str:
    return f"RUNS shell({spy[0]!r})" if spy else "not run"


def _after(server: ScriptedServer, spy: list[str]) -> str:
    """What happened to the call in an agent run, and what the model was told."""
    if spy:
        return _ran(spy)
    if len(server.requests) < 2:
        return "not run; the run ends with the call unanswered (model never told)"
    second = server.requests[1].get("messages") or []
    told = next((str(m.get("content")) for m in second if m.get("role") == "tool"), "")
    if NOTICE_MARK in told:
        return "not run; " + _notice_reached(server)
    return f"not run; the model is sent back: {_short(told)}"


def _short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _recorder(spy: list[str]) -> Callable[[str], str]:
    def shell(command: str) -> str:
        """Run a shell command."""
        spy.append(command)
        return "ok"

    return shell


def _spy_tool(spy: list[str]) -> Any:
    from langchain_core.tools import tool

    return tool(_recorder(spy))


# -- the official SDKs ------------------------------------------------------------------------


def _openai() -> list[Row]:
    import openai

    rows = []
    with _server() as server:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)
        completion = client.chat.completions.create(
            model="m",
            messages=ASK,
            tools=OPENAI_TOOLS,
            max_tokens=MAX_TOKENS,  # type: ignore[arg-type]
        )
        choice = completion.choices[0]
        calls = choice.message.tool_calls or []
        raw = calls[0].function.arguments if calls else None  # type: ignore[union-attr]
        rows.append(
            Row(
                "openai",
                "chat.completions.create()",
                f"arguments {raw!r} (finish_reason {choice.finish_reason!r})",
                "caller decides (json.loads raises)",
                "railings.inspect(completion)",
                _verdict(railings.inspect(completion)),
            )
        )
        done: list[str] = []
        outcome = "get_final_completion() returns"
        with client.chat.completions.stream(
            model="m",
            messages=ASK,
            tools=OPENAI_TOOLS,
            max_tokens=MAX_TOKENS,  # type: ignore[arg-type]
        ) as stream:
            for event in stream:
                if event.type == "tool_calls.function.arguments.done":
                    done.append(event.arguments)
            snapshot = stream.current_completion_snapshot
            try:
                stream.get_final_completion()
            except Exception as error:  # the helper's own refusal, measured
                outcome = f"get_final_completion() raises {type(error).__name__}"
        today = (
            f"event tool_calls.function.arguments.done with {done[0]!r}; "
            if done
            else "no arguments.done event; "
        ) + outcome
        rows.append(
            Row(
                "openai",
                "chat.completions.stream()",
                today,
                "caller decides (the done event carries the fragment)",
                "railings.inspect(stream.current_completion_snapshot)",
                _verdict(railings.inspect(snapshot)),
            )
        )
        rows += _openai_responses(client)
    return rows


def _openai_responses(client: Any) -> list[Row]:
    """The Responses API: ``max_output_tokens``, status ``incomplete``."""
    ask: Any = {
        "model": "m",
        "input": ASK,
        "tools": RESPONSES_TOOLS,
        "max_output_tokens": MAX_TOKENS,
    }
    response = client.responses.create(**ask)
    calls = [item for item in response.output if item.type == "function_call"]
    raw = calls[0].arguments if calls else None
    rows = [
        Row(
            "openai",
            "responses.create()",
            f"arguments {raw!r} (status {response.status!r}, "
            f"{response.incomplete_details.reason if response.incomplete_details else None!r})",
            "caller decides (json.loads raises)",
            "railings.inspect(response)",
            _verdict(railings.inspect(response)),
        )
    ]
    done: list[str] = []
    outcome = "get_final_response() returns"
    final: Any = None
    with client.responses.stream(**ask) as stream:
        for event in stream:
            if event.type == "response.function_call_arguments.done":
                done.append(event.arguments)
            elif event.type in ("response.incomplete", "response.completed"):
                final = event.response
        try:
            stream.get_final_response()
        except Exception as error:  # the helper's own refusal, measured
            outcome = f"get_final_response() raises {type(error).__name__}"
    today = (
        f"event response.function_call_arguments.done with {done[0]!r}; "
        if done
        else "no arguments.done event; "
    ) + outcome
    rows.append(
        Row(
            "openai",
            "responses.stream()",
            today,
            "caller decides (the done event carries the fragment)",
            "railings.inspect(the response.incomplete event's response)",
            "no terminal event" if final is None else _verdict(railings.inspect(final)),
        )
    )
    return rows


def _anthropic() -> list[Row]:
    import anthropic

    rows = []
    with _server() as server:
        client = anthropic.Anthropic(
            base_url=server.anthropic_base_url, api_key="sk-test", max_retries=0
        )
        message = client.messages.create(
            model="m",
            max_tokens=MAX_TOKENS,
            messages=ASK,
            tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
        )
        blocks = [b.model_dump(include={"type", "input"}) for b in message.content]
        rows.append(
            Row(
                "anthropic",
                "messages.create()",
                f"content {blocks} (stop_reason {message.stop_reason!r}): the scripted server "
                "cannot write a cut call into a non-streamed Message (tool_use.input is parsed "
                "JSON), so this row does not measure the SDK",
                "nothing to run",
                "railings.inspect(message)",
                _verdict(railings.inspect(message)),
            )
        )
        with client.messages.stream(
            model="m",
            max_tokens=MAX_TOKENS,
            messages=ASK,
            tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
        ) as stream:
            final = stream.get_final_message()
        uses = [b for b in final.content if b.type == "tool_use"]
        today = (
            f"tool_use.input {uses[0].input!r} (stop_reason {final.stop_reason!r})"
            if uses
            else f"no tool_use (stop_reason {final.stop_reason!r})"
        )
        rows.append(
            Row(
                "anthropic",
                "messages.stream() -> get_final_message()",
                today,
                "caller decides (the input looks valid)",
                "railings.inspect(message)",
                _verdict(railings.inspect(final)),
            )
        )
    return rows


# -- pydantic-ai --------------------------------------------------------------------------------


def _pydantic_ai() -> list[Row]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    settings: Any = {"max_tokens": MAX_TOKENS}

    async def run(agent: Any, streamed: bool) -> list[Any]:
        if streamed:
            async with agent.run_stream("Clean up.", model_settings=settings) as result:
                await result.get_output()
                return list(result.all_messages())
        return list((await agent.run("Clean up.", model_settings=settings)).all_messages())

    rows = []
    for streamed in (False, True):
        spy: list[str] = []
        with _server() as server:
            model = OpenAIChatModel(
                "m", provider=OpenAIProvider(base_url=server.openai_base_url, api_key="sk-test")
            )
            agent = Agent(model)
            agent.tool_plain(_recorder(spy))
            messages = asyncio.run(run(agent, streamed))
            first = next(m for m in messages if isinstance(m, ModelResponse))
            part = next((p for p in first.parts if isinstance(p, ToolCallPart)), None)
            today = (
                f"ToolCallPart.args {part.args!r} (finish_reason {first.finish_reason!r})"
                if part
                else "no tool call"
            )
            rows.append(
                Row(
                    "pydantic-ai",
                    "Agent.run_stream()" if streamed else "Agent.run()",
                    today,
                    _after(server, spy),
                    "no change",
                    "already refuses it; its retry prompt says invalid JSON, not the output limit",
                )
            )
    return rows


# -- LangChain, LangGraph -----------------------------------------------------------------------


def _chat_openai(server: ScriptedServer, streaming: bool | None = None, **options: Any) -> Any:
    from langchain_openai import ChatOpenAI

    # streaming=False set explicitly makes .stream() fall back to one non-streamed call.
    if streaming is not None:
        options["streaming"] = streaming
    return ChatOpenAI(
        base_url=server.openai_base_url,
        api_key="sk-test",  # type: ignore[arg-type]
        model="m",
        max_tokens=MAX_TOKENS,
        **options,  # type: ignore[call-arg]
    )


def _describe_message(message: Any) -> str:
    parts = []
    for call in message.tool_calls:
        parts.append(f"tool_calls args {call['args']!r}")
    for call in message.invalid_tool_calls:
        parts.append(f"invalid_tool_calls args {call['args']!r}")
    chunks = getattr(message, "tool_call_chunks", None)
    if chunks:
        parts.append(f"tool_call_chunks args {chunks[0]['args']!r}")
    blocks = [
        b
        for b in (message.content if isinstance(message.content, list) else ())
        if isinstance(b, dict)
    ]
    for block in blocks if not chunks else ():
        if "partial_json" in block:
            parts.append(f"tool_use.partial_json {block['partial_json']!r}")
        elif block.get("type") == "function_call":
            parts.append(f"function_call.arguments {block.get('arguments')!r}")
    if len(parts) == len(message.tool_calls):  # no raw text anywhere, only LangChain's parse
        parts.append("the raw text is gone")
    return "; ".join(parts) or "no tool call"


def _langchain() -> list[Row]:
    from railings.integrations import inspect_message

    rows = []
    cases: list[tuple[str, Callable[[ScriptedServer, Any], Any]]] = [
        ("ChatOpenAI().invoke()", lambda s, t: _chat_openai(s, False).bind_tools(t).invoke(ASK)),
        (
            "ChatOpenAI(streaming=True).invoke()",
            lambda s, t: _chat_openai(s, True).bind_tools(t).invoke(ASK),
        ),
        ("ChatOpenAI().stream(), chunks added", _accumulate),
        (
            "ChatOpenAI(use_responses_api=True, streaming=True).invoke()",
            lambda s, t: _chat_openai(s, True, use_responses_api=True).bind_tools(t).invoke(ASK),
        ),
    ]
    for name, run in cases:
        with _server() as server:
            message = run(server, [_spy_tool([])])
        repaired = any(c["args"] for c in message.tool_calls)
        rows.append(
            Row(
                "LangChain",
                name,
                _describe_message(message),
                "an agent runs the repaired tool_calls" if repaired else "nothing in tool_calls",
                "inspect_message(message)",
                _verdict(inspect_message(message)),
            )
        )
    return rows


def _accumulate(server: ScriptedServer, tools: Any) -> Any:
    total = None
    for chunk in _chat_openai(server).bind_tools(tools).stream(ASK):
        total = chunk if total is None else total + chunk
    return total


def _chat_anthropic() -> list[Row]:
    from langchain_anthropic import ChatAnthropic

    from railings.integrations import inspect_message

    with _server() as server:
        model = ChatAnthropic(
            base_url=server.anthropic_base_url,
            api_key="sk-test",  # type: ignore[arg-type]
            model="m",
            max_tokens=MAX_TOKENS,
            streaming=True,  # type: ignore[call-arg]
        )
        message = model.bind_tools([_spy_tool([])]).invoke(ASK)
    return [
        Row(
            "LangChain",
            "ChatAnthropic(streaming=True).invoke()",
            _describe_message(message),
            "an agent runs the repaired tool_calls",
            "inspect_message(message)",
            _verdict(inspect_message(message)),
        )
    ]


# How users run an agent. A default ChatOpenAI() is not streamed under agent.invoke(); under
# stream_mode="messages" LangChain streams the model call to feed the stream.
RUNS: dict[str, Callable[[Any], object]] = {
    "agent.invoke()": lambda agent: agent.invoke({"messages": ASK}),
    "agent.stream(stream_mode='messages')": lambda agent: list(
        agent.stream({"messages": ASK}, stream_mode="messages")
    ),
}


def _agent_rows(
    stack: str, factory: str, build: Callable[[Any, Any, bool], Any], fix: str
) -> list[Row]:
    rows = []
    for how, run in RUNS.items():
        results = []
        for guarded in (False, True):
            spy: list[str] = []
            with _server() as server, warnings.catch_warnings():
                warnings.simplefilter("ignore")  # create_react_agent is deprecated in 1.x
                run(build(_chat_openai(server), [_spy_tool(spy)], guarded))
                streamed = server.requests[0].stream
            results.append(_after(server, spy))
        rows.append(
            Row(
                stack,
                f"{factory}, {how}",
                f"the model call {'streams' if streamed else 'does not stream'}: "
                f"as ChatOpenAI({'streaming=True' if streamed else ''}).invoke()",
                results[0],
                fix,
                results[1],
            )
        )
    return rows


def _langgraph() -> list[Row]:
    from langgraph.prebuilt import create_react_agent

    from railings.integrations.langgraph import GuardedToolNode, resend_notices

    def build(model: Any, tools: list[Any], guarded: bool) -> Any:
        if guarded:
            return create_react_agent(
                model, tools=GuardedToolNode(tools), post_model_hook=resend_notices
            )
        return create_react_agent(model, tools=tools)

    return _agent_rows(
        "LangGraph",
        "create_react_agent",
        build,
        "tools=GuardedToolNode(tools), post_model_hook=resend_notices",
    )


def _create_agent() -> list[Row]:
    from langchain.agents import create_agent

    from railings.integrations.langchain import TruncationGuard

    def build(model: Any, tools: list[Any], guarded: bool) -> Any:
        return create_agent(model, tools, middleware=[TruncationGuard()] if guarded else [])

    return _agent_rows("LangChain", "create_agent", build, "middleware=[TruncationGuard()]")


STACKS: dict[str, tuple[Callable[[], list[Row]], str]] = {
    "openai": (_openai, "openai"),
    "anthropic": (_anthropic, "anthropic"),
    "pydantic-ai": (_pydantic_ai, "pydantic-ai-slim[openai]"),
    "langchain": (_langchain, "langchain-openai"),
    "langchain-anthropic": (_chat_anthropic, "langchain-anthropic"),
    "langgraph": (_langgraph, "langgraph langchain-openai"),
    "create-agent": (_create_agent, "langchain langchain-openai"),
}


def measure(stacks: list[str] | None = None) -> list[Row]:
    """Measure the named stacks (all by default); a missing package becomes a row saying so."""
    rows: list[Row] = []
    for name in stacks or list(STACKS):
        run, package = STACKS[name]
        try:
            rows += run()
        except ImportError as error:
            rows.append(
                Row(
                    name, "-", f"not installed ({error.name}): pip install {package}", "-", "-", "-"
                )
            )
    return rows


# -- output ----------------------------------------------------------------------------------

_HEADERS = ("Stack", "Driven as", "The cut call becomes", "Today", "railings fix", "With the fix")


def _markdown(rows: list[Row]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(_HEADERS) + " |", "|" + "---|" * len(_HEADERS)]
    for row in rows:
        values = (row.stack, f"`{row.call}`", row.today, row.runs, f"`{row.fix}`", row.with_fix)
        lines.append("| " + " | ".join(cell(v) for v in values) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.measure_integrations",
        description="What each stack does with a tool call cut at max_tokens, "
        f"measured against the scripted model server (cut at {CUT!r}).",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the rows as JSON")
    output.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument(
        "--only",
        action="append",
        choices=list(STACKS),
        metavar="STACK",
        help=f"measure only this stack (repeatable): {', '.join(STACKS)}",
    )
    args = parser.parse_args(argv)
    rows = measure(args.only)
    if args.json:
        print(
            json.dumps(
                {"cut": CUT, "max_tokens": MAX_TOKENS, "rows": [asdict(row) for row in rows]},
                indent=2,
            )
        )
    elif args.markdown:
        print(_markdown(rows))
    else:
        from rich.table import Table

        from railings.cli._common import console

        table = Table(
            title=f"A shell call cut at {CUT!r} (max_tokens={MAX_TOKENS})", show_lines=True
        )
        for header in _HEADERS:
            table.add_column(header, overflow="fold")  # measured text is never cut short
        for row in rows:
            table.add_row(row.stack, row.call, row.today, row.runs, row.fix, row.with_fix)
        console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
