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
consecutive contents of one role are merged; a ``thoughtSignature`` goes back on the
part it came with, as the turn's parts order them: a thought part's own on it, one
that came alone on the text part before it (Gemini signs the empty text part that
ends an answer) or, when only calls follow it, on the first function call. Gemini 3
refuses a function call sent back without its signature (and checks no other
part's): when the turn's parts merged the call's signature into the thought before
it, the call gets it back. Thinking from another wire (Anthropic's redacted blocks, provider-run
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
from railings.messages import _check_max_tokens, _role_turns

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
    body: dict[str, Any] = {
        "contents": _role_turns(messages, lambda m: _parts(m, names), model="model", key="parts"),
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
    blocks = [b for b in message.blocks if isinstance(b, Text | Thinking | ToolUse)]
    has_calls = any(isinstance(b, ToolUse) for b in blocks)
    parts: list[dict[str, Any]] = []
    held = ""  # a signature that came before the part it rides on
    call_signature = ""
    for position, block in enumerate(blocks):
        match block:
            case Text(text=text) if text:
                parts.append(_signed({"text": text}, held))
                held = ""
            case Thinking(text=text, signature=signature) if text:
                parts.append(_signed({"text": text, "thought": True}, signature or held))
                held = ""
            case Thinking(signature=signature) if signature:
                # A signature alone: the first call's when only calls follow it, else the
                # part it came after (Gemini signs the text part it ends), else the next.
                if has_calls and all(isinstance(b, ToolUse) for b in blocks[position + 1 :]):
                    call_signature = call_signature or signature
                elif parts and _SIGNATURE not in parts[-1]:
                    parts[-1][_SIGNATURE] = signature
                else:
                    held = held or signature
            case ToolUse(id=ident, name=name, arguments=arguments):
                # A call whose arguments did not parse was never executed (its result is
                # the rejection notice): ``{}`` stands in, as for the other wires.
                call: dict[str, Any] = {"name": name, "args": dict(arguments or {})}
                if ident:
                    call = {"id": ident, **call}
                parts.append({"functionCall": call})
    calls = [p for p in parts if "functionCall" in p]
    if calls and not call_signature:
        # The call's signature closed the thought before it (the turn's parts merge an
        # unsigned thought with the signature that followed it): Gemini 3 refuses a call
        # without one, and checks no other part's, so the call gets it back.
        thoughts = [p for p in parts if p.get("thought") and _SIGNATURE in p]
        if thoughts:
            call_signature = thoughts[-1].pop(_SIGNATURE)
    if calls and call_signature:
        calls[0][_SIGNATURE] = call_signature
    elif held and parts:
        parts[-1].setdefault(_SIGNATURE, held)
    return parts


def _signed(part: dict[str, Any], signature: str) -> dict[str, Any]:
    if signature:
        part[_SIGNATURE] = signature
    return part
