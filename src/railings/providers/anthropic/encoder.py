"""The Anthropic Messages request body: the provider-neutral conversation
(:mod:`railings.messages`) as a streaming ``POST /v1/messages`` body.

Wire rules encoded here, each next to its code: Anthropic takes the system prompt as a
top-level field, wants every ``tool_result`` of a turn in one user message (results
first), and rejects consecutive messages of one role less gracefully than it merges
them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from railings.conversation import (
    Assistant,
    Block,
    Message,
    RedactedThinking,
    ResponsesItems,
    ServerBlock,
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

__all__ = ["anthropic_messages_body"]


def anthropic_messages_body(
    model: str,
    messages: Sequence[Message],
    *,
    max_tokens: int,
    tools: Sequence[ToolSpec] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A streaming ``POST /v1/messages`` body.

    System messages become the top-level ``system`` field (joined by a blank line).
    Consecutive user-side messages (tool results and user text) become one user
    message whose ``tool_result`` blocks come first, as the API requires;
    consecutive assistant messages are merged the same way.
    """
    _check_max_tokens(max_tokens)
    system = [m.text for m in messages if isinstance(m, System)]
    # tool_result blocks must lead a user message.
    wire = _role_turns(messages, _anthropic_blocks, leads=lambda b: b.get("type") == "tool_result")
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": wire,
        "stream": True,
    }
    if system:
        body["system"] = "\n\n".join(system)
    if tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
            for t in tools
        ]
    if extra:
        body.update(extra)
    return body


def _anthropic_blocks(message: Message) -> list[dict[str, Any]]:
    match message:
        case User(text=text):
            return [{"type": "text", "text": text}] if text else []
        case ToolResult(call_id=call_id, content=content, is_error=is_error):
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": content,
            }
            if is_error:
                block["is_error"] = True
            return [block]
        case Assistant(blocks=blocks):
            # ResponsesItems are another API's: not sent here.
            return [
                _anthropic_block(b)
                for b in blocks
                if not ((isinstance(b, Text) and not b.text) or isinstance(b, ResponsesItems))
            ]
    raise ConfigurationError(f"not a message: {message!r}")


def _anthropic_block(block: Block) -> dict[str, Any]:
    match block:
        case Text(text=text):
            return {"type": "text", "text": text}
        case Thinking(text=text, signature=signature):
            return {"type": "thinking", "thinking": text, "signature": signature}
        case RedactedThinking(data=data):
            return {"type": "redacted_thinking", "data": data}
        case ToolUse(id=ident, name=name, arguments=arguments):
            # The wire requires an object. A call whose arguments did not parse was
            # never executed (its result is the rejection notice); ``{}`` stands in.
            return {"type": "tool_use", "id": ident, "name": name, "input": dict(arguments or {})}
        case ServerBlock(raw=raw):
            return dict(raw)
    raise ConfigurationError(f"not an assistant block: {block!r}")
