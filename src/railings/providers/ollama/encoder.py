"""The conversation as an Ollama ``/api/chat`` request body.

``POST /api/chat`` with ``stream: true`` (the answer is NDJSON). The body, as the
Ollama API reference names its fields:

* ``model``; ``messages``: ``{"role": "system" | "user" | "assistant" | "tool",
  "content"}``; an assistant message may carry ``thinking`` (its reasoning text) and
  ``tool_calls`` (``[{"function": {"name", "arguments": {...}}}]``: the arguments as an
  object, not a JSON string, with the call's ``id`` when it had one); a tool result is
  a ``role: tool`` message with ``tool_name`` (the called function) and, when the call
  had an id, ``tool_call_id``;
* ``tools``: ``[{"type": "function", "function": {"name", "description",
  "parameters"}}]``;
* ``options.num_predict``: the output limit; ``stream: true``.

Signatures and redacted thinking mean nothing to Ollama and are not sent; nor are
provider-run blocks and Responses items.
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
    User,
    call_names,
)
from railings.errors import ConfigurationError
from railings.messages import _check_max_tokens, _function_tools

__all__ = ["ollama_body", "ollama_tool_message"]


def ollama_body(
    model: str,
    messages: Sequence[Message],
    *,
    max_tokens: int,
    tools: Sequence[ToolSpec] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A streaming ``/api/chat`` body for ``messages`` (the module docstring)."""
    _check_max_tokens(max_tokens)
    names = call_names(messages)
    body: dict[str, Any] = {
        "model": model,
        "messages": [_message(m, names) for m in messages],
        "stream": True,
        "options": {"num_predict": max_tokens},
    }
    if tools:
        body["tools"] = _function_tools(tools)
    if extra:
        body.update(extra)
    return body


def ollama_tool_message(result: ToolResult, name: str = "") -> dict[str, Any]:
    """One ``role: tool`` message; ``name`` (else ``result.name``) is the called tool's."""
    out: dict[str, Any] = {"role": "tool", "content": result.content}
    if name or result.name:
        out["tool_name"] = name or result.name
    if result.call_id:
        out["tool_call_id"] = result.call_id
    return out


def _message(message: Message, names: Mapping[str, str]) -> dict[str, Any]:
    match message:
        case System(text=text):
            return {"role": "system", "content": text}
        case User(text=text):
            return {"role": "user", "content": text}
        case ToolResult():
            return ollama_tool_message(message, names.get(message.call_id, ""))
        case Assistant(blocks=blocks):
            out: dict[str, Any] = {
                "role": "assistant",
                "content": "".join(b.text for b in blocks if isinstance(b, Text)),
            }
            thinking = "".join(b.text for b in blocks if isinstance(b, Thinking))
            if thinking:
                out["thinking"] = thinking
            calls = [
                {
                    **({"id": c.id} if c.id else {}),
                    "function": {"name": c.name, "arguments": dict(c.arguments or {})},
                }
                for c in message.tool_calls
            ]
            if calls:
                out["tool_calls"] = calls
            return out
    raise ConfigurationError(f"not a message: {message!r}")
