"""Gemini ``generateContent``, as the scripted server writes it (sans-IO: dicts and bytes).

Shapes follow the real API (see ``tests/corpus/gemini/``): each streamed chunk is a
whole ``GenerateContentResponse`` on one ``data:`` line, compact JSON, with one
candidate whose ``content.parts`` carry the new text (``thought: true`` parts for
thinking, a ``thoughtSignature`` on the part after it), whole ``functionCall``
parts with parsed ``args``, ``usageMetadata`` and ``modelVersion`` and
``responseId`` on every chunk. The last chunk carries the candidate's
``finishReason`` -- the stream's only termination proof, since Gemini sends no
sentinel: the last text chunk, or after function calls a chunk of its own with
empty text (as ``tool_call_gemini_3_pro.sse`` shows). ``:generateContent`` (not
streamed) answers the same response whole;
``:streamGenerateContent`` without ``alt=sse`` answers the chunks as one JSON
array, as the API does.

A function call arrives whole and parsed, so a call the output limit cut cannot be
expressed: it is left out, and ``finishReason`` is ``MAX_TOKENS`` (what the API does
when the limit falls inside a call). Errors are Google's JSON
``{"error": {"code", "message", "status"}}``, in a body or, mid-stream, as a
``data:`` line of their own (what the API sends when a stream fails after its
first chunk).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from railings.testing.plan import Plan, compact, count_tokens, pieces, positive_int
from railings.testing.wire_openai import sse

__all__ = [
    "GeminiAsk",
    "chunks",
    "error_body",
    "error_event",
    "events",
    "parse_ask",
    "response",
    "status_error",
]


# google.rpc.Code names by HTTP status, as the API pairs them.
_STATUS = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "Request had invalid authentication credentials."),
    403: ("PERMISSION_DENIED", "The caller does not have permission"),
    404: ("NOT_FOUND", "Requested entity was not found."),
    405: ("INVALID_ARGUMENT", "Method not allowed."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: ("INTERNAL", "An internal error has occurred. Please retry or report."),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    504: ("DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
}


def error_body(code: int, message: str, status: str) -> dict[str, Any]:
    """Google's error object, ``{"error": {"code", "message", "status"}}``."""
    return {"error": {"code": code, "message": message, "status": status}}


def status_error(status: int, message: str | None = None) -> dict[str, Any]:
    """The error body Gemini sends with ``status``."""
    name, default = _STATUS.get(status, ("INTERNAL" if status >= 500 else "INVALID_ARGUMENT", ""))
    return error_body(status, message or default or "Error.", name)


# The in-stream errors the fault proxy injects, by the fault's ``type``.
_STREAM_ERRORS = {
    "overloaded_error": 503,
    "api_error": 500,
    "rate_limit_error": 429,
}


def error_event(kind: str) -> tuple[bytes, str]:
    """A mid-stream error chunk for ``kind``, and how to name it."""
    status = _STREAM_ERRORS.get(kind, 503)
    body = status_error(status)
    return sse(body), f"an error chunk ({body['error']['status']})"


@dataclass(frozen=True, slots=True)
class GeminiAsk:
    """A valid ``generateContent`` request, reduced to what the server needs: the model
    (from the path), whether it streams (the method in the path), the output limit
    (``generationConfig.maxOutputTokens``), the prompt size and the model turns."""

    model: str
    contents: list[Any]
    stream: bool
    max_tokens: int | None
    input_tokens: int
    sse: bool = True  # a stream asked for ``alt=sse`` (else: one JSON array)

    @property
    def turns(self) -> int:
        """How many model turns the conversation already holds."""
        return sum(1 for c in self.contents if isinstance(c, Mapping) and c.get("role") == "model")


def model_and_method(path: str) -> tuple[str, str] | None:
    """``(model, method)`` of ``.../models/{model}:{method}``, or None."""
    path = path.partition("?")[0]
    head, sep, method = path.rpartition(":")
    _, found, model = head.rpartition("/models/")
    if not sep or not found or not model or "/" in model:
        return None
    return model, method


