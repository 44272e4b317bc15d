"""OpenAI Chat Completions, as the scripted server writes it (sans-IO: dicts and bytes).

Shapes follow the real API (see ``tests/corpus/real/openai/``): compact JSON,
a first chunk with the role, content deltas, ``tool_calls`` deltas (the first
with index, id, type and name and ``arguments: ""``, then argument fragments),
a last choice chunk with an empty delta and ``finish_reason``, with
``stream_options.include_usage`` a usage chunk whose ``choices`` is ``[]`` (and
``"usage": null`` on every chunk before it), then ``data: [DONE]``.
Reasoning goes out as ``reasoning_content`` deltas (DeepSeek, xAI, Z.ai).
A call scripted with ``object_arguments`` goes out whole in its first delta, its
``function.arguments`` a JSON object -- the text parsed, and repaired when the
output limit cut it -- as some OpenAI-compatible servers send it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from railings.testing.plan import (
    Plan,
    compact,
    count_tokens,
    openai_finish_reason,
    pieces,
    positive_int,
)

__all__ = [
    "DONE_EVENT",
    "OpenAIAsk",
    "chunks",
    "completion",
    "error_body",
    "error_event",
    "parse_ask",
    "status_error",
]

DONE_EVENT = b"data: [DONE]\n\n"
FINGERPRINT = "fp_railings0"


def sse(obj: Any) -> bytes:
    """One SSE event: ``obj`` as one ``data:`` line of compact JSON (Gemini's too)."""
    return f"data: {compact(obj)}\n\n".encode()


def error_body(
    message: str, type_: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error object, ``{"error": {message, type, param, code}}``."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


_STATUS_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: (
        "invalid_request_error",
        "unsupported_country_region_territory",
        "Country, region, or territory not supported",
    ),
    404: ("invalid_request_error", None, "Not found."),
    429: (
        "requests",
        "rate_limit_exceeded",
        "Rate limit reached for requests. Please try again in 1s.",
    ),
    500: (
        "server_error",
        None,
        "The server had an error while processing your request. Sorry about that!",
    ),
    503: ("server_error", None, "The engine is currently overloaded, please try again later"),
    529: ("server_error", None, "The engine is currently overloaded, please try again later"),
}


def status_error(status: int, message: str | None = None) -> dict[str, Any]:
    """The error body OpenAI sends with ``status``."""
    type_, code, default = _STATUS_ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None, "Error.")
    )
    return error_body(message or default, type_, code)


def error_event() -> bytes:
    """An in-stream error, as OpenAI sends it: a data line whose object is ``{"error": ...}``."""
    return sse(
        error_body(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
        )
    )


@dataclass(frozen=True, slots=True)
class OpenAIAsk:
    """A valid Chat Completions request, reduced to what the server needs: ``stream``,
    ``include_usage`` (``stream_options``), the token limit (``max_completion_tokens``, else
    ``max_tokens``; None: no limit) and its prompt size in tokens (messages and tools)."""

    model: str
    messages: list[Any]
    stream: bool
    include_usage: bool
    max_tokens: int | None
    prompt_tokens: int


def parse_ask(obj: Any) -> OpenAIAsk | str:
    """Validate a request body; a string is the 400 message."""
    if not isinstance(obj, Mapping):
        return "We could not parse the JSON body of your request."
    model, messages = obj.get("model"), obj.get("messages")
    if not isinstance(model, str) or not model:
        return "you must provide a model parameter"
    if not isinstance(messages, list) or not messages:
        return (
            "[] is too short - 'messages'"
            if messages == []
            else "Missing required parameter: 'messages'."
        )
    limit = obj.get("max_completion_tokens", obj.get("max_tokens"))
    if limit is not None and not positive_int(limit):
        return f"Invalid 'max_tokens': integer below minimum value. Got {limit!r}."
    options = obj.get("stream_options") or {}
    prompt = compact([obj.get("messages"), obj.get("tools")])
    return OpenAIAsk(
        model,
        messages,
        obj.get("stream") is True,
        isinstance(options, Mapping) and options.get("include_usage") is True,
        limit,
        count_tokens(len(prompt)),
    )


def _usage(plan: Plan, prompt_tokens: int) -> dict[str, Any]:
    reasoning = min(plan.output_tokens, count_tokens(len(plan.thinking)))
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": plan.output_tokens,
        "total_tokens": prompt_tokens + plan.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _finish_reason(plan: Plan) -> str | None:
    return openai_finish_reason(plan.stop_reason) if plan.stop_reason_sent else None


def chunks(
    plan: Plan, ask: OpenAIAsk, *, completion_id: str, created: int, model: str, chunk_size: int
) -> Iterator[bytes]:
    """The SSE events of a streamed response, one ``bytes`` per event."""
    base: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        obj = {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if ask.include_usage:
            obj["usage"] = None
        return sse(obj)

    first: dict[str, Any] = {
        "role": "assistant",
        "content": "" if plan.text or not plan.calls else None,
        "refusal": None,
    }
    yield chunk(first)
    for piece in pieces(plan.thinking, chunk_size):
        yield chunk({"reasoning_content": piece})
    for piece in pieces(plan.text, chunk_size):
        yield chunk({"content": piece})
    for call in plan.calls:
        # A server that parses the model's text sends the whole call at once, as an object.
        opening: Any = call.parsed_arguments() if call.object_arguments else ""
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": call.index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": opening},
                    }
                ]
            }
        )
        if call.object_arguments:
            continue
        for piece in pieces(call.arguments, chunk_size):
            yield chunk({"tool_calls": [{"index": call.index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish_reason(plan))
    if ask.include_usage:
        yield sse({**base, "choices": [], "usage": _usage(plan, ask.prompt_tokens)})
    yield DONE_EVENT


def completion(
    plan: Plan, ask: OpenAIAsk, *, completion_id: str, created: int, model: str
) -> dict[str, Any]:
    """The body of a non-streamed response."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": plan.text if plan.text or not plan.calls else None,
        "refusal": None,
        "annotations": [],
    }
    if plan.thinking:
        message["reasoning_content"] = plan.thinking
    if plan.calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": c.parsed_arguments() if c.object_arguments else c.arguments,
                },
            }
            for c in plan.calls
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _finish_reason(plan),
            }
        ],
        "usage": _usage(plan, ask.prompt_tokens),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }
