"""Anthropic Messages, as the scripted server writes it (sans-IO: dicts and bytes).

Shapes follow the real API (see ``tests/corpus/real/anthropic/``):
``message_start`` with usage (``output_tokens`` 1 so far), one
``content_block_start`` / ``content_block_delta`` … / ``content_block_stop``
per block, a ``ping`` after the first block start, ``input_json_delta``
fragments after an empty first ``partial_json``, ``message_delta`` with the
stop reason and the cumulative ``usage.output_tokens``, then ``message_stop``.

At ``max_tokens`` the real API stops inside a ``tool_use`` block without its
``content_block_stop`` (``max_tokens_inside_tool_input.sse``) while a cut text
block is still stopped (``max_tokens_text.sse``); both are reproduced.
A non-streamed ``tool_use`` block carries parsed ``input``, so a call whose
arguments are cut or not valid JSON cannot be expressed there and is left out.

A conversation that ends with an assistant message is a *prefill* (:func:`prefill_of`):
the model continues that message, so the response holds only what comes after it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from railings.testing.plan import (
    Plan,
    anthropic_stop_reason,
    compact,
    count_tokens,
    pieces,
    positive_int,
)

__all__ = [
    "NO_PREFILL",
    "TRAILING_WHITESPACE",
    "AnthropicAsk",
    "error_body",
    "error_event",
    "events",
    "message",
    "parse_ask",
    "prefill_of",
    "sse",
    "status_error",
]


def sse(event: str, obj: Any) -> bytes:
    """One SSE block: ``event: NAME`` and ``obj`` as one line of compact JSON."""
    return f"event: {event}\ndata: {compact(obj)}\n\n".encode()


PING = b'event: ping\ndata: {"type": "ping"}\n\n'


def error_body(type_: str, message: str, request_id: str | None = None) -> dict[str, Any]:
    """Anthropic's error object, ``{"type": "error", "error": {...}}``, with its
    ``request_id`` when given."""
    body: dict[str, Any] = {"type": "error", "error": {"type": type_, "message": message}}
    if request_id:
        body["request_id"] = request_id
    return body


_STATUS_ERRORS = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "Not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}


def status_error(
    status: int, message: str | None = None, request_id: str | None = None
) -> dict[str, Any]:
    """The error body Anthropic sends with ``status``."""
    type_, default = _STATUS_ERRORS.get(
        status, ("api_error" if status >= 500 else "invalid_request_error", "Error.")
    )
    return error_body(type_, message or default, request_id)


def error_event(
    type_: str = "overloaded_error", message: str = "Overloaded", request_id: str | None = None
) -> bytes:
    """A mid-stream ``event: error``, as Anthropic sends it before ending the stream."""
    return sse("error", error_body(type_, message, request_id))


# The API's 400 messages for a prefill: to a model that refuses one, and for one that
# ends in whitespace (the model would continue after it, which it cannot).
NO_PREFILL = (
    "This model does not support assistant message prefill. "
    "The conversation must end with a user message."
)
TRAILING_WHITESPACE = "messages: final assistant content cannot end with trailing whitespace"


@dataclass(frozen=True, slots=True)
class AnthropicAsk:
    """A valid Messages request, reduced to what the server needs: ``stream``, the
    ``max_tokens`` limit, its prompt size in tokens (system, messages and tools), and
    the text of its prefill (None when the conversation does not end with one)."""

    model: str
    messages: list[Any]
    stream: bool
    max_tokens: int
    input_tokens: int
    prefill: str | None = None


def prefill_of(messages: list[Any]) -> str | None:
    """The text a trailing assistant message prefills (its text blocks joined), or None:
    the conversation ends with another role, or the message holds a ``tool_use`` block
    (a call is a finished turn, not the start of one)."""
    last = messages[-1] if messages else None
    if not isinstance(last, Mapping) or last.get("role") != "assistant":
        return None
    content = last.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    blocks = [b for b in content if isinstance(b, Mapping)]
    if any(b.get("type") == "tool_use" for b in blocks):
        return None
    return "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def parse_ask(obj: Any) -> AnthropicAsk | str:
    """Validate a request body; a string is the 400 message."""
    if not isinstance(obj, Mapping):
        return "Invalid JSON body"
    model, messages, limit = obj.get("model"), obj.get("messages"), obj.get("max_tokens")
    if not isinstance(model, str) or not model:
        return "model: Field required"
    if not isinstance(messages, list):
        return "messages: Field required"
    if not messages:
        return "messages: at least one message is required"
    if limit is None:
        return "max_tokens: Field required"
    if not positive_int(limit):
        return "max_tokens: Input should be a valid integer greater than 0"
    prompt = compact([obj.get("system"), messages, obj.get("tools")])
    return AnthropicAsk(
        model,
        messages,
        obj.get("stream") is True,
        limit,
        count_tokens(len(prompt)),
        prefill_of(messages),
    )


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _stop_reason(plan: Plan) -> str | None:
    return anthropic_stop_reason(plan.stop_reason) if plan.stop_reason_sent else None


def events(
    plan: Plan,
    ask: AnthropicAsk,
    *,
    message_id: str,
    model: str,
    chunk_size: int,
    signature: str,
    ping: bool = True,
) -> Iterator[bytes]:
    """The SSE events of a streamed response, one ``bytes`` per event."""
    yield sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": _usage(ask.input_tokens, min(1, plan.output_tokens)),
            },
        },
    )
    index = 0
    pinged = not ping

    def start(block: dict[str, Any]) -> Iterator[bytes]:
        nonlocal pinged
        yield sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": block},
        )
        if not pinged:
            pinged = True
            yield PING

    def delta(d: dict[str, Any]) -> bytes:
        return sse(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}
        )

    def stop() -> bytes:
        return sse("content_block_stop", {"type": "content_block_stop", "index": index})

    if plan.thinking:
        yield from start({"type": "thinking", "thinking": "", "signature": ""})
        for piece in pieces(plan.thinking, chunk_size):
            yield delta({"type": "thinking_delta", "thinking": piece})
        if plan.thinking_complete:
            yield delta({"type": "signature_delta", "signature": signature})
        yield stop()
        index += 1
    if plan.text:
        yield from start({"type": "text", "text": ""})
        for piece in pieces(plan.text, chunk_size):
            yield delta({"type": "text_delta", "text": piece})
        yield stop()
        index += 1
    for call in plan.calls:
        yield from start({"type": "tool_use", "id": call.id, "name": call.name, "input": {}})
        yield delta({"type": "input_json_delta", "partial_json": ""})
        for piece in pieces(call.arguments, chunk_size):
            yield delta({"type": "input_json_delta", "partial_json": piece})
        if call.complete:
            yield stop()
        index += 1
    yield sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": _stop_reason(plan),
                "stop_sequence": None,
            },
            "usage": {"output_tokens": plan.output_tokens},
        },
    )
    yield sse("message_stop", {"type": "message_stop"})


def message(
    plan: Plan, ask: AnthropicAsk, *, message_id: str, model: str, signature: str
) -> dict[str, Any]:
    """The body of a non-streamed response."""
    content: list[dict[str, Any]] = []
    if plan.thinking:
        content.append(
            {
                "type": "thinking",
                "thinking": plan.thinking,
                "signature": signature if plan.thinking_complete else "",
            }
        )
    if plan.text:
        content.append({"type": "text", "text": plan.text})
    for call, parsed in plan.whole_calls():  # see the module docstring
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": parsed})
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _stop_reason(plan),
        "stop_sequence": None,
        "usage": _usage(ask.input_tokens, plan.output_tokens),
    }
