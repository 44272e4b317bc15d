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
* ``ping`` is a keep-alive; ``citations_delta`` is metadata on a text block.
  Both carry no content and are read past on purpose.
"""

from __future__ import annotations

import json
from typing import Any

from railings.events import (
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
    UsageUpdate,
)
from railings.wire._json import as_int, load_object
from railings.wire.sse import ServerSentEvent

__all__ = ["MESSAGE_STOP", "AnthropicDecoder"]

MESSAGE_STOP = "message_stop"

_TOOL_KINDS: dict[str, ToolKind] = {
    "tool_use": "function",
    "server_tool_use": "server_tool_use",
    "mcp_tool_use": "mcp_tool_use",
}
_SILENT_DELTAS = frozenset({"citations_delta"})


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
        obj = load_object(sse.data, where="anthropic event")
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = sse.event
        if kind == "content_block_delta":
            return self._delta(obj)
        if kind == "ping":
            return []
        if kind == "content_block_start":
            return self._block_start(obj)
        if kind == "content_block_stop":
            position = self._blocks.get(as_int(obj.get("index")) or 0)
            return [] if position is None else [ToolCallEnd(position)]
        if kind == "message_delta":
            return _message_delta(obj)
        if kind == MESSAGE_STOP:
            return [TerminationProof(MESSAGE_STOP)]
        if kind == "message_start":
            return _message_start(obj)
        if kind == "error":
            error = obj.get("error")
            if not isinstance(error, dict):
                error = {}
            return [
                ProviderErrorEvent(
                    str(error.get("message") or "provider error"),
                    error.get("type") if isinstance(error.get("type"), str) else None,
                )
            ]
        return [Unknown(f"anthropic:{kind}")]

    def close(self) -> list[StreamEvent]:
        """No events: each SSE event was decoded whole as it came. Whether the end was
        proven is the assembler's to judge."""
        return []

    def _block_start(self, obj: dict[str, Any]) -> list[StreamEvent]:
        block = obj.get("content_block")
        if not isinstance(block, dict):
            return [Unknown("anthropic:content_block_start")]
        kind = block.get("type")
        index = as_int(obj.get("index")) or 0
        if kind == "text":
            text = block.get("text")
            return [TextDelta(text)] if isinstance(text, str) and text else []
        if kind == "thinking":
            text = block.get("thinking")
            return [ThinkingDelta(text)] if isinstance(text, str) and text else []
        if kind == "redacted_thinking":
            return [ThinkingDelta("", redacted=str(block.get("data") or ""))]
        if isinstance(kind, str) and kind in _TOOL_KINDS:
            position = self._next
            self._next += 1
            self._blocks[index] = position
            start_input = block.get("input")
            initial = json.dumps(start_input) if start_input is not None else ""
            return [
                ToolCallStart(
                    position,
                    str(block.get("id") or ""),
                    str(block.get("name") or ""),
                    _TOOL_KINDS[kind],
                    initial,
                    # An object on the wire, not text the model wrote: used only when no
                    # partial_json carried anything, and then it proves nothing (events.py).
                    initial_parsed=True,
                )
            ]
        if isinstance(kind, str) and kind.endswith("_tool_result"):
            raw = json.dumps(block, ensure_ascii=False, separators=(",", ":"))
            return [ServerToolResult(str(block.get("tool_use_id") or ""), kind, raw)]
        return [Unknown(f"anthropic:block:{kind}")]

    def _delta(self, obj: dict[str, Any]) -> list[StreamEvent]:
        delta = obj.get("delta")
        if not isinstance(delta, dict):
            return [Unknown("anthropic:content_block_delta")]
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            return [TextDelta(text)] if isinstance(text, str) and text else []
        if kind == "input_json_delta":
            position = self._blocks.get(as_int(obj.get("index")) or 0)
            fragment = delta.get("partial_json")
            if position is None or not isinstance(fragment, str):
                return [Unknown("anthropic:input_json_delta")]
            return [ToolArgumentsDelta(position, fragment)] if fragment else []
        if kind == "thinking_delta":
            text = delta.get("thinking")
            return [ThinkingDelta(text)] if isinstance(text, str) and text else []
        if kind == "signature_delta":
            return [ThinkingDelta("", signature=str(delta.get("signature") or ""))]
        if kind in _SILENT_DELTAS:
            return []
        return [Unknown(f"anthropic:delta:{kind}")]


def _message_start(obj: dict[str, Any]) -> list[StreamEvent]:
    message = obj.get("message")
    if not isinstance(message, dict):
        return [Unknown("anthropic:message_start")]
    out: list[StreamEvent] = [
        MessageStart(str(message.get("id") or ""), str(message.get("model") or ""))
    ]
    usage = message.get("usage")
    if isinstance(usage, dict):
        out.append(
            UsageUpdate(as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens")))
        )
    reason = message.get("stop_reason")
    if isinstance(reason, str) and reason:
        out.append(StopReason(reason))
    return out


def _message_delta(obj: dict[str, Any]) -> list[StreamEvent]:
    out: list[StreamEvent] = []
    delta = obj.get("delta")
    if isinstance(delta, dict):
        reason = delta.get("stop_reason")
        if isinstance(reason, str) and reason:
            out.append(StopReason(reason))
    usage = obj.get("usage")
    if isinstance(usage, dict):
        # output_tokens is cumulative in message_delta; input_tokens appears in newer versions.
        out.append(
            UsageUpdate(as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens")))
        )
    return out
