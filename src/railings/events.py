"""The normalized stream events every provider decoder emits.

One vocabulary for OpenAI Chat Completions, Anthropic Messages and the OpenAI
Responses API. Each event is a frozen, slotted dataclass; consumers ``match``
on them. A provider event railings does not know becomes :class:`Unknown`:
never a silent drop, never a crash.

Tool calls are addressed by ``index``: their position among the turn's calls,
in the order they started (0, 1, 2 ...), whatever key the wire used (OpenAI's
``tool_calls[].index`` or ``id``, Anthropic's content block index, the
Responses API's output index).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "MessageStart",
    "OutputItems",
    "ProviderErrorEvent",
    "RefusalDelta",
    "ServerToolResult",
    "StopReason",
    "StreamEvent",
    "TerminationProof",
    "TextDelta",
    "ThinkingDelta",
    "ToolArgumentsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolKind",
    "Unknown",
    "UsageUpdate",
]

ToolKind = Literal["function", "server_tool_use", "mcp_tool_use"]


@dataclass(frozen=True, slots=True)
class MessageStart:
    """The response began: its id and model, as the provider named them."""

    id: str
    model: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Visible answer text."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """Reasoning text (Anthropic ``thinking``, OpenAI-compatible ``reasoning_content``).

    ``signature`` carries Anthropic's ``signature_delta``; ``redacted`` carries the
    opaque data of a ``redacted_thinking`` block. Both must be sent back verbatim.
    """

    text: str
    signature: str = ""
    redacted: str = ""


@dataclass(frozen=True, slots=True)
class RefusalDelta:
    """OpenAI ``delta.refusal`` text: the model declined, in words."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """A tool call began. ``kind`` tells local calls from provider-run ones.

    ``initial_arguments`` is the argument JSON the start itself carried (an
    Anthropic ``content_block_start`` input, or a whole call sent in one delta).
    """

    index: int
    id: str
    name: str
    kind: ToolKind = "function"
    initial_arguments: str = ""


@dataclass(frozen=True, slots=True)
class ToolArgumentsDelta:
    """One fragment of a call's argument JSON. Fragments are joined, never parsed alone."""

    index: int
    fragment: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    """The provider closed the call's argument block (Anthropic ``content_block_stop``,
    OpenAI when a later call starts or the finish reason arrives)."""

    index: int


@dataclass(frozen=True, slots=True)
class ServerToolResult:
    """A result block of a provider-run tool (``web_search_tool_result``, ...).

    ``raw`` is the block's JSON exactly as the provider sent it (Anthropic), so the
    conversation can send it back verbatim; empty where the wire has no such block."""

    tool_use_id: str
    type: str
    raw: str = ""


@dataclass(frozen=True, slots=True)
class OutputItems:
    """The Responses API's own list of a finished response's output items (the
    ``output`` of ``response.completed``): reasoning with its encrypted content,
    messages and calls, with their item ids. ``raw`` is the list as JSON text, so
    the conversation can send the items back as they are to that API."""

    raw: str


@dataclass(frozen=True, slots=True)
class UsageUpdate:
    """Token usage as last reported; ``None`` where the provider said nothing."""

    input_tokens: int | None
    output_tokens: int | None


@dataclass(frozen=True, slots=True)
class StopReason:
    """The stop reason exactly as the wire spelled it (``length``, ``end_turn`` ...)."""

    wire: str


@dataclass(frozen=True, slots=True)
class TerminationProof:
    """The provider's own proof that the turn finished: ``[DONE]``, ``message_stop``,
    ``response.completed`` ..."""

    marker: str


@dataclass(frozen=True, slots=True)
class ProviderErrorEvent:
    """An error the provider reported inside the stream."""

    message: str
    provider_type: str | None
    status: int | None = None


@dataclass(frozen=True, slots=True)
class Unknown:
    """An event or delta type this version does not know; counted, never fatal."""

    name: str


StreamEvent = (
    MessageStart
    | TextDelta
    | ThinkingDelta
    | RefusalDelta
    | ToolCallStart
    | ToolArgumentsDelta
    | ToolCallEnd
    | ServerToolResult
    | OutputItems
    | UsageUpdate
    | StopReason
    | TerminationProof
    | ProviderErrorEvent
    | Unknown
)
