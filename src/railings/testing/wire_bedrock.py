"""Bedrock Converse, as the scripted server writes it (sans-IO: dicts and bytes).

``/converse-stream`` answers ``application/vnd.amazon.eventstream`` frames
(:mod:`railings.testing.eventstream`), in the order Bedrock sends them (see
``tests/corpus/bedrock/``): ``messageStart``; per content block, a
``contentBlockStart`` for a tool use (text and reasoning blocks have none),
``contentBlockDelta`` events (``text``, ``reasoningContent.text`` then its
``signature``, ``toolUse.input`` string fragments) and ``contentBlockStop``;
``messageStop`` with the ``stopReason`` (the termination proof); then ``metadata``
with usage and metrics. At ``max_tokens`` inside a tool use, the block is left
without its ``contentBlockStop``, as Anthropic models do on Bedrock.
``/converse`` answers the message whole; a ``toolUse.input`` there is a parsed
object, so a cut call cannot be expressed and is left out.

Errors: an HTTP error carries ``x-amzn-errortype`` and ``{"message": ...}``
(``__type`` too, as the AWS JSON protocol writes it); mid-stream, an exception frame
(``:message-type: exception``) such as ``throttlingException``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from railings.testing.eventstream import event_frame, exception_frame
from railings.testing.plan import Plan, count_tokens, pieces, positive_int

__all__ = [
    "BedrockAsk",
    "error_event",
    "error_type",
    "events",
    "message",
    "parse_ask",
    "status_error",
]

# Bedrock's exception names by HTTP status (the ConverseStream API reference).
_STATUS = {
    400: ("ValidationException", "Malformed input request, please reformat your input."),
    403: ("AccessDeniedException", "The security token included in the request is invalid."),
    404: ("ResourceNotFoundException", "The requested resource could not be found."),
    405: ("ValidationException", "Method not allowed."),
    408: ("ModelTimeoutException", "The request took too long to process."),
    424: ("ModelErrorException", "The model returned an error."),
    429: ("ThrottlingException", "Too many requests, please wait before trying again."),
    500: ("InternalServerException", "The server encountered an internal error."),
    503: ("ServiceUnavailableException", "The service is unavailable. Please retry."),
}


def error_type(status: int) -> str:
    """The exception name Bedrock sends with ``status`` (its ``x-amzn-errortype``)."""
    name, _ = _STATUS.get(
        status, ("InternalServerException" if status >= 500 else "ValidationException", "")
    )
    return name


def status_error(status: int, message: str | None = None) -> dict[str, Any]:
    """The error body Bedrock sends with ``status``."""
    name, default = _STATUS.get(status, (error_type(status), "Error."))
    return {"message": message or default, "__type": name}


# The in-stream exceptions the fault proxy injects, by the fault's ``type`` (a
# ConverseStream exception name is also accepted as it is).
_STREAM_ERRORS = {
    "overloaded_error": (
        "serviceUnavailableException",
        "Bedrock is unable to process your request.",
    ),
    "api_error": ("internalServerException", "The server encountered an internal error."),
    "rate_limit_error": (
        "throttlingException",
        "Too many tokens, please wait before trying again.",
    ),
}


def error_event(kind: str) -> tuple[bytes, str]:
    """An exception frame for ``kind``, and how to name it."""
    name, text = _STREAM_ERRORS.get(kind, (kind, "The stream failed."))
    if not name.endswith("Exception"):
        name, text = _STREAM_ERRORS["overloaded_error"]
    return exception_frame(name, {"message": text}), f"an exception frame ({name})"


@dataclass(frozen=True, slots=True)
class BedrockAsk:
    """A valid Converse request, reduced to what the server needs: the model id (from the
    path), whether it streams, ``inferenceConfig.maxTokens``, the prompt size and the
    assistant turns the conversation holds."""

    model: str
    messages: list[Any]
    stream: bool
    max_tokens: int | None
    input_tokens: int


def model_and_action(path: str) -> tuple[str, str] | None:
    """``(modelId, action)`` of ``/model/{modelId}/converse(-stream)``, or None."""
    path = path.partition("?")[0].rstrip("/")
    head, _, action = path.rpartition("/")
    _, found, model = head.rpartition("/model/")
    if not found or not model or action not in ("converse", "converse-stream"):
        return None
    return model, action


def parse_ask(obj: Any, path: str) -> BedrockAsk | str:
    """Validate a request body; a string is the 400 message."""
    if not isinstance(obj, Mapping):
        return "Malformed input request, please reformat your input."
    found = model_and_action(path)
    if found is None:
        return "The provided model identifier is invalid."
    model, action = found
    messages = obj.get("messages")
    if not isinstance(messages, list) or not messages:
        return "A conversation must start with a user message."
    config = obj.get("inferenceConfig") or {}
    limit = config.get("maxTokens") if isinstance(config, Mapping) else None
    if limit is not None and not positive_int(limit):
        return "1 validation error detected: Value at 'inferenceConfig.maxTokens' failed"
    prompt = json.dumps([obj.get("system"), messages, obj.get("toolConfig")])
    return BedrockAsk(
        model, messages, action == "converse-stream", limit, count_tokens(len(prompt))
    )


def _usage(plan: Plan, ask: BedrockAsk) -> dict[str, Any]:
    return {
        "inputTokens": ask.input_tokens,
        "outputTokens": plan.output_tokens,
        "totalTokens": ask.input_tokens + plan.output_tokens,
    }


def events(
    plan: Plan,
    ask: BedrockAsk,
    *,
    stop_reason: str,
    chunk_size: int,
    signature: str,
) -> Iterator[bytes]:
    """The frames of a streamed response, one ``bytes`` per frame."""
    yield event_frame("messageStart", {"role": "assistant"})
    index = 0

    def delta(d: dict[str, Any]) -> bytes:
        return event_frame("contentBlockDelta", {"contentBlockIndex": index, "delta": d})

    def stop() -> bytes:
        return event_frame("contentBlockStop", {"contentBlockIndex": index})

    if plan.thinking:
        for piece in pieces(plan.thinking, chunk_size):
            yield delta({"reasoningContent": {"text": piece}})
        if plan.thinking_complete:
            yield delta({"reasoningContent": {"signature": signature}})
        yield stop()
        index += 1
    if plan.text:
        for piece in pieces(plan.text, chunk_size):
            yield delta({"text": piece})
        yield stop()
        index += 1
    for call in plan.calls:
        yield event_frame(
            "contentBlockStart",
            {
                "contentBlockIndex": index,
                "start": {"toolUse": {"toolUseId": call.id, "name": call.name}},
            },
        )
        for piece in pieces(call.arguments, chunk_size):
            yield delta({"toolUse": {"input": piece}})
        if call.complete:
            yield stop()
        index += 1
    yield event_frame("messageStop", {"stopReason": stop_reason})
    yield event_frame("metadata", {"usage": _usage(plan, ask), "metrics": {"latencyMs": 1}})


def message(plan: Plan, ask: BedrockAsk, *, stop_reason: str, signature: str) -> dict[str, Any]:
    """The body of a non-streamed ``/converse`` response."""
    content: list[dict[str, Any]] = []
    if plan.thinking:
        text: dict[str, Any] = {"text": plan.thinking}
        if plan.thinking_complete:
            text["signature"] = signature
        content.append({"reasoningContent": {"reasoningText": text}})
    if plan.text:
        content.append({"text": plan.text})
    for call, parsed in plan.whole_calls():  # see the module docstring
        content.append({"toolUse": {"toolUseId": call.id, "name": call.name, "input": parsed}})
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason,
        "usage": _usage(plan, ask),
        "metrics": {"latencyMs": 1},
    }
