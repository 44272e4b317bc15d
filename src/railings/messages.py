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

The names are defined in :mod:`railings.conversation` and re-exported here; what every
encoder shares (the ``max_tokens`` check) lives here too.
"""

from __future__ import annotations

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
