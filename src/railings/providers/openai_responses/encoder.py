"""The OpenAI Responses request body: the provider-neutral conversation
(:mod:`railings.messages`) as a streaming ``POST /responses`` body.

Wire rules encoded here, each next to its code: the Responses API takes the system
prompt as ``instructions`` and the history as a flat list of ``input`` items, where a
tool call and its result are items of their own (``function_call``,
``function_call_output``) tied by ``call_id``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from railings.conversation import (
    Assistant,
    Message,
    ResponsesItems,
    System,
    Text,
    ToolResult,
    ToolSpec,
    ToolUse,
    User,
)
from railings.errors import ConfigurationError
from railings.messages import _check_max_tokens
from railings.providers.openai_responses.shapes import call_item, result_items

__all__ = ["openai_responses_body"]


def openai_responses_body(
    model: str,
    messages: Sequence[Message],
    *,
    max_tokens: int,
    tools: Sequence[ToolSpec] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A streaming ``POST /responses`` body.

    System messages become ``instructions`` (joined by a blank line); everything
    else becomes ``input`` items in order: user and assistant text as role
    messages, each assistant tool call as a ``function_call`` item (its
    ``call_id`` is :attr:`ToolUse.id`, its ``arguments`` the string the model
    wrote), each :class:`ToolResult` as a ``function_call_output`` item.

    ``max_output_tokens`` is always sent (see
    :func:`~railings.providers.openai_chat.encoder.openai_chat_body`).
    ``store: false``: the history travels in every request, so nothing needs to
    be kept server-side, and no ``previous_response_id`` is ever needed.
    Function tools are sent with ``strict: false``: the API's default is strict
    mode, which rejects any schema that is not closed (``additionalProperties:
    false``, every property required), and the other two wire formats validate
    nothing; the schema means the same to all three.
    """
    _check_max_tokens(max_tokens)
    system = [m.text for m in messages if isinstance(m, System)]
    # Each result goes back in the output item of its call's type (shapes.py).
    call_types = {
        use.id: use.type
        for message in messages
        if isinstance(message, Assistant)
        for use in message.tool_calls
    }
    items: list[dict[str, Any]] = []
    for message in messages:
        items.extend(_responses_items(message, call_types))
    body: dict[str, Any] = {
        "model": model,
        "input": items,
        "stream": True,
        "store": False,
        "max_output_tokens": max_tokens,
    }
    if system:
        body["instructions"] = "\n\n".join(system)
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
                "strict": False,
            }
            for t in tools
        ]
    if extra:
        body.update(extra)
    return body


def _responses_items(message: Message, call_types: Mapping[str, str]) -> list[dict[str, Any]]:
    match message:
        case System():
            return []  # the top-level ``instructions``
        case User(text=text):
            return [{"role": "user", "content": text}]
        case ToolResult(call_id=call_id, content=content, is_error=is_error):
            # No error flag on a function_call_output, as in Chat Completions: the content
            # says it. The other output items carry it in their own fields.
            return result_items(call_types.get(call_id, "function"), call_id, content, is_error)
        case Assistant(blocks=blocks):
            for block in blocks:
                if isinstance(block, ResponsesItems):  # the API's own items, as they came
                    return [dict(item) for item in block.items]
            # Rebuilt from text and calls, without reasoning and without item ids: a
            # reasoning item needs its encrypted content (see ``_reasoned_items``), and an
            # item id without its reasoning is refused. Provider-run blocks (another
            # provider's) have no Responses form.
            out: list[dict[str, Any]] = []
            said: list[str] = []
            for block in blocks:
                if isinstance(block, Text):
                    said.append(block.text)
                elif isinstance(block, ToolUse):
                    out.extend(_responses_text(said))
                    said = []
                    # As the model wrote it: a cut call goes back cut, beside the notice
                    # that it was not executed. Each type as its own item.
                    out.append(
                        call_item(
                            block.type,
                            block.id,
                            block.name,
                            block.arguments,
                            block.raw_arguments
                            if block.type == "custom"
                            else block.arguments_json(),
                        )
                    )
            out.extend(_responses_text(said))
            return out
    raise ConfigurationError(f"not a message: {message!r}")


def _responses_text(said: list[str]) -> list[dict[str, Any]]:
    text = "".join(said)
    return [{"role": "assistant", "content": text}] if text else []
