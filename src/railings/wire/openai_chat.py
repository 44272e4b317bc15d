"""OpenAI Chat Completions stream decoder: SSE events in, normalized events out.

Theory of operation. Each ``data:`` payload is one ``chat.completion.chunk``
JSON object, and ``data: [DONE]`` is the termination proof. The turn is one
choice (0 unless told otherwise); other choices (``n`` > 1) are read past, their indexes
counted in ``choices``. What real providers send, and how
it is handled here (see ``tests/corpus/README.md``):

* ``choices: []`` with ``usage`` (``include_usage``; also Azure's first chunk
  with ``prompt_filter_results``): usage only.
* ``delta.content`` as a list of parts (Magistral): ``text`` parts are text,
  ``thinking`` parts are reasoning.
* reasoning as ``reasoning_content`` (DeepSeek, xAI, Z.ai) or ``reasoning``
  (Groq, OpenRouter).
* tool calls keyed by ``tool_calls[].index``; Mistral omits ``index`` (keyed by
  ``id``); Alibaba repeats ``id: ""`` on continuations (same call); some
  providers send several whole calls all at index 0 with distinct ids (a new
  id at a known index starts a new call).
* ``function.arguments`` sent as a JSON object instead of a string (some
  OpenAI-compatible servers): serialized, and marked ``parsed`` -- in a turn cut
  by the output limit such a call is never executed (see ``turn/verdict.py``).
* an ``error`` object inside a chunk (OpenRouter) or an ``event: error`` SSE
  event (Groq): a provider error, reported *after* whatever else the same
  chunk carried (its finish reason and usage are kept).
"""

from __future__ import annotations

import json
from typing import Any

from railings.events import (
    MessageStart,
    ProviderErrorEvent,
    RefusalDelta,
    StopReason,
    StreamEvent,
    TerminationProof,
    TextDelta,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    UsageUpdate,
)
from railings.wire._json import as_int, load_object
from railings.wire.sse import ServerSentEvent

__all__ = ["DONE", "OpenAIChatDecoder", "error_event"]

DONE = "[DONE]"


