"""The OpenAI Chat Completions request body: the provider-neutral conversation
(:mod:`railings.messages`) as a streaming ``POST /chat/completions`` body.

Wire rules encoded here, each next to its code: OpenAI sends reasoning nowhere
(DeepSeek answers 400 when ``reasoning_content`` comes back) and carries tool results
as ``role: tool`` (the answer to a legacy ``function_call``, which has no id, as
``role: function``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from railings.conversation import (
    Assistant,
    Message,
    System,
    ToolResult,
    ToolSpec,
    User,
    call_names,
)
from railings.errors import ConfigurationError
from railings.messages import _check_max_tokens, _function_tools

__all__ = ["MaxTokensField", "openai_chat_body"]


MaxTokensField = Literal["max_tokens", "max_completion_tokens"]


def openai_chat_body(
    model: str,
    messages: Sequence[Message],
    *,
    max_tokens: int,
    tools: Sequence[ToolSpec] = (),
    include_usage: bool = True,
    max_tokens_field: MaxTokensField = "max_tokens",
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A streaming ``POST /chat/completions`` body.

    ``max_tokens`` is always sent: without it the turn's length is unbounded and
    truncation cannot be told from a natural end. OpenAI's reasoning models take
    it as ``max_completion_tokens`` (``max_tokens_field``). ``include_usage`` asks
    for the final usage chunk (``stream_options``), which some compatible servers
    reject: turn it off for those.
    """
    _check_max_tokens(max_tokens)
    names = call_names(messages)
    body: dict[str, Any] = {
        "model": model,
        # An assistant message with neither text nor calls (an empty turn) is refused.
        "messages": [
            _openai_message(m, names)
            for m in messages
            if not (isinstance(m, Assistant) and not m.text and not m.tool_calls)
        ],
        "stream": True,
        max_tokens_field: max_tokens,
    }
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    if tools:
        body["tools"] = _function_tools(tools)
    if extra:
        body.update(extra)
    return body


def _openai_message(message: Message, names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One Chat Completions message; ``names``: each call's id -> its tool's name, for a
    result that does not carry it (:func:`~railings.conversation.call_names`)."""
    match message:
        case System(text=text):
            return {"role": "system", "content": text}
        case User(text=text):
            return {"role": "user", "content": text}
        case ToolResult(call_id="", content=content, name=name):
            # The answer to a legacy ``function_call`` (no id to tie it by): the function's
            # name instead. Chat Completions has no error flag: the content says it.
            name = name or (names or {}).get("", "")
            return {"role": "function", "name": name, "content": content}
        case ToolResult(call_id=call_id, content=content):
            return {"role": "tool", "tool_call_id": call_id, "content": content}
        case Assistant():
            # Reasoning is not sent back: OpenAI ignores it and DeepSeek rejects it.
            out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            calls = message.tool_calls
            if len(calls) == 1 and not calls[0].id:
                # A legacy ``function_call`` (``functions=``: one call, no id) goes back as
                # it came; a ``tool_calls`` entry without an id is refused.
                (call,) = calls
                out["function_call"] = {"name": call.name, "arguments": call.arguments_json()}
            elif calls:
                out["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments_json()},
                    }
                    for c in calls
                ]
            return out
    raise ConfigurationError(f"not a message: {message!r}")
