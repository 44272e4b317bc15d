"""Ollama's native ``/api/chat``, as the scripted server writes it (sans-IO: dicts and bytes).

Shapes follow the real server (see ``tests/corpus/ollama/``): NDJSON, one compact
JSON object per line, each with ``model``, ``created_at``, a ``message`` (``role``,
``content``, ``thinking`` for reasoning models, ``tool_calls`` whole and parsed)
and ``done: false``; the last line is ``done: true`` with ``done_reason`` (the
termination proof; ``length`` is the output-limit cut), the durations and the
counts (``prompt_eval_count``, ``eval_count``). A request streams unless it says
``"stream": false``; then the answer is that last line with the whole message.

Ollama parses tool calls itself, so a call ``num_predict`` cut is never sent (its
text is not a call yet): the call is left out and ``done_reason`` is ``length``.
Errors are ``{"error": "..."}``, in a body or as a line of the stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from railings.testing.script import Plan, count_tokens

__all__ = ["OllamaAsk", "error_event", "events", "final", "parse_ask", "status_error"]

CREATED_AT = "2026-01-01T00:00:00.000000000Z"
_DURATIONS = {
    "total_duration": 1000000,
    "load_duration": 100000,
    "prompt_eval_duration": 100000,
    "eval_duration": 800000,
}


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def line(obj: Any) -> bytes:
    """One NDJSON line."""
    return _dumps(obj).encode() + b"\n"


_STATUS = {
    400: "invalid request",
    401: "unauthorized",
    404: "model not found, try pulling it first",
    405: "method not allowed",
    429: "too many requests",
    500: "an error was encountered while running the model",
    503: "server busy, please try again. maximum pending requests exceeded",
}


def status_error(status: int, message: str | None = None) -> dict[str, Any]:
    """The error body Ollama sends with ``status``."""
    return {"error": message or _STATUS.get(status, "error")}


def error_event(kind: str) -> tuple[bytes, str]:
    """A mid-stream error line, and how to name it."""
    text = {"rate_limit_error": _STATUS[429], "api_error": _STATUS[500]}.get(kind, _STATUS[503])
    return line({"error": text}), f"an error line ({text!r})"


@dataclass(frozen=True, slots=True)
class OllamaAsk:
    """A valid ``/api/chat`` request, reduced to what the server needs: the model, the
    messages, whether it streams (unless ``stream`` is false), ``options.num_predict``
    and the prompt size."""

    model: str
    messages: list[Any]
    stream: bool
    max_tokens: int | None
    input_tokens: int


def parse_ask(obj: Any) -> OllamaAsk | str:
    """Validate a request body; a string is the 400 message."""
    if not isinstance(obj, Mapping):
        return "invalid request body"
    model, messages = obj.get("model"), obj.get("messages")
    if not isinstance(model, str) or not model:
        return "model is required"
    if messages is not None and not isinstance(messages, list):
        return "messages must be an array"
    options = obj.get("options") or {}
    limit = options.get("num_predict") if isinstance(options, Mapping) else None
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        return "option num_predict must be an integer"
    if limit is not None and limit < 0:
        limit = None  # -1: no limit
    prompt = _dumps([messages, obj.get("tools")])
    return OllamaAsk(
        model,
        list(messages or []),
        obj.get("stream") is not False,
        limit,
        count_tokens(len(prompt)),
    )


def _calls(plan: Plan) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for call in plan.calls:
        if not call.complete:
            continue  # see the module docstring
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError:
            continue
        if isinstance(args, dict):
            out.append(
                {
                    "id": call.id,
                    "function": {"index": len(out), "name": call.name, "arguments": args},
                }
            )
    return out


def _pieces(s: str, size: int) -> Iterator[str]:
    for start in range(0, len(s), size):
        yield s[start : start + size]


def final(
    plan: Plan, ask: OllamaAsk, *, done_reason: str, model: str, whole: bool
) -> dict[str, Any]:
    """The ``done: true`` object: the last line of a stream, or (``whole``) the answer to
    a request that does not stream, with the whole message."""
    message: dict[str, Any] = {"role": "assistant", "content": plan.text if whole else ""}
    if whole and plan.thinking:
        message["thinking"] = plan.thinking
    calls = _calls(plan)
    if whole and calls:
        message["tool_calls"] = calls
    return {
        "model": model,
        "created_at": CREATED_AT,
        "message": message,
        "done": True,
        "done_reason": done_reason,
        **_DURATIONS,
        "prompt_eval_count": ask.input_tokens,
        "eval_count": plan.output_tokens,
    }


def events(
    plan: Plan, ask: OllamaAsk, *, done_reason: str, model: str, chunk_size: int
) -> Iterator[bytes]:
    """The NDJSON lines of a streamed response, one ``bytes`` per line."""

    def chunk(message: dict[str, Any]) -> bytes:
        return line(
            {
                "model": model,
                "created_at": CREATED_AT,
                "message": {"role": "assistant", "content": "", **message},
                "done": False,
            }
        )

    for piece in _pieces(plan.thinking, chunk_size):
        yield chunk({"thinking": piece})
    for piece in _pieces(plan.text, chunk_size):
        yield chunk({"content": piece})
    calls = _calls(plan)
    if calls:
        yield chunk({"tool_calls": calls})
    yield line(final(plan, ask, done_reason=done_reason, model=model, whole=False))
