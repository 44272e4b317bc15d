"""OpenAI Responses API stream decoder: SSE events in, normalized events out.

Theory of operation. ``POST /responses`` with ``stream: true`` sends typed
events: every ``data:`` payload is a JSON object whose ``type`` names it
(OpenAI repeats it in the SSE ``event:`` field; OpenRouter sends no ``event:``
line, so ``type`` wins and the field is only a fallback). There is no
``[DONE]``: the termination proof is the response's own terminal event.

* ``response.completed`` -- usage, the response's output items
  (:class:`OutputItems`), the status ``completed`` as the wire stop reason, then the
  proof. ``completed`` is the API's own word that the output was not cut (a cut arrives
  as ``response.incomplete``): it normalizes to ``tool_use`` with calls, else ``end_turn``.
* ``response.incomplete`` -- usage, ``incomplete_details.reason`` as the wire
  stop reason (``max_output_tokens`` normalizes to ``max_tokens``, so the
  truncation gate applies; ``content_filter`` stays itself), then the proof.
* ``response.failed`` and the ``error`` event -- a provider error: the turn
  ends abruptly, typed by ``error.code``. ``response.failed`` also keeps its
  usage.
* ``[DONE]`` (OpenRouter appends it after ``response.completed``) is a
  trailer, read past: it proves nothing for this API.
* ``sequence_number``: the API numbers every event from 0. A gap, a repeat or a
  step back is a malformed stream (events lost, duplicated or reordered on the
  way), so such a turn is never reported finished with altered text.

The output is a list of items, each opened by ``response.output_item.added``
and closed by ``response.output_item.done``, addressed by ``output_index``
and by ``item_id`` (deltas carry both; the id is looked up first).

* ``message`` items: text arrives as ``response.output_text.delta`` and
  ``response.refusal.delta``.
* ``reasoning`` items: ``response.reasoning_summary_text.delta`` (OpenAI's
  summaries) and ``response.reasoning_text.delta`` (raw reasoning, e.g.
  gpt-oss through OpenRouter) are thinking. Encrypted reasoning content is
  not text; the finished item is a :class:`BilledOutput` (billed: a cut is Partial).
* Calls the client must act on (:data:`LOCAL_ITEMS`, see
  :mod:`railings.providers.openai_responses.items`): ``function_call`` (arguments in
  ``response.function_call_arguments.delta``), ``custom_tool_call`` (freeform
  input in ``response.custom_tool_call_input.delta``), ``mcp_approval_request``
  (a provider-run MCP call waiting for approval), and ``local_shell_call``,
  ``shell_call``, ``apply_patch_call`` and ``computer_call`` (objects, read from
  the finished item and marked as parsed upstream). A call's id is its
  ``call_id``, the id its output must be sent back under (the item id for an
  approval request). When no delta arrived for a call, the ``.done`` event's whole
  value (else the ``output_item.done`` item's) becomes its arguments; after a
  delta, the deltas alone are the arguments, never mixed with a later snapshot.
* Calls the provider runs (:data:`SERVER_ITEMS`): ``web_search_call``,
  ``file_search_call``, ``code_interpreter_call``, ``image_generation_call``
  (kind ``server_tool_use``) and ``mcp_call`` (kind ``mcp_tool_use``, its
  arguments streamed in ``response.mcp_call_arguments.delta``). They are kept
  for display and history, never executed locally; their
  ``output_item.done`` is the :class:`ServerToolResult`. Their id is the
  item id. Other items become :class:`Unknown`.

A delta whose text is the empty string is no event at all: it is not content
(a stream cut after it is Empty and may be resent). The decoder is one handler
table keyed by the event type (:data:`_HANDLERS`; the lifecycle events' handlers
are in :mod:`railings.providers.openai_responses.lifecycle`). Events that carry nothing the
turn needs (:data:`READ_PAST`) are read past on purpose; any other event type,
and any item type outside the item tables, becomes :class:`Unknown`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from railings.errors import MalformedStream
from railings.events import (
    BilledOutput,
    CallType,
    RefusalDelta,
    ServerToolResult,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolKind,
    Unknown,
)
from railings.providers.base import as_str as _str
from railings.providers.openai_responses.items import LOCAL_ITEMS, SERVER_ITEMS, final_input
from railings.providers.openai_responses.lifecycle import COMPLETED, FAILED, INCOMPLETE, LIFECYCLE
from railings.wire._events import NEW, SET_TEXT, arguments_delta, text_delta
from railings.wire._json import as_int, load_object
from railings.wire.sse import ServerSentEvent

__all__ = [
    "COMPLETED",
    "FAILED",
    "INCOMPLETE",
    "LOCAL_ITEMS",
    "READ_PAST",
    "SEQUENCE_NUMBER",
    "SERVER_ITEMS",
    "OpenAIResponsesDecoder",
]

# An event's number as raw bytes show it, for readers that scan a body without parsing it
# (the guard, the fault proxy). Model text cannot forge one: in a JSON string the quote
# before the colon would be escaped.
SEQUENCE_NUMBER = re.compile(rb'"sequence_number"[ \t]*:[ \t]*(\d+)')

# Items whose content arrives as deltas (message, reasoning) or that carry nothing a turn
# needs (the MCP server's tool listing), and the fields each holds once written.
_PLAIN_ITEMS = frozenset({"message", "reasoning", "mcp_list_tools"})
_ITEM_CONTENT = ("content", "summary", "encrypted_content", "tools")

# Known events with nothing for the turn: lifecycle and progress notices, the `.done`
# snapshots that repeat what the deltas already gave, annotations, partial images.
READ_PAST = frozenset(
    {
        "response.in_progress",
        "response.queued",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.output_text.annotation.added",
        "response.refusal.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "response.image_generation_call.in_progress",
        "response.image_generation_call.generating",
        "response.image_generation_call.partial_image",
        "response.image_generation_call.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        # The progress of items read whole from their output_item.done (responses_items).
        "response.shell_call_command.added",
        "response.shell_call_command.delta",
        "response.shell_call_command.done",
        "response.apply_patch_call_operation_diff.delta",
        "response.apply_patch_call_operation_diff.done",
    }
)

_DONE = "[DONE]"


class _Call:
    __slots__ = ("fed", "id", "item_type", "position")

    def __init__(self, position: int, item_type: str, ident: str) -> None:
        self.position = position
        self.item_type = item_type
        self.id = ident
        self.fed = False  # True once any argument fragment was emitted for it


class OpenAIResponsesDecoder:
    """Turns the SSE events of one Responses API stream into normalized events."""

    __slots__ = ("_by_item", "_by_output", "_next", "sequence")

    def __init__(self) -> None:
        self._next = 0  # position of the next call, local or provider-run
        self._by_item: dict[str, _Call] = {}
        self._by_output: dict[int, _Call] = {}
        self.sequence: int | None = None  # the last sequence_number seen

    def feed(self, sse: ServerSentEvent) -> list[StreamEvent]:
        """The normalized events of one SSE event: ``response.completed`` and
        ``response.incomplete`` carry the termination proof, an unknown type is
        :class:`Unknown`. Data that is not a JSON object, or a ``sequence_number`` out of
        step, raises :class:`~railings.errors.MalformedStream`."""
        if sse.data == _DONE:
            return []  # OpenRouter's trailer after response.completed (module docstring)
        return self.feed_sse_object(
            sse.event, load_object(sse.data, where="openai-responses event")
        )

    def feed_sse_object(self, event: str, obj: dict[str, Any]) -> list[StreamEvent]:
        """What :meth:`feed` returns for an event named ``event`` whose data parsed as the
        JSON object ``obj`` (so not ``[DONE]``): the reader's fast path parses the data
        itself (``turn/fastpath.py``)."""
        sequence = obj.get("sequence_number")
        if isinstance(sequence, int):
            # The API numbers its events 0, 1, 2 ...: a gap, a repeat or a step back means
            # events were lost, duplicated or reordered on the way, and the text is not
            # what the model wrote.
            if self.sequence is not None and sequence != self.sequence + 1:
                raise MalformedStream(
                    f"openai-responses event out of sequence: {sequence} after {self.sequence}"
                )
            self.sequence = sequence
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = event
        handler = _HANDLERS.get(kind)
        if handler is None:
            return [Unknown(name=f"openai-responses:{kind}")]
        return handler(self, obj)

    def feed_common(self, event: str, obj: dict[str, Any]) -> StreamEvent | None:
        """The one event of the commonest event, or None for any other (then
        :meth:`feed_sse_object` decodes it): the reader's fast path (``turn/fastpath.py``).

        The commonest event is a ``response.output_text.delta`` (its ``type`` field says
        so) with a non-empty ``delta`` whose integer ``sequence_number``, if any, follows
        the last one: the table then returns exactly this one text event and keeps the
        number; this skips only its lookups, lists and calls. Anything else (a number out
        of step included: the table raises for it) returns None, having changed nothing."""
        try:  # KeyError: a field missing (None for .get, so the table's answer is not this)
            if obj["type"] != "response.output_text.delta":
                return None
            delta = obj["delta"]
        except KeyError:
            return None
        if type(delta) is not str or not delta:
            return None
        sequence = obj.get("sequence_number")
        if sequence is not None:
            last = self.sequence
            if type(sequence) is not int or (last is not None and sequence != last + 1):
                return None
            self.sequence = sequence
        made = NEW(TextDelta)  # text_delta(delta), inline
        SET_TEXT(made, delta)
        return made

    def close(self) -> list[StreamEvent]:
        """No events: each SSE event was decoded whole as it came. Whether the end was
        proven is the assembler's to judge."""
        return []

    # -- items -----------------------------------------------------------------------------

    def _item_added(self, obj: dict[str, Any]) -> list[StreamEvent]:
        item = obj.get("item")
        if not isinstance(item, dict):
            return [Unknown(name="openai-responses:response.output_item.added")]
        kind = item.get("type")
        if not isinstance(kind, str) or not (kind in LOCAL_ITEMS or kind in SERVER_ITEMS):
            if kind in _PLAIN_ITEMS:  # empty when it opens, but reasoning may come encrypted
                billed: list[StreamEvent] = [BilledOutput(name=f"openai-responses:item:{kind}")]
                return billed if any(item.get(k) for k in _ITEM_CONTENT) else []
            return [Unknown(name=f"openai-responses:item:{kind}")]
        return [self._start(item, as_int(obj.get("output_index")))[1]]

    def _start(self, item: dict[str, Any], output_index: int | None) -> tuple[_Call, ToolCallStart]:
        kind = str(item["type"])
        item_id = _str(item.get("id"))
        local = LOCAL_ITEMS.get(kind)
        call_type: CallType = "function"
        if local is not None:
            ident = _str(item.get("call_id")) or item_id
            tool_kind: ToolKind = "function"
            call_type = local.call_type
            name = _str(item.get("name")) or local.name
            # An added item's objects are placeholders (an empty command): only the
            # finished item's count. Text fields start as "" and grow by deltas.
            initial = _str(item.get(local.fields[0])) if local.text else ""
        else:
            ident = item_id
            tool_kind, name = SERVER_ITEMS[kind]
            name = name or _str(item.get("name"))
            initial = ""
        call = _Call(self._next, kind, ident)
        self._next += 1
        if item_id:
            self._by_item[item_id] = call
        if output_index is not None:
            self._by_output[output_index] = call
        start = ToolCallStart(
            index=call.position,
            id=ident,
            name=name,
            kind=tool_kind,
            initial_arguments=initial,
            call_type=call_type,
        )
        return call, start

    def _item_done(self, obj: dict[str, Any]) -> list[StreamEvent]:
        item = obj.get("item")
        if not isinstance(item, dict):
            return [Unknown(name="openai-responses:response.output_item.done")]
        kind = item.get("type")
        output_index = as_int(obj.get("output_index"))
        out: list[StreamEvent] = []
        call = self._find(item.get("id"), output_index)
        if call is not None and isinstance(kind, str) and kind != call.item_type:
            call = None  # another item at a reused index: never close a call with it
        if call is None:
            if kind in _PLAIN_ITEMS:  # billed, even hidden reasoning (railings.turn.billable)
                return [BilledOutput(name=f"openai-responses:item:{kind}")]
            if not (kind in LOCAL_ITEMS or kind in SERVER_ITEMS):
                return []  # an item already counted as Unknown when it was added
            call, start = self._start(item, output_index)  # done without added: start it now
            out.append(start)
        if not call.fed:
            raw, parsed = final_input(call.item_type, item)
            if raw:
                call.fed = True
                out.append(ToolArgumentsDelta(index=call.position, fragment=raw, parsed=parsed))
        out.append(ToolCallEnd(index=call.position))
        if call.item_type in SERVER_ITEMS:
            status = _str(item.get("status")) or "done"
            out.append(ServerToolResult(tool_use_id=call.id, type=f"{call.item_type}.{status}"))
        return out

    def _find(self, item_id: object, output_index: int | None) -> _Call | None:
        if isinstance(item_id, str) and item_id in self._by_item:
            return self._by_item[item_id]
        if output_index is not None:
            return self._by_output.get(output_index)
        return None

    # -- arguments -------------------------------------------------------------------------

    def _arguments_delta(self, obj: dict[str, Any]) -> list[StreamEvent]:
        call = self._find(obj.get("item_id"), as_int(obj.get("output_index")))
        fragment = obj.get("delta")
        if call is None or not isinstance(fragment, str):
            return [Unknown(name=f"openai-responses:{obj.get('type')}:unmatched")]
        if not fragment:
            return []  # an empty fragment is not content
        call.fed = True
        return [arguments_delta(call.position, fragment)]

    def _arguments_done(self, obj: dict[str, Any], field: str) -> list[StreamEvent]:
        call = self._find(obj.get("item_id"), as_int(obj.get("output_index")))
        if call is None:
            return [Unknown(name=f"openai-responses:{obj.get('type')}:unmatched")]
        whole = obj.get(field)
        if call.fed or not isinstance(whole, str) or not whole:
            return []  # the deltas already are the arguments
        call.fed = True
        return [ToolArgumentsDelta(index=call.position, fragment=whole)]


