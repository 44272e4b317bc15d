"""Verdicts for LangChain chat messages, read by shape: nothing here imports langchain.

``inspect_message(message)`` takes the ``AIMessage`` (or accumulated
``AIMessageChunk``) a LangChain chat model returned and gives the same
:class:`~railings.replay.Replay` as ``railings.inspect`` does for an SDK object:
the message is turned into the core's events and fed to the one
:class:`~railings.turn.assembler.TurnAssembler` and :func:`~railings.turn.verdict.judge`.

Where LangChain keeps the model's own argument text (measured on langchain-core 1.8,
langchain-openai 1.7, langchain-anthropic 1.7; see ``make measure`` in the repository):

==========================================  ===================================================
``AIMessageChunk.tool_call_chunks[].args``  the raw text of a streamed call (``.stream()``)
``invalid_tool_calls[].args``               the raw text of a call LangChain could not parse
                                            (non-streamed ChatOpenAI: a cut call lands here)
``additional_kwargs["tool_calls"]``         the raw ``function.arguments`` (older integrations)
content block ``tool_use.partial_json``     streamed ChatAnthropic keeps the raw text here
content block ``function_call.arguments``   the Responses API (``use_responses_api=True``)
``tool_calls[].args``                       LangChain's parse only -- *lenient* when streamed
==========================================  ===================================================

What a message cannot prove. ``ChatOpenAI(streaming=True).invoke()`` -- which is
how an agent calls its model -- returns an ``AIMessage`` built from the merged
chunks with the chunks dropped: only the repaired ``tool_calls`` remain (a cut
``{"command": "rm -rf /tmp/leg`` becomes ``{"command": "rm -rf /tmp/leg"}``). The
same holds for ChatAnthropic's non-streamed ``tool_use.input``. Such a call's
arguments arrived parsed: in a message that stopped at the output limit, *every*
call whose raw text is gone is judged unproven and never executed -- the one rule
of ``turn/verdict.py`` (rule 2), the same as ``railings.inspect`` applies to an
anthropic ``Message`` and the stream decoders to an object on the wire. Not only
the last: LangChain itself reorders calls (below), so "the cut is in the last
call" is not something the message can prove. A call whose raw text LangChain
kept is judged by that text, strictly.

Order. The verdicts follow the order the model wrote the calls in, read from the
content blocks, the chunks or ``additional_kwargs`` when LangChain kept them. A
non-streamed message splits its calls into ``tool_calls`` and ``invalid_tool_calls``
and loses that order; the unparseable ones are put last, since a cut ends the output.

The termination proof is taken as given: a message exists only once LangChain
decided the response was over (the guard transport checks the wire itself).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from railings.events import (
    MessageStart,
    StopReason,
    StreamEvent,
    TerminationProof,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    UsageUpdate,
)
from railings.replay import Replay
from railings.turn.assembler import TurnAssembler
from railings.turn.verdict import CallVerdict, judge
from railings.wire._json import as_int

__all__ = ["find_message", "inspect_message", "messages_of", "stop_reason_of", "verdict_for"]

# response_metadata keys that carry the stop reason, in the order they are read:
# OpenAI-compatible chat, Anthropic, Bedrock Converse, Ollama.
_STOP_KEYS = ("finish_reason", "stop_reason", "stopReason", "done_reason")


@dataclass(slots=True)
class _Call:
    id: str
    name: str = ""
    raw: str | None = None  # the model's own text, where LangChain kept it
    parsed: Any = None  # LangChain's parse, lenient when streamed


def stop_reason_of(metadata: Mapping[str, Any]) -> str | None:
    """The wire stop reason in a message's ``response_metadata``, or None."""
    for key in _STOP_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
    status = metadata.get("status")  # the Responses API
    if status == "incomplete":
        details = metadata.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        return str(reason or "max_output_tokens")
    if isinstance(status, str) and status:
        return status
    return None


def inspect_message(message: Any, *, max_tokens: int | None = None) -> Replay:
    """The turn verdict for a LangChain ``AIMessage`` (see the module docstring)."""
    metadata = _mapping(getattr(message, "response_metadata", None))
    wire = stop_reason_of(metadata)
    provider = str(metadata.get("model_provider") or "langchain")
    assembler = TurnAssembler(provider, max_tokens=max_tokens)
    assembler.received()
    for event in _events(message, metadata, wire):
        assembler.apply(event)
    assembler.eof()
    turn = assembler.turn()
    return Replay(turn, judge(turn))


def verdict_for(message: Any, call_id: str, *, max_tokens: int | None = None) -> CallVerdict | None:
    """railings' verdict for the call ``call_id`` of ``message``, or None if it has none;
    ``max_tokens``: the request's output limit (billed output that reached it is
    truncation, whatever the stop reason)."""
    for verdict in inspect_message(message, max_tokens=max_tokens).verdicts:
        if verdict.call.id == call_id:
            return verdict
    return None


