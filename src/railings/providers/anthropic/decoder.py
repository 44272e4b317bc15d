"""Anthropic Messages stream decoder: SSE events in, normalized events out.

Theory of operation. Every event's data is a JSON object whose ``type`` names
it (the SSE ``event:`` field repeats it). ``message_stop`` is the termination
proof. Content arrives in indexed blocks: ``content_block_start`` opens one,
``content_block_delta`` adds to it, ``content_block_stop`` closes it.

* ``tool_use`` blocks are local calls; ``server_tool_use`` and
  ``mcp_tool_use`` are run by the provider (``kind`` tells them apart) and
  their ``*_tool_result`` blocks become :class:`ServerToolResult`.
* A tool block's input is the joined ``input_json_delta.partial_json``; when
  every fragment is empty the input is the object ``content_block_start``
  carried (usually ``{}``).
* At ``max_tokens`` the provider stops inside the tool JSON: the block gets no
  ``content_block_stop``, yet ``message_stop`` still comes.
* ``ping`` is a keep-alive, read past on purpose. ``citations_delta`` is a
  citation on a text block: the turn does not keep it, but it is billed output
  (:class:`BilledOutput`), so a cut after it is Partial.
* ``message_start`` carries the message so far: its ``usage`` is the opening count
  (``output_tokens`` already a few before any output: ``UsageUpdate.opening``, the
  baseline later counts are measured against), and ``content`` is empty. Content there
  is not read as parts (no block index carries it) but it was billed: it is
  :class:`BilledOutput`, so a cut after it is Partial, never resent.

One handler table per level, as in the other two decoders: the event type
(:data:`_EVENTS`), the content block type (:data:`_BLOCKS`) and the delta type
(:data:`_DELTAS`). A type outside its table becomes :class:`Unknown` (counted in
the turn), never a silent drop.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from railings.events import (
    BilledOutput,
    MessageStart,
    ProviderErrorEvent,
    ServerToolResult,
    StopReason,
    StreamEvent,
    TerminationProof,
    TextDelta,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolKind,
    Unknown,
)
from railings.providers.base import usage_update
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
from railings.wire._json import as_int, load_object
from railings.wire.sse import ServerSentEvent

__all__ = ["MESSAGE_STOP", "TOOL_KINDS", "AnthropicDecoder"]

MESSAGE_STOP = "message_stop"

# The block types of calls, local and provider-run -> their kind.
TOOL_KINDS: dict[str, ToolKind] = {
    "tool_use": "function",
    "server_tool_use": "server_tool_use",
    "mcp_tool_use": "mcp_tool_use",
}


class AnthropicDecoder:
    """Turns the SSE events of one Messages stream into normalized events."""

    __slots__ = ("_blocks", "_next")

    def __init__(self) -> None:
        self._next = 0  # position of the next tool call
        self._blocks: dict[int, int] = {}  # content block index -> tool call position

    def feed(self, sse: ServerSentEvent) -> list[StreamEvent]:
        """The normalized events of one SSE event: ``message_stop`` is the termination
        proof, ``ping`` is none, an unknown type is :class:`Unknown`. Data that is not a
        JSON object raises :class:`~railings.errors.MalformedStream`."""
        return self.feed_sse_object(sse.event, load_object(sse.data, where="anthropic event"))

    def feed_sse_object(self, event: str, obj: dict[str, Any]) -> list[StreamEvent]:
        """What :meth:`feed` returns for an event named ``event`` whose data parsed as the
        JSON object ``obj``: the reader's fast path parses the data itself
        (``turn/fastpath.py``)."""
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = event
        handler = _EVENTS.get(kind)
        if handler is None:
            return [Unknown(name=f"anthropic:{kind}")]
        return handler(self, obj)

    def feed_common(self, event: str, obj: dict[str, Any]) -> StreamEvent | None:
        """The one event of the commonest event, or None for any other (then
        :meth:`feed_sse_object` decodes it): the reader's fast path (``turn/fastpath.py``).

        The commonest event is a ``content_block_delta`` whose ``type`` field says so, with
        a non-empty ``text_delta``, or a non-empty ``input_json_delta`` for a tool block
        already started at an integer ``index``: for those the table returns exactly this
        one event (``_delta`` and ``_arguments``), and this skips only its lookups, lists
        and calls (its subscripts stand for the table's ``get``: a missing field is None
        there, not this shape here). Anything else returns None, having changed nothing."""
        try:  # KeyError: a field missing (None for .get, so the table's answer is not this)
            if obj["type"] != "content_block_delta":
                return None
            delta = obj["delta"]
            if type(delta) is not dict:
                return None
            kind = delta["type"]
            if kind == "text_delta":
                text = delta["text"]
                if type(text) is not str or not text:
                    return None
                made = NEW(TextDelta)  # text_delta(text), inline
                SET_TEXT(made, text)
                return made
            if kind != "input_json_delta":
                return None
            index = obj["index"]
            fragment = delta["partial_json"]
            if type(index) is not int or type(fragment) is not str or not fragment:
                return None
            position = self._blocks[index]
        except KeyError:
            return None
        piece = NEW(ToolArgumentsDelta)  # arguments_delta(position, fragment), inline
        SET_INDEX(piece, position)
        SET_FRAGMENT(piece, fragment)
        SET_PARSED(piece, False)
        return piece

    def common_template(self, event: str, obj: dict[str, Any], item: StreamEvent) -> Holes:
        """The hole of an event :meth:`feed_common` took (it returned ``item``) for the
        reader's block template (``turn/template.py``): the text, or the input fragment.
        ``make`` is :meth:`feed_common` for the learned event with another string there:
        it checks the string is not empty and, for a fragment, that the block at the
        learned index is still a started tool block (the rest of the event passed)."""
        if type(item) is TextDelta:

            def text(values: list[Any]) -> StreamEvent | None:
                value = values[0]
                if not value:
                    return None
                made = NEW(TextDelta)  # text_delta(value), inline: one call less per event
                SET_TEXT(made, value)
                return made

            return [("delta", "text")], (), text
        index, blocks = obj["index"], self._blocks

        def fragment(values: list[Any]) -> StreamEvent | None:
            value = values[0]
            position = blocks.get(index)
            if not value or position is None:
                return None
            piece = NEW(ToolArgumentsDelta)  # arguments_delta(position, value), inline
            SET_INDEX(piece, position)
            SET_FRAGMENT(piece, value)
            SET_PARSED(piece, False)
            return piece

        return [("delta", "partial_json")], (), fragment

    def close(self) -> list[StreamEvent]:
        """No events: each SSE event was decoded whole as it came. Whether the end was
        proven is the assembler's to judge."""
        return []

    # -- events ------------------------------------------------------------------------------

    def _block_start(self, obj: dict[str, Any]) -> list[StreamEvent]:
        block = obj.get("content_block")
        if not isinstance(block, dict):
            return [Unknown(name="anthropic:content_block_start")]
        kind = block.get("type")
        handler = _BLOCKS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            return handler(self, block, as_int(obj.get("index")) or 0)
        if isinstance(kind, str) and kind.endswith("_tool_result"):
            return _tool_result(self, block, 0)
        return [Unknown(name=f"anthropic:block:{kind}")]

    def _block_stop(self, obj: dict[str, Any]) -> list[StreamEvent]:
        position = self._blocks.get(as_int(obj.get("index")) or 0)
        return [] if position is None else [ToolCallEnd(index=position)]

    def _delta(self, obj: dict[str, Any]) -> list[StreamEvent]:
        delta = obj.get("delta")
        if not isinstance(delta, dict):
            return [Unknown(name="anthropic:content_block_delta")]
        kind = delta.get("type")
        if kind == "text_delta":  # nearly every event of a text stream: no second call
            text = delta.get("text")
            return [text_delta(text)] if isinstance(text, str) and text else []
        handler = _DELTAS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            return [Unknown(name=f"anthropic:delta:{kind}")]
        return handler(self, delta, obj)

    # -- content blocks ----------------------------------------------------------------------

    def _tool_use(self, block: dict[str, Any], index: int) -> list[StreamEvent]:
        position = self._next
        self._next += 1
        self._blocks[index] = position
        start_input = block.get("input")
        return [
            ToolCallStart(
                index=position,
                id=str(block.get("id") or ""),
                name=str(block.get("name") or ""),
                kind=TOOL_KINDS[str(block["type"])],
                initial_arguments=json.dumps(start_input) if start_input is not None else "",
                # An object on the wire, not text the model wrote: used only when no
                # partial_json carried anything, and then it proves nothing (events.py).
                initial_parsed=True,
            )
        ]

    # -- deltas ------------------------------------------------------------------------------

    def _arguments(self, delta: dict[str, Any], obj: dict[str, Any]) -> list[StreamEvent]:
        position = self._blocks.get(as_int(obj.get("index")) or 0)
        fragment = delta.get("partial_json")
        if position is None or not isinstance(fragment, str):
            return [Unknown(name="anthropic:input_json_delta")]
        return [arguments_delta(position, fragment)] if fragment else []


