"""Ollama's native ``/api/chat`` and ``/api/generate``, as the scripted server writes them
(sans-IO: dicts and bytes).

Shapes follow the real server (see ``tests/corpus/ollama/``): NDJSON, one compact
JSON object per line, each with ``model``, ``created_at``, a ``message`` (``role``,
``content``, ``thinking`` for reasoning models, ``tool_calls`` whole and parsed)
and ``done: false``; the last line is ``done: true`` with ``done_reason`` (the
termination proof; ``length`` is the output-limit cut), the durations and the
counts (``prompt_eval_count``, ``eval_count``). A request streams unless it says
``"stream": false``; then the answer is that last line with the whole message.

``/api/generate`` takes a ``prompt`` (no conversation: the turn is the first, unless
``x-railings-turn`` picks one) and answers lines with ``response`` (the text) and
``thinking`` at the top level where a chat line has ``message``, ``response: ""`` on
every line that carries none; complete calls go as top-level ``tool_calls``, as the
server's ``GenerateResponse`` has them. The final line is the same ``done: true``
proof, with ``context`` (token ids; a fixed short list here). A request with an empty
prompt loads the model: one JSON object, ``done_reason`` ``load`` (``unload`` with
``keep_alive`` 0), streamed or not, as the API documents.

Ollama parses tool calls itself, so a call ``num_predict`` cut is never sent (its
text is not a call yet): the call is left out and ``done_reason`` is ``length``.
Errors are ``{"error": "..."}``, in a body or as a line of the stream.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from railings.testing.plan import Plan, compact, count_tokens, pieces

__all__ = [
    "GENERATE",
    "OllamaAsk",
    "error_event",
    "events",
    "final",
    "generate_events",
    "generate_final",
    "lifecycle",
    "parse_ask",
    "parse_generate",
    "status_error",
]

GENERATE = "/api/generate"
CREATED_AT = "2026-01-01T00:00:00.000000000Z"
CONTEXT = [1, 2, 3]  # the token ids a final generate line carries, shortened
_DURATIONS = {
    "total_duration": 1000000,
    "load_duration": 100000,
    "prompt_eval_duration": 100000,
    "eval_duration": 800000,
}


def line(obj: Any) -> bytes:
    """One NDJSON line."""
    return compact(obj).encode() + b"\n"


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
    """A valid ``/api/chat`` or ``/api/generate`` request, reduced to what the server
    needs: the model, the messages (none for generate), whether it streams (unless
    ``stream`` is false), ``options.num_predict``, the prompt size, whether it is a
    generate request, and for a generate request with an empty prompt the lifecycle
    answer it gets (``load`` / ``unload``)."""

    model: str
    messages: list[Any]
    stream: bool
    max_tokens: int | None
    input_tokens: int
    generate: bool = False
    lifecycle: str | None = None


def _common(obj: Any) -> tuple[str, int | None] | str:
    """The model and the output limit of either request, or the 400 message."""
    if not isinstance(obj, Mapping):
        return "invalid request body"
    model = obj.get("model")
    if not isinstance(model, str) or not model:
        return "model is required"
    options = obj.get("options") or {}
    limit = options.get("num_predict") if isinstance(options, Mapping) else None
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        return "option num_predict must be an integer"
    if limit is not None and limit < 0:
        limit = None  # -1: no limit
    return model, limit


def parse_ask(obj: Any) -> OllamaAsk | str:
    """Validate an ``/api/chat`` body; a string is the 400 message."""
    common = _common(obj)
    if isinstance(common, str):
        return common
    model, limit = common
    messages = obj.get("messages")
    if messages is not None and not isinstance(messages, list):
        return "messages must be an array"
    prompt = compact([messages, obj.get("tools")])
    return OllamaAsk(
        model,
        list(messages or []),
        obj.get("stream") is not False,
        limit,
        count_tokens(len(prompt)),
    )


def parse_generate(obj: Any) -> OllamaAsk | str:
    """Validate an ``/api/generate`` body; a string is the 400 message."""
    common = _common(obj)
    if isinstance(common, str):
        return common
    model, limit = common
    prompt, system = obj.get("prompt"), obj.get("system")
    if not isinstance(prompt, str | None) or not isinstance(system, str | None):
        return "prompt and system must be strings"
    phase = None
    if not prompt:
        unload = obj.get("keep_alive") in (0, "0", "0s", "0m")
        phase = "unload" if unload else "load"
    return OllamaAsk(
        model,
        [],
        obj.get("stream") is not False,
        limit,
        count_tokens(len(compact([system, prompt]))),
        generate=True,
        lifecycle=phase,
    )


def _calls(plan: Plan) -> list[dict[str, Any]]:
    # A cut call is left out: see the module docstring.
    return [
        {"id": call.id, "function": {"index": i, "name": call.name, "arguments": args}}
        for i, (call, args) in enumerate(plan.whole_calls())
    ]


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

    for piece in pieces(plan.thinking, chunk_size):
        yield chunk({"thinking": piece})
    for piece in pieces(plan.text, chunk_size):
        yield chunk({"content": piece})
    calls = _calls(plan)
    if calls:
        yield chunk({"tool_calls": calls})
    yield line(final(plan, ask, done_reason=done_reason, model=model, whole=False))


# -- /api/generate ------------------------------------------------------------------------


def lifecycle(ask: OllamaAsk, *, model: str) -> dict[str, Any]:
    """The answer to a generate request with an empty prompt: the model was loaded (or
    unloaded), nothing generated."""
    return {
        "model": model,
        "created_at": CREATED_AT,
        "response": "",
        "done": True,
        "done_reason": ask.lifecycle or "load",
    }


def generate_final(
    plan: Plan, ask: OllamaAsk, *, done_reason: str, model: str, whole: bool
) -> dict[str, Any]:
    """The ``done: true`` object of a generate answer: the last line of a stream, or
    (``whole``) the answer to a request that does not stream, with the whole text."""
    out: dict[str, Any] = {"model": model, "created_at": CREATED_AT}
    out["response"] = plan.text if whole else ""
    if whole and plan.thinking:
        out["thinking"] = plan.thinking
    out |= {"done": True, "done_reason": done_reason, "context": CONTEXT, **_DURATIONS}
    out |= {"prompt_eval_count": ask.input_tokens, "eval_count": plan.output_tokens}
    calls = _calls(plan)
    if whole and calls:
        out["tool_calls"] = calls
    return out


def generate_events(
    plan: Plan, ask: OllamaAsk, *, done_reason: str, model: str, chunk_size: int
) -> Iterator[bytes]:
    """The NDJSON lines of a streamed generate answer, one ``bytes`` per line."""

    def chunk(**fields: Any) -> bytes:
        body = {"model": model, "created_at": CREATED_AT, "response": "", **fields}
        return line({**body, "done": False})

    for piece in pieces(plan.thinking, chunk_size):
        yield chunk(thinking=piece)
    for piece in pieces(plan.text, chunk_size):
        yield chunk(response=piece)
    calls = _calls(plan)
    if calls:
        yield chunk(tool_calls=calls)
    yield line(generate_final(plan, ask, done_reason=done_reason, model=model, whole=False))