def messages_of(state: Any, key: str = "messages") -> Sequence[Any]:
    """The message list of a graph state: a list, a dict, or an object with ``key``."""
    if isinstance(state, list | tuple):
        return state
    value = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    return value if isinstance(value, list | tuple) else ()


def find_message(messages: Sequence[Any], call_id: str) -> Any | None:
    """The latest AI message that made the call ``call_id``."""
    for message in reversed(messages):
        if getattr(message, "type", None) not in ("ai", "AIMessageChunk"):
            continue
        if any(call.id == call_id for call in _calls(message)):
            return message
    return None


# -- reading a message ---------------------------------------------------------------------


def _events(message: Any, metadata: Mapping[str, Any], wire: str | None) -> list[StreamEvent]:
    events: list[StreamEvent] = [
        MessageStart(
            id=str(metadata.get("id") or getattr(message, "id", None) or ""),
            model=str(metadata.get("model_name") or metadata.get("model") or ""),
        )
    ]
    text = _text(getattr(message, "content", None))
    if text:
        events.append(TextDelta(text=text))
    for position, call in enumerate(_calls(message)):
        gone = call.raw is None  # LangChain's parse is all there is, and proves nothing
        parsed = call.parsed if isinstance(call.parsed, dict) else {}
        events.append(
            ToolCallStart(
                index=position,
                id=call.id,
                name=call.name,
                initial_arguments=json.dumps(parsed) if gone else "",
                initial_parsed=gone,
            )
        )
        if call.raw:
            events.append(ToolArgumentsDelta(index=position, fragment=call.raw))
        events.append(ToolCallEnd(index=position))
    if wire is not None:
        events.append(StopReason(wire=wire))
    usage = _mapping(getattr(message, "usage_metadata", None))
    if usage:
        events.append(
            UsageUpdate(
                input_tokens=as_int(usage.get("input_tokens")),
                output_tokens=as_int(usage.get("output_tokens")),
            )
        )
    events.append(TerminationProof(marker="langchain"))
    return events


def _calls(message: Any) -> list[_Call]:
    """Every tool call of ``message`` in the order the model wrote them, with its raw text
    from wherever LangChain kept it (see the module table)."""
    calls: dict[str, _Call] = {}

    def seen(ident: Any, name: Any) -> _Call:
        key = str(ident or f"#{len(calls)}")
        call = calls.setdefault(key, _Call(key))
        call.name = call.name or str(name or "")
        return call

    def keep_raw(call: _Call, raw: Any) -> None:
        if call.raw is None and isinstance(raw, str):
            call.raw = raw

    content = getattr(message, "content", None)
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "tool_use":
            call = seen(block.get("id"), block.get("name"))
            keep_raw(call, block.get("partial_json"))
            if call.parsed is None and isinstance(block.get("input"), dict):
                call.parsed = block["input"]
        elif kind == "function_call":
            keep_raw(
                seen(block.get("call_id") or block.get("id"), block.get("name")),
                block.get("arguments"),
            )
        elif kind in ("tool_call_chunk", "invalid_tool_call"):
            keep_raw(seen(block.get("id"), block.get("name")), block.get("args"))
    # Streamed chunks: continuation pieces carry only the index, so join by index first.
    by_index: dict[Any, list[Mapping[str, Any]]] = {}
    for chunk in getattr(message, "tool_call_chunks", None) or ():
        by_index.setdefault(chunk.get("index"), []).append(chunk)
    for pieces in by_index.values():
        ident = next((p.get("id") for p in pieces if p.get("id")), None)
        name = next((p.get("name") for p in pieces if p.get("name")), None)
        keep_raw(seen(ident, name), "".join(str(p.get("args") or "") for p in pieces))
    kwargs = _mapping(getattr(message, "additional_kwargs", None))
    for raw_call in kwargs.get("tool_calls") or ():
        if isinstance(raw_call, Mapping):
            function = _mapping(raw_call.get("function"))
            keep_raw(seen(raw_call.get("id"), function.get("name")), function.get("arguments"))
    for parsed in getattr(message, "tool_calls", None) or ():
        call = seen(parsed.get("id"), parsed.get("name"))
        if isinstance(parsed.get("args"), dict):
            call.parsed = parsed["args"]
    # LangChain splits a non-streamed message's calls into two lists and loses their order.
    # The ones it could not parse go last; they keep their raw text and are judged by it.
    for invalid in getattr(message, "invalid_tool_calls", None) or ():
        keep_raw(seen(invalid.get("id"), invalid.get("name")), invalid.get("args"))
    return list(calls.values())


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(b.get("text") or "")
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