def _message_start(_: AnthropicDecoder, obj: dict[str, Any]) -> list[StreamEvent]:
    message = obj.get("message")
    if not isinstance(message, dict):
        return [Unknown(name="anthropic:message_start")]
    out: list[StreamEvent] = [
        MessageStart(id=str(message.get("id") or ""), model=str(message.get("model") or ""))
    ]
    content = message.get("content")
    if content:  # not [] (nor null): output already written, and billed
        out.append(BilledOutput(name="anthropic:message_start:content"))
    out += usage_update(message.get("usage"), "input_tokens", "output_tokens", opening=True)
    reason = message.get("stop_reason")
    if isinstance(reason, str) and reason:
        out.append(StopReason(wire=reason))
    return out


def _message_delta(_: AnthropicDecoder, obj: dict[str, Any]) -> list[StreamEvent]:
    out: list[StreamEvent] = []
    delta = obj.get("delta")
    if isinstance(delta, dict):
        reason = delta.get("stop_reason")
        if isinstance(reason, str) and reason:
            out.append(StopReason(wire=reason))
    # output_tokens is cumulative in message_delta; input_tokens appears in newer versions.
    out += usage_update(obj.get("usage"), "input_tokens", "output_tokens")
    return out


def _error(_: AnthropicDecoder, obj: dict[str, Any]) -> list[StreamEvent]:
    error = obj.get("error")
    if not isinstance(error, dict):
        error = {}
    return [
        ProviderErrorEvent(
            message=str(error.get("message") or "provider error"),
            provider_type=error.get("type") if isinstance(error.get("type"), str) else None,
        )
    ]


