"""The conversation as a Bedrock ``ConverseStream`` request body.

``POST /model/{modelId}/converse-stream`` (the model is in the path, not the body).
The body, as the Converse API reference names its fields:

* ``system``: ``[{"text": ...}]``, one block per system message;
* ``messages``: ``{"role": "user" | "assistant", "content": [block, ...]}``, where a
  block is ``{"text"}``, ``{"reasoningContent": {"reasoningText": {"text",
  "signature"}}}`` or ``{"reasoningContent": {"redactedContent"}}`` (sent back as
  they came: Anthropic models on Bedrock verify them), ``{"toolUse": {"toolUseId",
  "name", "input"}}`` or ``{"toolResult": {"toolUseId", "content": [{"text"}],
  "status"}}`` (``status: "error"`` for a failed call);
* ``toolConfig``: ``{"tools": [{"toolSpec": {"name", "description",
  "inputSchema": {"json": schema}}}]}``;
* ``inferenceConfig.maxTokens``: the output limit.

Wire rules kept here: messages alternate roles, so consecutive messages of one role
are merged (a turn's tool results and the user text after them are one user
message, results first); Bedrock refuses a blank text block, so none is sent;
provider-run blocks and Responses items are another API's and are not sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from railings.conversation import (
    Assistant,
    Block,
    Message,
    RedactedThinking,
    System,
    Text,
    Thinking,
    ToolResult,
    ToolSpec,
    ToolUse,
    User,
)
from railings.errors import ConfigurationError
from railings.messages import _check_max_tokens, _role_turns

__all__ = ["bedrock_body", "bedrock_tool_result"]


def bedrock_body(
    messages: Sequence[Message],
    *,
    max_tokens: int,
    tools: Sequence[ToolSpec] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``ConverseStream`` body for ``messages`` (the module docstring)."""
    _check_max_tokens(max_tokens)
    wire = _role_turns(messages, _blocks, leads=lambda b: "toolResult" in b)
    body: dict[str, Any] = {"messages": wire, "inferenceConfig": {"maxTokens": max_tokens}}
    system = [{"text": m.text} for m in messages if isinstance(m, System) and m.text]
    if system:
        body["system"] = system
    if tools:
        body["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": t.name,
                        "description": t.description,
                        "inputSchema": {"json": dict(t.parameters)},
                    }
                }
                for t in tools
            ]
        }
    if extra:
        body.update(extra)
    return body


def bedrock_tool_result(result: ToolResult) -> dict[str, Any]:
    """One ``toolResult`` block (``status: "error"`` when the call failed)."""
    block: dict[str, Any] = {
        "toolUseId": result.call_id,
        "content": [{"text": result.content or " "}],  # a blank text block is refused
    }
    if result.is_error:
        block["status"] = "error"
    return {"toolResult": block}


def _blocks(message: Message) -> list[dict[str, Any]]:
    match message:
        case User(text=text):
            return [{"text": text}] if text.strip() else []
        case ToolResult():
            return [bedrock_tool_result(message)]
        case Assistant(blocks=blocks):
            return [b for b in map(_block, blocks) if b is not None]
    raise ConfigurationError(f"not a message: {message!r}")


def _block(block: Block) -> dict[str, Any] | None:
    match block:
        case Text(text=text):
            return {"text": text} if text.strip() else None
        case Thinking(text=text, signature=signature):
            if not text and not signature:
                return None
            reasoning: dict[str, Any] = {"text": text}
            if signature:
                reasoning["signature"] = signature
            return {"reasoningContent": {"reasoningText": reasoning}}
        case RedactedThinking(data=data):
            return {"reasoningContent": {"redactedContent": data}}
        case ToolUse(id=ident, name=name, arguments=arguments):
            # A call whose arguments did not parse was never executed (its result is the
            # rejection notice): ``{}`` stands in, as for the other wires.
            return {"toolUse": {"toolUseId": ident, "name": name, "input": dict(arguments or {})}}
    return None  # provider-run blocks and Responses items belong to other APIs