# -- one handler per event type that carries something for the turn --------------------------


def _text(_: OpenAIResponsesDecoder, obj: dict[str, Any]) -> list[StreamEvent]:
    delta = obj.get("delta")
    return [text_delta(delta)] if isinstance(delta, str) and delta else []


def _refusal(_: OpenAIResponsesDecoder, obj: dict[str, Any]) -> list[StreamEvent]:
    delta = obj.get("delta")
    return [RefusalDelta(text=delta)] if isinstance(delta, str) and delta else []


def _thinking(_: OpenAIResponsesDecoder, obj: dict[str, Any]) -> list[StreamEvent]:
    delta = obj.get("delta")
    return [ThinkingDelta(text=delta)] if isinstance(delta, str) and delta else []


def _read_past(_: OpenAIResponsesDecoder, __: dict[str, Any]) -> list[StreamEvent]:
    return []


_Handler = Callable[[OpenAIResponsesDecoder, dict[str, Any]], list[StreamEvent]]


def _whole(handle: Callable[[dict[str, Any]], list[StreamEvent]]) -> _Handler:
    """A lifecycle handler, which needs no decoder state, as an entry of the table."""

    def run(_: OpenAIResponsesDecoder, obj: dict[str, Any]) -> list[StreamEvent]:
        return handle(obj)

    return run


_HANDLERS: dict[str, _Handler] = {
    "response.output_item.added": OpenAIResponsesDecoder._item_added,
    "response.output_item.done": OpenAIResponsesDecoder._item_done,
    "response.output_text.delta": _text,
    "response.refusal.delta": _refusal,
    "response.reasoning_summary_text.delta": _thinking,
    "response.reasoning_text.delta": _thinking,
    "response.function_call_arguments.delta": OpenAIResponsesDecoder._arguments_delta,
    "response.custom_tool_call_input.delta": OpenAIResponsesDecoder._arguments_delta,
    "response.mcp_call_arguments.delta": OpenAIResponsesDecoder._arguments_delta,
    "response.function_call_arguments.done": lambda d, o: d._arguments_done(o, "arguments"),
    "response.custom_tool_call_input.done": lambda d, o: d._arguments_done(o, "input"),
    "response.mcp_call_arguments.done": lambda d, o: d._arguments_done(o, "arguments"),
    **{kind: _whole(handle) for kind, handle in LIFECYCLE.items()},
    **dict.fromkeys(READ_PAST, _read_past),
}
