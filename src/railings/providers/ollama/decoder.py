"""Ollama native ``/api/chat`` and ``/api/generate`` decoder: NDJSON lines in, normalized
events out.

Theory of operation. ``POST /api/chat`` and ``POST /api/generate`` (default
``http://127.0.0.1:11434``, ``OLLAMA_HOST``) stream ``application/x-ndjson``: one JSON
object per line, no ``data:`` framing and no sentinel. Every line carries ``model``,
``created_at`` and ``done``; its other fields are read by :data:`LINE_HANDLERS`, in that
table's order: a chat line's ``message``, a generate line's ``thinking``, ``response``
and ``tool_calls`` (the same fields a chat message has, at the top level). A
``message``'s keys are read by :data:`MESSAGE_HANDLERS`:

* ``content`` -- answer text; ``thinking`` -- reasoning text (``think: true``).
* ``tool_calls`` -- calls arrive **whole**, arguments already parsed into objects
  (``function.arguments``): railings' serialization of them is marked ``parsed``, so
  a call in a turn cut by ``num_predict`` is never executed on its own say-so.
  Newer servers give each call an ``id`` (and ``function.index``).
* ``role`` (always ``assistant``) carries nothing; ``images`` and anything else is
  :class:`Unknown`.

A generate line's ``response`` is answer text (empty on the final line of a stream,
the whole text when the request did not stream), its ``thinking`` reasoning; its final
line also carries ``context`` (token ids, read past), and an empty prompt answers one
line with ``done_reason`` ``load`` (or ``unload``) and no text. One decoder reads both
endpoints: a line says which by its fields, and the proof and usage are the same.

**The proof is the line with ``done: true``**: it also carries ``done_reason``
(``stop``, ``length`` -- the ``num_predict`` output-limit cut -- and ``load`` /
``unload`` for the model lifecycle; older servers omit it, and the stop reason is
then derived) and the usage, ``prompt_eval_count`` and ``eval_count``. A line with
an ``error`` field is a provider error; a line that is not a JSON object is a
:class:`~railings.errors.MalformedStream`.

The OpenAI-compatible endpoint (``/v1/chat/completions``) is a different wire: the
``openai`` decoder reads it, and its proof is ``data: [DONE]``, which Ollama has
written at the end of every stream since that endpoint first shipped
(ollama/ollama ``middleware/openai.go``, 2024-02, #2376). Its ``finish_reason`` is
copied from ``done_reason`` and is ``null`` when the native line has none: until
ollama/ollama#17485 (2026-08, which sends ``cmp.Or(done_reason, "stop")`` on a
dedicated finish chunk) a complete stream from a server or model that sets no
``done_reason`` ended with ``finish_reason: null`` and then ``[DONE]``, and
non-streaming answers still carry ``finish_reason: null`` in that case (seen with
gemma3, docling-project/docling#1647). This is why pydantic-ai declined to make a
missing finish reason an error (pydantic/pydantic-ai#2996, #3045). railings has no
such dilemma: a missing finish reason is not a missing proof. ``[DONE]`` ends the
turn cleanly, the stop reason is derived (``max_tokens`` when the billed output
reached the requested limit, ``tool_use`` with calls, else ``end_turn``), and a
stream cut before ``[DONE]`` is interrupted whatever ``finish_reason`` said.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

from railings.events import (
    MessageStart,
    ProviderErrorEvent,
    StopReason,
    StreamEvent,
    TerminationProof,
    TextDelta,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unknown,
    UsageUpdate,
)
from railings.providers.base import as_str as _str
from railings.wire._held import HeldStream
from railings.wire._json import as_count, load_object
from railings.wire.ndjson import NDJSONDecoder
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE

__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_HOST",
    "DONE",
    "LINE_HANDLERS",
    "MESSAGE_HANDLERS",
    "READ_PAST",
    "STOP_REASONS",
    "OllamaDecoder",
    "OllamaStream",
    "is_ollama",
]

CONTENT_TYPE: Final = "application/x-ndjson"
DEFAULT_HOST: Final = "http://127.0.0.1:11434"
DONE: Final = "done"

# done_reason -> railings' normalized stop reason. ``load`` / ``unload`` answer an empty
# request (the model was loaded or unloaded): kept as they are, they are not a chat stop.
STOP_REASONS: Final[dict[str, str]] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "load": "load",
    "unload": "unload",
}


# Top-level fields read past on purpose (identity, timings, token ids); any other is
# counted as Unknown.
READ_PAST: Final = frozenset(
    {
        "model",
        "created_at",
        "total_duration",
        "load_duration",
        "prompt_eval_duration",
        "eval_duration",
        "context",
        "logprobs",
        "remote_model",
        "remote_host",
        "_debug_info",  # the rendered prompt template, on request
    }
)
_READ: Final = frozenset({DONE, "done_reason", "prompt_eval_count", "eval_count", "error"})


def is_ollama(content_type: str, first_line: bytes = b"") -> bool:
    """Detection: the NDJSON media type, or a first line holding the keys every native
    line has (chat and generate alike)."""
    if content_type.split(";")[0].strip().lower() == CONTENT_TYPE:
        return True
    line = first_line.lstrip()
    return line.startswith(b"{") and all(
        key in line for key in (b'"model"', b'"created_at"', b'"done"')
    )


class OllamaDecoder:
    """Turns the lines of one ``/api/chat`` or ``/api/generate`` stream into normalized
    events."""

    __slots__ = ("_next", "_started")

    def __init__(self) -> None:
        self._started = False
        self._next = 0  # position of the next call

    def feed(self, line: str) -> list[StreamEvent]:
        """The normalized events of one line: ``done: true`` carries the termination
        proof. A line that is not a JSON object raises
        :class:`~railings.errors.MalformedStream`."""
        obj = load_object(line, where="ollama line")
        out: list[StreamEvent] = []
        if not self._started:
            self._started = True
            out.append(MessageStart(id="", model=_str(obj.get("model"))))
        error = obj.get("error")
        if error is not None:
            text = error if isinstance(error, str) else json.dumps(error)
            return [*out, ProviderErrorEvent(message=text or "provider error", provider_type=None)]
        out += [Unknown(name=f"ollama:{k}") for k in obj if k not in _KNOWN]
        for key, handler in LINE_HANDLERS.items():
            if key in obj:
                out += handler(self, obj[key])
        if obj.get(DONE) is True:
            prompt = as_count(obj.get("prompt_eval_count"))
            output = as_count(obj.get("eval_count"))
            if prompt is not None or output is not None:
                out.append(UsageUpdate(input_tokens=prompt, output_tokens=output))
            reason = _str(obj.get("done_reason"))
            if reason:
                out.append(StopReason(wire=reason))
            out.append(TerminationProof(marker=DONE))
        return out

    def close(self) -> list[StreamEvent]:
        """No events: each line was decoded whole as it came."""
        return []

    def _message(self, value: object) -> list[StreamEvent]:
        if not isinstance(value, dict):
            return [] if value is None else [Unknown(name="ollama:message")]
        out: list[StreamEvent] = []
        for key, item in value.items():
            handler = MESSAGE_HANDLERS.get(key)
            if handler is not None:
                out += handler(self, item)
            elif item not in (None, "", []):
                out.append(Unknown(name=f"ollama:message:{key}"))
        return out

    def _tool_calls(self, value: object) -> list[StreamEvent]:
        if not isinstance(value, list):
            return [Unknown(name="ollama:message:tool_calls")] if value else []
        out: list[StreamEvent] = []
        for call in value:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                out.append(Unknown(name="ollama:tool_call"))
                continue
            position = self._next
            self._next += 1
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                whole = arguments  # some compatible servers send the text: it is not parsed
                parsed = False
            else:
                whole = json.dumps(
                    arguments if isinstance(arguments, dict) else {}, ensure_ascii=False
                )
                parsed = True
            ident = call.get("id") if isinstance(call, dict) else None
            out += [
                ToolCallStart(index=position, id=_str(ident), name=function["name"]),
                ToolArgumentsDelta(index=position, fragment=whole, parsed=parsed),
                ToolCallEnd(index=position),
            ]
        return out


def _content(_: OllamaDecoder, value: object) -> list[StreamEvent]:
    if not isinstance(value, str):
        return [] if value is None else [Unknown(name="ollama:content")]
    return [TextDelta(text=value)] if value else []


def _thinking(_: OllamaDecoder, value: object) -> list[StreamEvent]:
    if not isinstance(value, str):
        return [] if value is None else [Unknown(name="ollama:thinking")]
    return [ThinkingDelta(text=value)] if value else []


def _silent(_: OllamaDecoder, value: object) -> list[StreamEvent]:
    return []


_Handler = Callable[[OllamaDecoder, object], list[StreamEvent]]

MESSAGE_HANDLERS: Final[dict[str, _Handler]] = {
    "content": _content,
    "thinking": _thinking,
    "tool_calls": OllamaDecoder._tool_calls,
    "role": _silent,
}

# A line's own fields, read in this order: ``message`` (``/api/chat``); ``thinking``,
# ``response`` and ``tool_calls`` (``/api/generate``), the reasoning before the answer
# whatever the key order of the object.
LINE_HANDLERS: Final[dict[str, _Handler]] = {
    "message": OllamaDecoder._message,
    "thinking": _thinking,
    "response": _content,
    "tool_calls": OllamaDecoder._tool_calls,
}
_KNOWN: Final = frozenset(LINE_HANDLERS) | _READ | READ_PAST


class OllamaStream(HeldStream[str]):
    """Bytes in, normalized events out: :class:`NDJSONDecoder` and :class:`OllamaDecoder`
    (``wire/_held.py``). At EOF a last line without its LF is decoded too (a cut one
    raises)."""

    __slots__ = ()

    def __init__(self, *, max_line_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        super().__init__(NDJSONDecoder(max_line_size=max_line_size), OllamaDecoder())

    @property
    def lines_seen(self) -> int:
        """The lines decoded so far."""
        return self.seen
