"""The conversation as a Gemini ``streamGenerateContent`` request body.

``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` (the model is in the
path, not the body; Vertex AI takes the same body). The body, as the Gemini API
reference names its fields:

* ``systemInstruction``: ``{"parts": [{"text": ...}]}``, the system messages joined
  by a blank line;
* ``contents``: the history as ``{"role": "user" | "model", "parts": [...]}``, where
  a part is ``{"text"}``, ``{"text", "thought": true}`` (reasoning),
  ``{"functionCall": {"id"?, "name", "args"}}`` or
  ``{"functionResponse": {"id"?, "name", "response": {"output" | "error": ...}}}``
  (the reference: "Use 'output' key to specify function output and 'error' key to
  specify error details");
* ``tools``: ``[{"functionDeclarations": [{"name", "description",
  "parametersJsonSchema"}]}]`` -- the JSON schema as railings holds it, not
  translated to the OpenAPI subset that ``parameters`` takes;
* ``generationConfig.maxOutputTokens``: the output limit.

Wire rules kept here: every ``functionResponse`` answering one model turn goes in one
user content (the API wants as many response parts as there were call parts), so
consecutive contents of one role are merged; a ``thoughtSignature`` goes back where
Gemini puts it: on the first function call of a turn with calls (Gemini 3 refuses a
function call sent back without its signature), else on the thought part it closed,
or on the last part when it came alone (the empty text part that ends a text
answer). Thinking from another wire (Anthropic's redacted blocks, provider-run
blocks, Responses items) is not sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from railings.conversation import (
    Assistant,
    Message,
    System,
    Text,
    Thinking,
    ToolResult,
    ToolSpec,
    ToolUse,
    User,
    call_names,
)
from railings.errors import ConfigurationError
from railings.messages import _check_max_tokens

__all__ = ["gemini_body", "gemini_function_response"]

_SIGNATURE = "thoughtSignature"


def gemini_body(
    messages: Sequence[Message],
    *,
    max_tokens: int,
    tools: Sequence[ToolSpec] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``streamGenerateContent`` body for ``messages`` (the module docstring)."""
    _check_max_tokens(max_tokens)
    names = call_names(messages)
    system = [m.text for m in messages if isinstance(m, System)]
    contents: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, System):
            continue
        role = "model" if isinstance(message, Assistant) else "user"
        parts = _parts(message, names)
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"] += parts
        else:
            contents.append({"role": role, "parts": parts})
    body: dict[str, Any] = {
        "contents": contents,
        "generationConfig": {"maxOutputTokens": max_tokens},
    }
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    if tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": t.name,
                        "description": t.description,
                        "parametersJsonSchema": dict(t.parameters),
                    }
                    for t in tools
                ]
            }
        ]
    if extra:
        body.update(extra)
    return body


def gemini_function_response(result: ToolResult, name: str = "") -> dict[str, Any]:
    """One ``functionResponse`` part: the result as ``output``, or as ``error`` when the
    call failed; ``name`` (else ``result.name``) is the called function's."""
    response: dict[str, Any] = {"error" if result.is_error else "output": result.content}
    function: dict[str, Any] = {"name": name or result.name, "response": response}
    if result.call_id:
        function = {"id": result.call_id, **function}
    return {"functionResponse": function}


def _parts(message: Message, names: Mapping[str, str]) -> list[dict[str, Any]]:
    match message:
        case User(text=text):
            return [{"text": text}] if text else []
        case ToolResult():
            return [gemini_function_response(message, names.get(message.call_id, ""))]
        case Assistant():
            return _model_parts(message)
    raise ConfigurationError(f"not a message: {message!r}")


def _model_parts(message: Assistant) -> list[dict[str, Any]]:
    with_calls = bool(message.tool_calls)
    parts: list[dict[str, Any]] = []
    signatures: list[str] = []  # in a turn with calls, every one goes to the first call
    loose: list[str] = []  # signatures that came on no thought text of their own
    for block in message.blocks:
        match block:
            case Text(text=text) if text:
                parts.append({"text": text})
            case Thinking(text=text, signature=signature):
                if text:
                    part: dict[str, Any] = {"text": text, "thought": True}
                    if signature and not with_calls:
                        part[_SIGNATURE] = signature
                    parts.append(part)
                    if signature and with_calls:
                        signatures.append(signature)
                elif signature:
                    (signatures if with_calls else loose).append(signature)
            case ToolUse(id=ident, name=name, arguments=arguments):
                # A call whose arguments did not parse was never executed (its result is
                # the rejection notice): ``{}`` stands in, as for the other wires.
                call: dict[str, Any] = {"name": name, "args": dict(arguments or {})}
                if ident:
                    call = {"id": ident, **call}
                parts.append({"functionCall": call})
    # Gemini signs the first function call of a step (the merge of the turn's parts
    # cannot say which part a signature rode on: the documented place is the one used),
    # and the last part of an answer without calls.
    pending = signatures or loose
    if pending and parts:
        calls = [p for p in parts if "functionCall" in p]
        target = calls[0] if calls else parts[-1]
        target.setdefault(_SIGNATURE, pending[0])
    return parts
