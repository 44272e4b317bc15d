"""The provider-neutral conversation: one message and tool model for every wire.

An agent keeps its history as these frozen values and can switch providers at
any turn: each wire's encoder (``railings.providers.<name>.encoder``, reached
through its spec's ``encode``) renders the same history as that wire's request body.

::

    System(text)                      the instructions
    User(text)                        what the user said
    Assistant(blocks)                 what the model said, in order:
        Text(text)
        Thinking(text, signature)     Anthropic needs the signature back verbatim
        RedactedThinking(data)        opaque, sent back verbatim
        ToolUse(id, name, arguments, raw_arguments)
        ServerBlock(raw)              provider-run tool blocks, kept verbatim
    ToolResult(call_id, content, is_error)
    ToolSpec(name, description, parameters)   a tool the model may call (JSON schema)

The names are defined in :mod:`railings.conversation` and re-exported here; what the
encoders share (the ``max_tokens`` check, role merging, function tool declarations)
lives here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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

__all__ = [
    "Assistant",
    "Block",
    "Message",
    "RedactedThinking",
    "ResponsesItems",
    "ServerBlock",
    "System",
    "Text",
    "Thinking",
    "ToolResult",
    "ToolSpec",
    "ToolUse",
    "User",
]


def _check_max_tokens(max_tokens: int) -> None:
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ConfigurationError(f"max_tokens must be a positive integer, not {max_tokens!r}")


def _role_turns(
    messages: Sequence[Message],
    render: Callable[[Message], list[dict[str, Any]]],
    *,
    model: str = "assistant",
    key: str = "content",
    leads: Callable[[dict[str, Any]], bool] | None = None,
) -> list[dict[str, Any]]:
    """The messages but System ones as ``{"role", key: blocks}`` entries, the blocks
    ``render`` gives (a message with none is left out), for a wire whose roles alternate:
    consecutive messages of one role are merged into one entry, where the blocks
    ``leads`` picks come first (a turn's tool results lead its user message)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, System):
            continue
        role = model if isinstance(message, Assistant) else "user"
        blocks = render(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1][key] += blocks
            if leads is not None:
                out[-1][key].sort(key=lambda block: not leads(block))
        else:
            out.append({"role": role, key: blocks})
    return out


def _function_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tools as Chat Completions declares them, and Ollama after it."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in tools
    ]