class OpenAIChatDecoder:
    """Turns the SSE events of one Chat Completions stream into normalized events."""

    __slots__ = ("_by_id", "_by_index", "_last", "_next", "_open", "_started", "choice", "choices")

    def __init__(self, *, choice: int = 0) -> None:
        self.choice = choice  # the choice read (``n`` > 1 streams several, each by its index)
        self.choices: set[int] = set()  # every choice index the stream carried
        self._started = False
        self._next = 0  # position of the next call to start
        self._by_index: dict[int, tuple[int, str]] = {}  # wire index -> (position, id)
        self._by_id: dict[str, int] = {}  # id -> position
        self._last: int | None = None  # position of the latest call
        self._open: set[int] = set()  # positions whose argument block is not closed yet

    def feed(self, sse: ServerSentEvent) -> list[StreamEvent]:
        """The normalized events of one chunk, for the choice read: ``data: [DONE]`` is the
        termination proof, an ``error`` event or field is a provider error. Data that is
        not a JSON object raises :class:`~railings.errors.MalformedStream`."""
        data = sse.data
        if data == DONE:
            return [TerminationProof(DONE)]
        obj = load_object(data, where="openai chunk")
        if sse.event == "error":
            return [error_event(obj)]
        out: list[StreamEvent] = []
        if not self._started:
            self._started = True
            ident = obj.get("id")
            if ident or obj.get("model"):
                out.append(MessageStart(str(ident or ""), str(obj.get("model") or "")))
        choices = obj.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict):
                    index = choice.get("index", 0)
                    if isinstance(index, int):
                        self.choices.add(index)
                    if index == self.choice:
                        self._choice(choice, out)
        usage = obj.get("usage")
        if isinstance(usage, dict):
            out.append(
                UsageUpdate(
                    as_int(usage.get("prompt_tokens")), as_int(usage.get("completion_tokens"))
                )
            )
        if obj.get("error"):
            out.append(error_event(obj))
        return out

    def close(self) -> list[StreamEvent]:
        """No events: each SSE event was decoded whole as it came. Whether the end was
        proven is the assembler's to judge."""
        return []

    def _choice(self, choice: dict[str, Any], out: list[StreamEvent]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            content = delta.get("content")
            if isinstance(content, str):
                if content:
                    out.append(TextDelta(content))
            elif isinstance(content, list):
                _content_parts(content, out)
            # Nearly every chunk of a text stream is {"content": "..."} and nothing else:
            # then reasoning, refusal and tool calls need no lookups.
            if len(delta) > 1 or content is None:
                self._other_fields(delta, out)
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            for position in sorted(self._open):
                out.append(ToolCallEnd(position))
            self._open.clear()
            out.append(StopReason(finish))

    def _other_fields(self, delta: dict[str, Any], out: list[StreamEvent]) -> None:
        """Reasoning, refusal and tool calls, in this order whatever the JSON's key order."""
        for key in ("reasoning_content", "reasoning"):
            reasoning = delta.get(key)
            if isinstance(reasoning, str) and reasoning:
                out.append(ThinkingDelta(reasoning))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            out.append(RefusalDelta(refusal))
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict):
                    self._tool_call(call, out)

    def _tool_call(self, call: dict[str, Any], out: list[StreamEvent]) -> None:
        ident = call.get("id") or ""
        if not isinstance(ident, str):
            ident = str(ident)
        function = call.get("function")
        if not isinstance(function, dict):
            function = {}
        wire_index = call.get("index")
        position = self._position(wire_index if isinstance(wire_index, int) else None, ident)
        if position is None:
            position = self._start(wire_index if isinstance(wire_index, int) else None, ident)
            name = function.get("name") or ""
            out.extend(self._close_others(position))
            out.append(ToolCallStart(position, ident, str(name)))
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            # Some servers send the arguments as an object rather than a JSON string. The
            # server parsed (often repaired) the model's text: serialized here, it parses
            # strictly whatever the model wrote, so it is marked as proving nothing.
            out.append(ToolArgumentsDelta(position, json.dumps(arguments), parsed=True))
        elif arguments:
            out.append(ToolArgumentsDelta(position, arguments))

    def _position(self, wire_index: int | None, ident: str) -> int | None:
        """The position of the call this delta continues, or None for a new call."""
        if wire_index is None:
            if ident:
                return self._by_id.get(ident)
            return self._last
        known = self._by_index.get(wire_index)
        if known is None:
            return None
        position, known_id = known
        if ident and known_id and ident != known_id:
            return None  # several whole calls at one index: a new id is a new call
        return position

    def _start(self, wire_index: int | None, ident: str) -> int:
        position = self._next
        self._next += 1
        if wire_index is not None:
            self._by_index[wire_index] = (position, ident)
        if ident:
            self._by_id[ident] = position
        self._last = position
        self._open.add(position)
        return position

    def _close_others(self, started: int) -> list[StreamEvent]:
        """A later call starting closes the argument blocks of the earlier ones."""
        ended = [p for p in sorted(self._open) if p != started]
        for position in ended:
            self._open.discard(position)
        return [ToolCallEnd(p) for p in ended]


def _content_parts(parts: list[Any], out: list[StreamEvent]) -> None:
    """``delta.content`` given as a list of parts (Mistral Magistral)."""
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if isinstance(text, str) and text:
                out.append(TextDelta(text))
        elif kind == "thinking":
            inner = part.get("thinking")
            if isinstance(inner, str):
                if inner:
                    out.append(ThinkingDelta(inner))
            elif isinstance(inner, list):
                for sub in inner:
                    if isinstance(sub, dict) and isinstance(sub.get("text"), str) and sub["text"]:
                        out.append(ThinkingDelta(sub["text"]))


def error_event(obj: dict[str, Any]) -> ProviderErrorEvent:
    """An OpenAI-style error object (``{"error": {...}}``) as a normalized event."""
    error = obj.get("error", obj)
    if not isinstance(error, dict):
        return ProviderErrorEvent(str(error), None)
    kind = error.get("code") if isinstance(error.get("code"), str) else None
    kind = kind or (error.get("type") if isinstance(error.get("type"), str) else None)
    status = error.get("status_code", error.get("code"))
    return ProviderErrorEvent(
        str(error.get("message") or "provider error"),
        kind,
        status if isinstance(status, int) else None,
    )
