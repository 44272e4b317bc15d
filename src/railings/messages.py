"""The provider-neutral conversation: one message and tool model, three wire bodies.

An agent keeps its history as these frozen values and can switch providers at
any turn: :func:`openai_chat_body`, :func:`openai_responses_body` and
:func:`anthropic_messages_body` render the same history as an OpenAI Chat
Completions, an OpenAI Responses or an Anthropic Messages request.

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

Wire rules encoded here, each next to its code: Anthropic takes the system prompt
as a top-level field, wants every ``tool_result`` of a turn in one user message
(results first), and rejects consecutive messages of one role less gracefully
than it merges them; OpenAI sends reasoning nowhere (DeepSeek answers 400 when
``reasoning_content`` comes back) and carries tool results as ``role: tool``
(the answer to a legacy ``function_call``, which has no id, as ``role: function``);
the Responses API takes the system prompt as ``instructions`` and the history as
a flat list of ``input`` items, where a tool call and its result are items of
their own (``function_call``, ``function_call_output``) tied by ``call_id``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from railings._responses_shapes import call_item, result_items
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
    call_names,
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
    "anthropic_messages_body",
    "openai_chat_body",
    "openai_responses_body",
]


# -- OpenAI Chat Completions --------------------------------------------------------------

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
        body["tools"] = [
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


# -- OpenAI Responses ---------------------------------------------------------------------


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

    ``max_output_tokens`` is always sent (see :func:`openai_chat_body`).
    ``store: false``: the history travels in every request, so nothing needs to
    be kept server-side, and no ``previous_response_id`` is ever needed.
    Function tools are sent with ``strict: false``: the API's default is strict
    mode, which rejects any schema that is not closed (``additionalProperties:
    false``, every property required), and the other two wire formats validate
    nothing; the schema means the same to all three.
    """
    _check_max_tokens(max_tokens)
    system = [m.text for m in messages if isinstance(m, System)]
    # Each result goes back in the output item of its call's type (_responses_shapes).
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


# -- Anthropic Messages -------------------------------------------------------------------


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
    wire: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, System):
            continue
        role = "assistant" if isinstance(message, Assistant) else "user"
        blocks = _anthropic_blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            merged = wire[-1]["content"] + blocks
            # tool_result blocks must lead a user message.
            merged.sort(key=lambda b: b.get("type") != "tool_result")
            wire[-1]["content"] = merged
        else:
            wire.append({"role": role, "content": blocks})
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


def _check_max_tokens(max_tokens: int) -> None:
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ConfigurationError(f"max_tokens must be a positive integer, not {max_tokens!r}")
