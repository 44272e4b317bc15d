"""The request an agent sends after each capture: what goes back, and how each call is answered.

A real :class:`Agent` with a real client streams each capture of tests/corpus from a server
on 127.0.0.1, dispatches the turn's calls to tools that answer ``result of NAME``, and
sends its next request: the calls' results; a turn without calls is followed by the next
task, and a paused Anthropic turn is sent back as it is. A turn that did not finish gets
no next request: the run ends there. ``NEXT_REQUEST.tsv`` in each corpus folder lists that
request's messages in the capture's own wire (its header says how they are written), with
the request's output limit at 1024 tokens and at 16, where billed output at the limit
truncates the turn and a call whose completeness cannot be proven goes back unexecuted.

Beside the table, on every capture: each call goes back with its id and is answered, by the
tool's result or by its verdict's notice (which asks for the complete call again); a call
whose arguments did not parse goes back without the arguments the repair ladder would
make of it; each thinking block's signature goes back on the wires that take it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from _server import CannedServer, Recorded, Reply
from conftest import CORPUS, captures, runs
from railings.agent.loop import Agent, RunResult, RunStatus
from railings.dispatch import Tool, ToolRegistry
from railings.messages import Assistant, ToolResult, User
from railings.providers import spec
from railings.providers.openai_chat.encoder import openai_chat_body
from railings.providers.openai_responses.encoder import openai_responses_body
from railings.replay import replay
from railings.transport import AsyncProviderClient, ClientConfig, RetryPolicy, no_waits
from railings.turn.model import Turn
from railings.turn.parts import ThinkingPart
from railings.turn.repair import RepairPolicy, parse_arguments
from railings.turn.verdict import RejectReason, judge

FOLDERS = ("real", "responses", "gemini", "bedrock", "ollama")
LIMITS = (1024, 16)
# The answer each wire's server gives to the next request: a plain text turn of its own.
ANSWERS = {
    "openai": "real/openai/content_logprobs.sse",
    "anthropic": "real/anthropic/stop_sequence.sse",
    "openai-responses": "responses/swiftagent_text_after_tool_gpt5.sse",
    "gemini": "gemini/text_signature_gemini_3_pro.sse",
    "bedrock": "bedrock/text_end_turn.bin",
    "ollama": "ollama/text_stop_qwen3_5.ndjson",
}
WIRE = dict(captures())


def expected() -> dict[str, dict[str, str]]:
    """``folder/file`` -> its row of NEXT_REQUEST.tsv (``#`` lines are comments)."""
    rows: dict[str, dict[str, str]] = {}
    for folder in FOLDERS:
        text = (CORPUS / folder / "NEXT_REQUEST.tsv").read_text(encoding="utf-8")
        header, *lines = [line for line in text.splitlines() if not line.startswith("#")]
        for line in lines:
            row = dict(zip(header.split("\t"), line.split("\t"), strict=True))
            rows[f"{folder}/{row['file']}"] = row
    return rows


EXPECTED = expected()


# -- one agent run over a capture ------------------------------------------------------------


def _tools(turn: Turn) -> ToolRegistry:
    def answering(name: str) -> Tool:
        async def run(**_: Any) -> str:
            return f"result of {name}"

        return Tool(name, "answers", {"type": "object", "properties": {}}, run)

    return ToolRegistry(answering(name) for name in sorted({c.name for c in turn.tool_calls}))


def next_request(path: str, max_tokens: int) -> tuple[RunResult, dict[str, Any] | None]:
    """The agent's run over the capture at ``path`` and the request it sent next (None:
    it sent none)."""
    wire = WIRE[path]
    body = (CORPUS / path).read_bytes()
    kind = (("content-type", spec(wire).content_types[0]),)
    answer = Reply(chunks=[(CORPUS / ANSWERS[wire]).read_bytes()], headers=kind)
    with CannedServer() as server:
        server.push(Reply(chunks=[body], headers=kind), answer, answer)
        config = ClientConfig(
            provider=wire,  # type: ignore[arg-type]
            model="m",
            base_url=server.url + ("/v1" if wire.startswith("openai") else ""),
            api_key="sk-test-next-request-0123456789",
            max_tokens=max_tokens,
            http2=False,
            retry=RetryPolicy(attempts=1),
            region="us-east-1" if wire == "bedrock" else None,
        )

        async def main() -> RunResult:
            async with AsyncProviderClient(config) as client:
                agent = Agent(client, _tools(replay(body, provider=wire).turn), system="s")
                first = await agent.arun("first task")
                if first.status is RunStatus.COMPLETED and len(server.requests) == 1:
                    await agent.arun("second task")  # a turn without calls: the next task
                return first

        with no_waits():
            result = asyncio.run(main())
        requests: list[Recorded] = list(server.requests)
    return result, (requests[1].json() if len(requests) > 1 else None)


# -- the request's messages, as NEXT_REQUEST.tsv writes them ---------------------------------


def _answer(result: Any) -> str:
    """How a result answers its call: the tool ran, a notice instead, or a denial."""
    text = json.dumps(result)
    if "was NOT executed" in text:
        return "(notice)"
    if "was NOT approved" in text:
        return "(denied)"
    return "(ran)" if "result of " in text else "(?)"


def _chat(body: dict[str, Any], _: Turn) -> Iterator[str]:
    for message in body["messages"]:
        role = message["role"]
        if role == "assistant":
            inner = ["text"] if message.get("content") else []
            inner += ["call"] * len(message.get("tool_calls", []))
            inner += ["function_call"] if "function_call" in message else []
            yield f"assistant[{runs(inner)}]"
        else:
            yield role + (_answer(message) if role in ("tool", "function") else "")


def _anthropic(body: dict[str, Any], _: Turn) -> Iterator[str]:
    for message in body["messages"]:
        blocks = [
            b["type"] + (_answer(b) if b["type"] == "tool_result" else "")
            for b in message["content"]
        ]
        yield f"{message['role']}[{runs(blocks)}]"


def _responses(body: dict[str, Any], turn: Turn) -> Iterator[str]:
    as_they_came = [dict(item) for item in turn.output_items]
    for item in body["input"]:
        kind = item.get("type", item.get("role"))
        if kind.endswith(("_output", "_response")):
            kind += _answer(item)
        yield ("=" if item in as_they_came else "") + kind


def _gemini(body: dict[str, Any], _: Turn) -> Iterator[str]:
    for content in body["contents"]:
        parts = []
        for part in content["parts"]:
            if "functionResponse" in part:
                kind = "functionResponse" + _answer(part)
            else:
                kind = "functionCall" if "functionCall" in part else "text"
                kind = "thought" if part.get("thought") else kind
            parts.append(kind + ("+signature" if "thoughtSignature" in part else ""))
        yield f"{content['role']}[{runs(parts)}]"


def _bedrock(body: dict[str, Any], _: Turn) -> Iterator[str]:
    for message in body["messages"]:
        blocks = []
        for block in message["content"]:
            (key,) = block
            if key == "reasoningContent":
                said = block[key].get("reasoningText", {})
                key = "reasoning+signature" if said.get("signature") else "reasoning"
                key = "redacted" if "redactedContent" in block["reasoningContent"] else key
            blocks.append(key + (_answer(block) if key == "toolResult" else ""))
        yield f"{message['role']}[{runs(blocks)}]"


def _ollama(body: dict[str, Any], _: Turn) -> Iterator[str]:
    for message in body["messages"]:
        role = message["role"]
        if role == "assistant":
            inner = ["thinking"] if message.get("thinking") else []
            inner += ["text"] if message.get("content") else []
            inner += ["call"] * len(message.get("tool_calls", []))
            yield f"assistant[{runs(inner)}]"
        else:
            yield role + (_answer(message) if role == "tool" else "")


SHAPES = {
    "openai": _chat,
    "anthropic": _anthropic,
    "openai-responses": _responses,
    "gemini": _gemini,
    "bedrock": _bedrock,
    "ollama": _ollama,
}


def messages(path: str, body: dict[str, Any] | None, turn: Turn) -> str:
    return "-" if body is None else runs(list(SHAPES[WIRE[path]](body, turn)))


def strings(value: Any) -> Iterator[Any]:
    """Every value in a JSON document, depth first (objects and arrays included)."""
    yield value
    children = value.values() if isinstance(value, dict) else value
    if isinstance(value, dict | list):
        for child in children:
            yield from strings(child)


# -- the tests -----------------------------------------------------------------------------


def test_every_capture_has_its_expected_next_request() -> None:
    assert set(EXPECTED) == set(WIRE)


@pytest.mark.parametrize("max_tokens", LIMITS)
@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_the_next_request_after_each_capture(path: str, max_tokens: int) -> None:
    result, body = next_request(path, max_tokens)
    turn = result.turns[0] if result.turns else None
    row = EXPECTED[path]
    want = row[f"next_{max_tokens}"]
    want = row["next_1024"] if want == "=" else want
    if body is None or turn is None:
        # A turn that did not finish is never continued: the run ends with it.
        assert want == "-" and result.status in (RunStatus.INTERRUPTED, RunStatus.ERROR)
        assert turn is None or not turn.complete
        return
    assert messages(path, body, turn) == want
    sent = list(strings(body))
    for verdict in judge(turn):
        call = verdict.call
        if call.id:
            assert call.id in sent, call  # the call and its answer are tied by its id
        if call.arguments is None:  # never parsed: it goes back as it came, not repaired
            repaired = parse_arguments(call.raw_arguments, RepairPolicy.REPAIR_ALLOWED)
            assert repaired is None or repaired.value not in sent
        if verdict.execute:
            continue  # answered by the tool, or by a denial: the table says which
        # Not executed: answered by its notice, which asks for the call again; a cut one,
        # in full.
        assert verdict.notice is not None and verdict.notice in sent
        assert "was NOT executed" in verdict.notice and "Resend this tool call" in verdict.notice
        if verdict.reason is RejectReason.TRUNCATED:
            assert "Resend this tool call in full, with complete arguments" in verdict.notice
    if WIRE[path] in ("anthropic", "bedrock", "gemini"):  # the wires that take thinking back
        signed = [p.signature for p in turn.parts if isinstance(p, ThinkingPart) and p.signature]
        assert all(signature in sent for signature in signed)


def _cut() -> tuple[Turn, dict[str, Any]]:
    turn = replay((CORPUS / "real/anthropic/max_tokens_inside_tool_input.sse").read_bytes()).turn
    (call,) = turn.tool_calls
    repaired = parse_arguments(call.raw_arguments, RepairPolicy.REPAIR_ALLOWED)
    assert call.arguments is None and repaired is not None  # the ladder could close it
    return turn, repaired.value


def test_a_cut_call_goes_back_unrepaired_beside_its_notice() -> None:
    turn, repaired = _cut()
    (call,) = turn.tool_calls
    result, body = next_request("real/anthropic/max_tokens_inside_tool_input.sse", 1024)
    assert result.status is RunStatus.COMPLETED and body is not None
    assistant, answer = body["messages"][1:]
    (use,) = [b for b in assistant["content"] if b["type"] == "tool_use"]
    assert (use["id"], use["name"], use["input"]) == (call.id, "make_file", {})
    (block,) = answer["content"]
    assert block["tool_use_id"] == call.id and block["is_error"] is True
    assert block["content"].startswith("Tool call 'make_file' (id toolu_")
    assert "stopped at the output limit (stop_reason: max_tokens)" in block["content"]
    assert repaired not in list(strings(body))


def test_a_cut_call_goes_back_as_the_model_wrote_it_on_the_openai_wires() -> None:
    turn, repaired = _cut()
    (call,) = turn.tool_calls
    (verdict,) = judge(turn)
    history = [User("u"), Assistant.from_turn(turn), ToolResult(call.id, verdict.notice or "")]
    chat = openai_chat_body("m", history, max_tokens=5)
    (sent,) = chat["messages"][1]["tool_calls"]
    assert sent["function"]["arguments"] == call.raw_arguments
    assert not call.raw_arguments.rstrip().endswith("}")  # cut inside a string of the array
    items = openai_responses_body("m", history, max_tokens=5)["input"]
    (item,) = [i for i in items if i.get("type") == "function_call"]
    assert item["arguments"] == call.raw_arguments
    for body in (chat, {"input": items}):
        assert repaired not in list(strings(body))
        assert verdict.notice in list(strings(body))