def parse_ask(obj: Any, path: str) -> GeminiAsk | str:
    """Validate a request body; a string is the 400 message."""
    if not isinstance(obj, Mapping):
        return "Invalid JSON payload received."
    found = model_and_method(path)
    if found is None:
        return "Invalid resource name."
    model, method = found
    contents = obj.get("contents")
    if not isinstance(contents, list) or not contents:
        return "* GenerateContentRequest.contents: contents is not specified"
    config = obj.get("generationConfig") or {}
    limit = config.get("maxOutputTokens") if isinstance(config, Mapping) else None
    if limit is not None and not positive_int(limit):
        return "* GenerateContentRequest.generation_config.max_output_tokens: must be positive"
    prompt = compact([obj.get("systemInstruction"), contents, obj.get("tools")])
    query = path.partition("?")[2]
    return GeminiAsk(
        model,
        contents,
        method == "streamGenerateContent",
        limit,
        count_tokens(len(prompt)),
        sse="alt=sse" in query.split("&"),
    )


def _usage(plan: Plan, ask: GeminiAsk) -> dict[str, Any]:
    thoughts = count_tokens(len(plan.thinking))
    candidates = max(plan.output_tokens - thoughts, 0)
    usage: dict[str, Any] = {
        "promptTokenCount": ask.input_tokens,
        "candidatesTokenCount": candidates,
        "totalTokenCount": ask.input_tokens + plan.output_tokens,
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def _call_parts(plan: Plan) -> list[dict[str, Any]]:
    # A cut call is left out: see the module docstring.
    return [
        {"functionCall": {"id": call.id, "name": call.name, "args": args}}
        for call, args in plan.whole_calls()
    ]


def events(plan: Plan, ask: GeminiAsk, **options: Any) -> Iterator[bytes]:
    """The SSE events of a streamed response (``alt=sse``), one ``bytes`` per chunk: the
    :func:`chunks` of the same options, each on a ``data:`` line."""
    return map(sse, chunks(plan, ask, **options))


def chunks(
    plan: Plan,
    ask: GeminiAsk,
    *,
    finish_reason: str,
    response_id: str,
    model: str,
    chunk_size: int,
    signature: str,
) -> Iterator[dict[str, Any]]:
    """The chunks of a streamed response; without ``alt=sse`` the body is their array."""

    def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        return {
            "candidates": [candidate],
            "usageMetadata": _usage(plan, ask),
            "modelVersion": model,
            "responseId": response_id,
        }

    for piece in pieces(plan.thinking, chunk_size):
        yield chunk([{"text": piece, "thought": True}])
    calls = _call_parts(plan)
    texts: list[dict[str, Any]] = [{"text": piece} for piece in pieces(plan.text, chunk_size)]
    parts = texts + calls
    if parts and plan.thinking and plan.thinking_complete:
        parts[0]["thoughtSignature"] = signature
    for i, part in enumerate(parts):
        # The last text chunk carries the finish reason, unless calls follow it.
        yield chunk([part], finish_reason if i == len(parts) - 1 and not calls else None)
    if calls or not parts:
        yield chunk([{"text": ""}], finish_reason)


def response(
    plan: Plan,
    ask: GeminiAsk,
    *,
    finish_reason: str,
    response_id: str,
    model: str,
    signature: str,
) -> dict[str, Any]:
    """The body of a non-streamed response."""
    parts: list[dict[str, Any]] = []
    if plan.thinking:
        parts.append({"text": plan.thinking, "thought": True})
    rest: list[dict[str, Any]] = []
    if plan.text:
        rest.append({"text": plan.text})
    rest += _call_parts(plan)
    if rest and plan.thinking and plan.thinking_complete:
        rest[0]["thoughtSignature"] = signature
    return {
        "candidates": [
            {
                "content": {"parts": parts + rest, "role": "model"},
                "finishReason": finish_reason,
                "index": 0,
            }
        ],
        "usageMetadata": _usage(plan, ask),
        "modelVersion": model,
        "responseId": response_id,
    }
