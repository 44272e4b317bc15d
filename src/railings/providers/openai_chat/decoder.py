"""OpenAI Chat Completions stream decoder: SSE events in, normalized events out.

Theory of operation. Each ``data:`` payload is one ``chat.completion.chunk``
JSON object, and ``data: [DONE]`` is the termination proof. The turn is one
choice (0 unless told otherwise); other choices (``n`` > 1) are read past, their indexes
counted in ``choices``, but what they carry was billed: the first delta of another choice
with anything in it but its role is :class:`BilledOutput`, so a cut after it is Partial.
What real providers send, and how it is handled here (see ``tests/corpus/README.md``):

* ``choices: []`` with ``usage`` (``include_usage``; also Azure's first chunk
  with ``prompt_filter_results``): usage only.
* ``delta.content`` as a list of parts (Magistral): ``text`` parts are text,
  ``thinking`` parts are reasoning.
* reasoning as ``reasoning_content`` (DeepSeek, xAI, Z.ai) or ``reasoning``
  (Groq, OpenRouter).
* tool calls as ``tool_calls[]`` (``tools=``) or as the legacy ``function_call``
  (``functions=``): which delta continues which call, the index-less, id-less and
  repeated-index shapes, and arguments sent as an object are read in
  ``calls.py`` (the decoder's base class).
* an ``error`` object inside a chunk (OpenRouter) or an ``event: error`` SSE
  event (Groq): a provider error, reported *after* whatever else the same
  chunk carried (its finish reason and usage are kept).

One handler table per level, as in the other two decoders: the SSE event name
(:data:`_EVENTS`), the delta's keys (:data:`_DELTA`, walked in table order, so
text, reasoning, refusal and tool calls come out in that order whatever the JSON's
key order), and the known fields of a chunk, a choice and a tool call. Fields that
carry nothing for the turn are listed as read past, with who sends them; any event
name, delta key, content part or field outside the tables becomes :class:`Unknown`
(counted in the turn), never a silent drop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from railings.events import (
    BilledOutput,
    MessageStart,
    StopReason,
    StreamEvent,
    TerminationProof,
    TextDelta,
    ToolArgumentsDelta,
    Unknown,
)
from railings.providers.base import usage_update
from railings.providers.openai_chat.calls import ChatCalls
from railings.providers.openai_chat.fields import (
    CHOICE_FIELDS,
    CHUNK_FIELDS,
    content,
    error_event,
    read_past,
    reasoning,
    reasoning_details,
    refusal,
    unknown_fields,
)
from railings.wire._events import (
    NEW,
    SET_FRAGMENT,
    SET_INDEX,
    SET_PARSED,
    SET_TEXT,
    Holes,
    arguments_delta,
    text_delta,
)
from railings.wire._json import load_object
from railings.wire.sse import ServerSentEvent

__all__ = ["DONE", "OpenAIChatDecoder", "error_event"]

DONE = "[DONE]"
_FREE = [("obfuscation",)]  # random padding against length side channels: read by nothing


class OpenAIChatDecoder(ChatCalls):
    """Turns the SSE events of one Chat Completions stream into normalized events."""

    __slots__ = (
        "_choice_keys",
        "_chunk_keys",
        "_other_billed",
        "_started",
        "choice",
        "choices",
    )

    def __init__(self, *, choice: int = 0) -> None:
        super().__init__()
        self.choice = choice  # the choice read (``n`` > 1 streams several, each by its index)
        self.choices: set[int] = set()  # every choice index the stream carried
        self._started = False
        self._other_billed = False  # another choice's output was reported (module docstring)
        # The fields last checked at each level against its table (see fields.py;
        # a call's and its function's: calls.py). Lists: ``[*obj]`` is cheaper
        # than ``tuple(obj)`` (docs/PERFORMANCE.md, "Why the code is as it is").
        self._chunk_keys: list[str] = []
        self._choice_keys: list[str] = []

    def feed(self, sse: ServerSentEvent) -> list[StreamEvent]:
        """The normalized events of one chunk, for the choice read: ``data: [DONE]`` is the
        termination proof, an ``error`` event or field is a provider error, an event name
        the table does not know is :class:`Unknown`. Data that is not a JSON object raises
        :class:`~railings.errors.MalformedStream`."""
        data = sse.data
        if data == DONE:
            return [TerminationProof(marker=DONE)]
        handler = _EVENTS.get(sse.event)
        if handler is None:
            return [Unknown(name=f"openai:event:{sse.event}")]
        return handler(self, load_object(data, where="openai chunk"))

    def feed_sse_object(self, event: str, obj: dict[str, Any]) -> list[StreamEvent]:
        """What :meth:`feed` returns for an event named ``event`` whose data parsed as the
        JSON object ``obj`` (so not ``[DONE]``): the reader's fast path, which parses
        the data itself (``turn/fastpath.py``)."""
        handler = _EVENTS.get(event)
        if handler is None:
            return [Unknown(name=f"openai:event:{event}")]
        return handler(self, obj)

    def feed_common(self, event: str, obj: dict[str, Any]) -> StreamEvent | None:
        """The one event of the commonest chunk, or None for any other chunk (then
        :meth:`feed_sse_object` decodes it): the reader's fast path (``turn/fastpath.py``).

        The commonest chunk is a content or argument fragment: one choice, the one read,
        whose delta holds ``content`` alone, or ``tool_calls`` alone with one fragment of a
        call already started at a known index; no finish reason, usage or error; and the
        chunk, the choice (and the call and its function) with the very fields, in the
        same order, that the table last checked at each level. For it the table emits
        exactly this one event: the decoder has started, every field check compares equal
        (so no :class:`Unknown`), and nothing else fires. What it skips is the table's
        lookups, lists and calls, never a check: any other shape returns None before it
        changes anything."""
        # (No _started check: a chunk with the keys of the last one checked follows it.)
        if (
            event != "message"
            or [*obj] != self._chunk_keys
            or obj.get("usage") is not None
            or obj.get("error")
        ):
            return None
        try:  # KeyError: a field missing; ValueError: not one choice, not one call
            choices = obj["choices"]
            if type(choices) is not list:
                return None
            (choice,) = choices
            if (
                type(choice) is not dict
                or [*choice] != self._choice_keys
                or choice.get("finish_reason") is not None
            ):
                return None
            index = choice["index"]  # (absent, 0 by default: the table reads that chunk)
            delta = choice["delta"]
            if (
                type(index) is not int
                or index != self.choice
                or index not in self.choices
                or type(delta) is not dict
                or len(delta) != 1
            ):
                return None
            content = delta.get("content")
            if content is not None:
                if type(content) is not str or not content:
                    return None
                made = NEW(TextDelta)  # text_delta(content), inline
                SET_TEXT(made, content)
                return made
            calls = delta["tool_calls"]
            if type(calls) is not list:
                return None
            (call,) = calls
            if type(call) is not dict or [*call] != self._call_keys:
                return None
            function = call["function"]
            wire_index = call["index"]
            if (
                type(function) is not dict
                or [*function] != self._function_keys
                or type(wire_index) is not int
            ):
                return None
            position, known_id = self._by_index[wire_index]
            arguments = function["arguments"]
        except (KeyError, ValueError):
            return None
        ident = call.get("id") or ""
        if type(ident) is not str or type(arguments) is not str or not arguments:
            return None
        if ident and known_id and ident != known_id:
            return None  # a new call at a known index
        piece = NEW(ToolArgumentsDelta)  # arguments_delta(position, arguments), inline
        SET_INDEX(piece, position)
        SET_FRAGMENT(piece, arguments)
        SET_PARSED(piece, False)
        return piece

    def common_template(self, event: str, obj: dict[str, Any], item: StreamEvent) -> Holes:
        """The holes of a chunk :meth:`feed_common` took (it returned ``item``) for the
        reader's block template (``turn/template.py``): the content or the arguments, and
        the ``obfuscation`` padding, which nothing reads. ``make`` is :meth:`feed_common`
        for the learned chunk with other values there: it checks the value is not empty
        and the decoder's state as :meth:`feed_common` does (the fields last checked, the
        choice read, the call at the chunk's index); the rest of the chunk passed."""
        keys = [*obj]
        choice = obj["choices"][0]
        choice_keys, index = [*choice], choice["index"]

        def fits() -> bool:
            return (
                self._chunk_keys == keys
                and self._choice_keys == choice_keys
                and index == self.choice
                and index in self.choices
            )

        if type(item) is TextDelta:

            def text(values: list[Any]) -> StreamEvent | None:
                content = values[0]
                return text_delta(content) if content and fits() else None

            return [("choices", 0, "delta", "content")], _FREE, text
        call = choice["delta"]["tool_calls"][0]
        call_keys, function_keys = [*call], [*call["function"]]
        wire_index, ident = call["index"], call.get("id") or ""

        def arguments(values: list[Any]) -> StreamEvent | None:
            fragment = values[0]
            if (
                not fragment
                or not fits()
                or self._call_keys != call_keys
                or self._function_keys != function_keys
            ):
                return None
            known = self._by_index.get(wire_index)
            if known is None:
                return None
            position, known_id = known
            if ident and known_id and ident != known_id:
                return None  # a new call at a known index
            return arguments_delta(position, fragment)

        return [("choices", 0, "delta", "tool_calls", 0, "function", "arguments")], _FREE, arguments

    def close(self) -> list[StreamEvent]:
        """No events: each SSE event was decoded whole as it came. Whether the end was
        proven is the assembler's to judge."""
        return []

    def _chunk(self, obj: dict[str, Any]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if not self._started:
            self._started = True
            ident = obj.get("id")
            if ident or obj.get("model"):
                out.append(MessageStart(id=str(ident or ""), model=str(obj.get("model") or "")))
        choices = obj.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict):
                    index = choice.get("index", 0)
                    if isinstance(index, int):
                        self.choices.add(index)
                    if index == self.choice:
                        self._choice(choice, out)
                    elif not self._other_billed and _carries_output(choice):
                        self._other_billed = True
                        out.append(BilledOutput(name="openai:choice:other"))
        usage = obj.get("usage")
        if isinstance(usage, dict):
            out += usage_update(usage, "prompt_tokens", "completion_tokens")
        keys = [*obj]
        if keys != self._chunk_keys:  # see railings.providers.openai_chat.fields
            self._chunk_keys = keys
            unknown_fields("chunk", obj, CHUNK_FIELDS, out)
        if obj.get("error"):
            out.append(error_event(obj))
        return out

    def _error(self, obj: dict[str, Any]) -> list[StreamEvent]:
        return [error_event(obj)]

    def _choice(self, choice: dict[str, Any], out: list[StreamEvent]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            content = delta.get("content")
            if type(content) is str and len(delta) == 1:
                # Nearly every chunk of a text stream is {"content": "..."} and nothing else.
                if content:
                    out.append(text_delta(content))
            elif len(delta) == 1:
                # One key alone (a tool call's fragment, a reasoning piece): the table's
                # order cannot matter, so its handler is looked up directly.
                for key, value in delta.items():
                    handle = _DELTA_HANDLERS.get(key)
                    if handle is None:
                        out.append(Unknown(name=f"openai:delta:{key}"))
                    elif value is not None:
                        handle(self, value, out)
            else:
                for key, handle in _DELTA:
                    value = delta.get(key)
                    if value is not None:
                        handle(self, value, out)
                if not _DELTA_KEYS.issuperset(delta):
                    unknown_fields("delta", delta, _DELTA_KEYS, out)
        keys = [*choice]
        if keys != self._choice_keys:
            self._choice_keys = keys
            unknown_fields("choice", choice, CHOICE_FIELDS, out)
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            self._close_all(out)
            out.append(StopReason(wire=finish))


def _carries_output(choice: dict[str, Any]) -> bool:
    """True when a choice's delta holds anything but its role (or Groq's channel name):
    text, reasoning, a refusal, a call, or a key this decoder does not know."""
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return bool(delta)  # not the shape known, but something: when in doubt, billed
    return any(
        key not in _NOT_OUTPUT and value is not None and value != "" and value != []
        for key, value in delta.items()
    )


_NOT_OUTPUT = frozenset({"role", "channel"})

_Handler = Callable[[OpenAIChatDecoder, dict[str, Any]], list[StreamEvent]]
_DeltaHandler = Callable[[OpenAIChatDecoder, Any, list[StreamEvent]], None]

# The SSE event name -> its handler. A chunk carries no ``event:`` line ("message");
# Groq reports a mid-stream error as ``event: error``.
_EVENTS: dict[str, _Handler] = {
    "message": OpenAIChatDecoder._chunk,
    "error": OpenAIChatDecoder._error,
}

# The delta's keys, in the order their events are emitted. A null value is no value.
_DELTA: tuple[tuple[str, _DeltaHandler], ...] = (
    ("content", content),
    ("reasoning_content", reasoning),  # DeepSeek, xAI, Z.ai
    ("reasoning", reasoning),  # Groq, OpenRouter
    ("refusal", refusal),
    ("tool_calls", OpenAIChatDecoder._tool_calls),
    ("function_call", OpenAIChatDecoder._function_call),  # ``functions=`` (chat_calls.py)
    # OpenRouter's structured reasoning: kept nowhere, but billed (chat_fields.py).
    ("reasoning_details", reasoning_details),
    # Read past: the role of the message (first chunk); Groq's gpt-oss channel name
    # ("analysis" beside ``reasoning``).
    ("role", read_past),
    ("channel", read_past),
)
_DELTA_HANDLERS = dict(_DELTA)
_DELTA_KEYS = frozenset(_DELTA_HANDLERS)