def _nothing(*_: object) -> list[StreamEvent]:
    return []


def _text_block(_: AnthropicDecoder, block: dict[str, Any], __: int) -> list[StreamEvent]:
    text = block.get("text")
    return [TextDelta(text=text)] if isinstance(text, str) and text else []


def _thinking_block(_: AnthropicDecoder, block: dict[str, Any], __: int) -> list[StreamEvent]:
    text = block.get("thinking")
    return [ThinkingDelta(text=text)] if isinstance(text, str) and text else []


def _redacted_block(_: AnthropicDecoder, block: dict[str, Any], __: int) -> list[StreamEvent]:
    return [ThinkingDelta(text="", redacted=str(block.get("data") or ""))]


def _tool_result(_: AnthropicDecoder, block: dict[str, Any], __: int) -> list[StreamEvent]:
    # The block as parsed: the conversation sends it back as it came (events.py).
    return [
        ServerToolResult(
            tool_use_id=str(block.get("tool_use_id") or ""), type=str(block["type"]), block=block
        )
    ]


def _thinking_delta(_: AnthropicDecoder, delta: dict[str, Any], __: object) -> list[StreamEvent]:
    text = delta.get("thinking")
    return [ThinkingDelta(text=text)] if isinstance(text, str) and text else []


def _citation(_: AnthropicDecoder, __: dict[str, Any], ___: object) -> list[StreamEvent]:
    return [BilledOutput(name="anthropic:delta:citations_delta")]


def _signature_delta(_: AnthropicDecoder, delta: dict[str, Any], __: object) -> list[StreamEvent]:
    return [ThinkingDelta(text="", signature=str(delta.get("signature") or ""))]


_Handler = Callable[[AnthropicDecoder, dict[str, Any]], list[StreamEvent]]
_BlockHandler = Callable[[AnthropicDecoder, dict[str, Any], int], list[StreamEvent]]
_DeltaHandler = Callable[[AnthropicDecoder, dict[str, Any], dict[str, Any]], list[StreamEvent]]

# The event type -> its handler; ``ping`` is a keep-alive, read past.
_EVENTS: dict[str, _Handler] = {
    "content_block_delta": AnthropicDecoder._delta,
    "ping": _nothing,
    "content_block_start": AnthropicDecoder._block_start,
    "content_block_stop": AnthropicDecoder._block_stop,
    "message_delta": _message_delta,
    MESSAGE_STOP: lambda _, __: [TerminationProof(marker=MESSAGE_STOP)],
    "message_start": _message_start,
    "error": _error,
}

# The content block type -> its handler. Besides these, every ``*_tool_result`` block
# (web search, code execution, MCP ...) is a provider-run call's result.
_BLOCKS: dict[str, _BlockHandler] = {
    "text": _text_block,
    "thinking": _thinking_block,
    "redacted_thinking": _redacted_block,
    "tool_use": AnthropicDecoder._tool_use,
    "server_tool_use": AnthropicDecoder._tool_use,
    "mcp_tool_use": AnthropicDecoder._tool_use,
}

# The delta type -> its handler; ``citations_delta`` is a citation on a text block, which
# the turn does not keep but which was billed.
# ``text_delta``, nearly every delta of a text stream, is read first, in _delta itself.
_DELTAS: dict[str, _DeltaHandler] = {
    "input_json_delta": AnthropicDecoder._arguments,
    "thinking_delta": _thinking_delta,
    "signature_delta": _signature_delta,
    "citations_delta": _citation,
}
