"""Verdicts for the objects the official SDKs return, with no network and no SDK import.

``railings.inspect(obj)`` takes an ``openai`` ``ChatCompletion`` (returned whole, or
accumulated from a stream), an ``openai`` Responses ``Response`` or an ``anthropic``
``Message`` -- or the plain dict of any of them -- and returns the same
:class:`~railings.replay.Replay` that ``railings replay`` gives for the stream. The
google-genai, boto3 ``converse_stream`` and ollama objects are read by
:mod:`railings.sdk_formats`, through their wires' decoders.

Theory of operation. The object is recognized by its shape (``model_dump()`` when
it has one, then its keys), turned into the core's normalized events, and fed
to the same :class:`~railings.turn.assembler.TurnAssembler` and the same verdict
function as a live stream: there is no second verdict path.

What an object cannot prove. An SDK object exists only once the SDK decided the
response was over: the termination proof is taken as given (the guard transport,
``railings.guard``, is what checks it on the wire). Where the arguments came from
matters, exactly as in a stream (``turn/verdict.py``, rule 2):

* OpenAI and the Responses API keep each call's arguments as the raw string the
  model wrote: it is parsed strictly, exactly as in a stream. An object in
  ``function.arguments`` (some compatible servers) is marked as parsed upstream.
  The legacy ``message.function_call`` (``functions=``) is one more call, without id.
* Anthropic ``Message`` objects keep ``tool_use.input`` already parsed -- and the
  SDK's stream accumulator parses a cut fragment leniently (into ``{}`` or a
  partial object). The raw text is gone, so in a message that stopped at
  ``max_tokens`` *every* ``tool_use`` block is unproven and never executed, the
  same rule as every other call whose arguments arrived parsed.
* Responses items the client must act on (``custom_tool_call``,
  ``local_shell_call``, ``apply_patch_call`` ... see
  :mod:`railings.providers.openai_responses.items`) become calls as in a stream.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from railings import sdk_formats
from railings.errors import ConfigurationError
from railings.events import (
    MessageStart,
    ProviderErrorEvent,
    RefusalDelta,
    ServerToolResult,
    StopReason,
    StreamEvent,
    TerminationProof,
    TextDelta,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unknown,
    UsageUpdate,
)
from railings.providers import anthropic, openai_chat, openai_responses
from railings.providers.anthropic.decoder import TOOL_KINDS
from railings.providers.openai_responses.items import LOCAL_ITEMS, SERVER_ITEMS, final_input
from railings.replay import Replay
from railings.turn.assembler import TurnAssembler
from railings.turn.verdict import judge
from railings.wire._json import as_int

__all__ = ["inspect"]


def inspect(
    obj: Any,
    *,
    max_tokens: int | None = None,
    request_chars: int | None = None,
) -> Replay:
    """The turn verdict for an SDK response object (see the module docstring).
    ``max_tokens``: the output limit the request was sent with; billed output that
    reached it truncates the turn whatever its stop reason (docs/verdicts.md).
    ``request_chars``: the size of the request's text
    (:func:`railings.turn.usage.request_chars`), from which an input count the object
    lacks is estimated; without it, that count is unknown."""
    provider, events = _is_other_format(obj) or _own_format(obj)
    return _judged(provider, events, max_tokens=max_tokens, request_chars=request_chars)


def _own_format(obj: Any) -> tuple[str, list[StreamEvent]]:
    """The wire and events of an openai or anthropic object (or its dict)."""
    data = _as_dict(obj)
    if "choices" in data:
        return openai_chat.SPEC.name, _chat_completion(data)
    if data.get("object") == "response" or ("output" in data and "status" in data):
        return openai_responses.SPEC.name, _response(data)
    if data.get("type") == "message" or ("content" in data and data.get("role") == "assistant"):
        return anthropic.SPEC.name, _message(data)
    raise ConfigurationError(
        "inspect() takes an openai ChatCompletion or Response, an anthropic Message, a "
        "google-genai GenerateContentResponse, boto3 converse_stream events or an "
        f"ollama ChatResponse or GenerateResponse (or their dicts); got {type(obj).__name__}"
    )


def _is_other_format(obj: Any) -> tuple[str, list[StreamEvent]] | None:
    """Gemini, Bedrock and Ollama objects (:mod:`railings.sdk_formats`), unless ``obj`` has
    the shape of one of the three above (theirs are checked first, as before)."""
    data = obj if isinstance(obj, Mapping) else None
    if data is not None and ("choices" in data or "output" in data or "content" in data):
        return None
    return sdk_formats.read(obj)


def _judged(
    provider: str,
    events: list[StreamEvent],
    *,
    max_tokens: int | None,
    request_chars: int | None,
) -> Replay:
    assembler = TurnAssembler(provider, max_tokens=max_tokens, request_chars=request_chars)
    assembler.received()
    for event in events:
        assembler.apply(event)
    assembler.eof()
    turn = assembler.turn()
    return Replay(turn, judge(turn))


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        # SDK models hold block types newer than their unions; skip pydantic's warnings.
        value = dump(warnings=False)
        if isinstance(value, dict):
            return value
    raise ConfigurationError(f"inspect() cannot read a {type(obj).__name__}")


def _start(data: dict[str, Any]) -> MessageStart:
    return MessageStart(id=str(data.get("id") or ""), model=str(data.get("model") or ""))


def _usage(usage: Any, input_key: str, output_key: str) -> list[StreamEvent]:
    if not isinstance(usage, dict):
        return []
    return [
        UsageUpdate(
            input_tokens=as_int(usage.get(input_key)),
            output_tokens=as_int(usage.get(output_key)),
        )
    ]


def _chat_completion(data: dict[str, Any]) -> list[StreamEvent]:
    events: list[StreamEvent] = [_start(data)]
    choices = [c for c in data.get("choices") or [] if isinstance(c, dict)]
    choice = next((c for c in choices if c.get("index", 0) == 0), None)
    if choice is not None:
        message = choice.get("message") or {}
        if isinstance(message.get("reasoning_content"), str):
            events.append(ThinkingDelta(text=message["reasoning_content"]))
        if isinstance(message.get("content"), str):
            events.append(TextDelta(text=message["content"]))
        if isinstance(message.get("refusal"), str):
            events.append(RefusalDelta(text=message["refusal"]))
        calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        for position, call in enumerate(calls):
            events += _chat_call(position, str(call.get("id") or ""), call.get("function"))
        legacy = message.get("function_call")  # ``functions=``: one call, no id
        if isinstance(legacy, dict) and legacy:
            events += _chat_call(len(calls), "", legacy)
        if choice.get("finish_reason"):
            events.append(StopReason(wire=str(choice["finish_reason"])))
    events += _usage(data.get("usage"), "prompt_tokens", "completion_tokens")
    events.append(TerminationProof(marker="chat.completion"))
    return events


def _chat_call(position: int, ident: str, function: object) -> list[StreamEvent]:
    """One call of a ChatCompletion message: a ``tool_calls`` entry's ``function``, or the
    legacy ``function_call`` (``{"name", "arguments"}``)."""
    if not isinstance(function, dict):
        function = {}
    arguments = function.get("arguments")
    parsed = arguments is not None and not isinstance(arguments, str)
    if parsed:
        arguments = json.dumps(arguments)  # an object: parsed upstream, proves nothing
    events: list[StreamEvent] = [
        ToolCallStart(index=position, id=ident, name=str(function.get("name") or ""))
    ]
    if arguments:
        events.append(ToolArgumentsDelta(index=position, fragment=str(arguments), parsed=parsed))
    events.append(ToolCallEnd(index=position))
    return events


def _response(data: dict[str, Any]) -> list[StreamEvent]:
    events: list[StreamEvent] = [_start(data)]
    position = 0
    for item in data.get("output") or []:
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    events.append(TextDelta(text=part["text"]))
                elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                    events.append(RefusalDelta(text=part["refusal"]))
        elif kind == "reasoning":
            for part in item.get("summary") or []:
                if isinstance(part.get("text"), str):
                    events.append(ThinkingDelta(text=part["text"]))
        elif kind in LOCAL_ITEMS:
            local = LOCAL_ITEMS[kind]
            ident = str(item.get("call_id") or item.get("id") or "")
            name = str(item.get("name") or local.name)
            events.append(
                ToolCallStart(index=position, id=ident, name=name, call_type=local.call_type)
            )
            raw, parsed = final_input(kind, item)
            if raw:
                events.append(ToolArgumentsDelta(index=position, fragment=raw, parsed=parsed))
            if item.get("status") != "incomplete":
                events.append(ToolCallEnd(index=position))
            position += 1
        elif kind in SERVER_ITEMS:
            ident = str(item.get("id") or "")
            tool_kind, name = SERVER_ITEMS[kind]
            events.append(
                ToolCallStart(
                    index=position,
                    id=ident,
                    name=name or str(item.get("name") or kind),
                    kind=tool_kind,
                )
            )
            raw, _ = final_input(kind, item)
            if raw:
                events.append(ToolArgumentsDelta(index=position, fragment=raw))
            events.append(ToolCallEnd(index=position))
            events.append(ServerToolResult(tool_use_id=ident, type=kind))
            position += 1
        elif kind not in ("mcp_list_tools",):
            events.append(Unknown(name=f"openai-responses:item:{kind}"))  # counted, never dropped
    events += _usage(data.get("usage"), "input_tokens", "output_tokens")
    status = data.get("status")
    if status == "completed":
        events.append(TerminationProof(marker="response.completed"))
    elif status == "incomplete":
        details = data.get("incomplete_details") or {}
        if details.get("reason"):
            events.append(StopReason(wire=str(details["reason"])))
        events.append(TerminationProof(marker="response.incomplete"))
    elif status == "failed":
        error = data.get("error") or {}
        events.append(
            ProviderErrorEvent(
                message=str(error.get("message") or "response failed"),
                provider_type=error.get("code"),
            )
        )
    return events


def _message(data: dict[str, Any]) -> list[StreamEvent]:
    events: list[StreamEvent] = [_start(data)]
    blocks = [b for b in data.get("content") or [] if isinstance(b, dict)]
    position = 0
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            events.append(TextDelta(text=block["text"]))
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            events.append(
                ThinkingDelta(text=block["thinking"], signature=str(block.get("signature") or ""))
            )
        elif kind == "redacted_thinking":
            events.append(ThinkingDelta(text="", redacted=str(block.get("data") or "")))
        elif kind in TOOL_KINDS:
            # The raw input is gone: the SDK's parse of it is all there is (module docstring).
            events.append(
                ToolCallStart(
                    index=position,
                    id=str(block.get("id") or ""),
                    name=str(block.get("name") or ""),
                    kind=TOOL_KINDS[kind],
                    initial_arguments=json.dumps(block.get("input") or {}),
                    initial_parsed=True,
                )
            )
            events.append(ToolCallEnd(index=position))
            position += 1
        elif isinstance(kind, str) and kind.endswith("_tool_result"):
            events.append(
                ServerToolResult(tool_use_id=str(block.get("tool_use_id") or ""), type=kind)
            )
    if data.get("stop_reason"):
        events.append(StopReason(wire=str(data["stop_reason"])))
    events += _usage(data.get("usage"), "input_tokens", "output_tokens")
    events.append(TerminationProof(marker="message"))
    return events
