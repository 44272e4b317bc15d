"""The normalized stream events every provider decoder emits.

One vocabulary for OpenAI Chat Completions, Anthropic Messages and the OpenAI
Responses API. Each event is a frozen, slotted dataclass; consumers ``match``
on them. A provider event railings does not know becomes :class:`Unknown`:
never a silent drop, never a crash.

Where a call's arguments came from matters to the truncation gate: text the
model wrote (a JSON string on the wire, joined from fragments) can be parsed
strictly and so proves itself complete; an object on the wire was parsed --
often repaired -- by someone else before railings saw it, and proves nothing.
``ToolArgumentsDelta.parsed`` and ``ToolCallStart.initial_parsed`` say which.

Tool calls are addressed by ``index``: their position among the turn's calls,
in the order they started (0, 1, 2 ...), whatever key the wire used (OpenAI's
``tool_calls[].index`` or ``id``, Anthropic's content block index, the
Responses API's output index).

Every event is keyword-only (``TextDelta(text="hi")``): a field added later cannot shift
the meaning of a positional argument. Mappings an event carries (a result block, output
items) hold the provider's JSON as parsed, typed ``Mapping`` because they are not to be
mutated: the turn keeps them and the conversation sends them back as they came.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "BilledOutput",
    "CallType",
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

# What a local call asks the client to do. ``function`` is a JSON-argument function call
# (every provider); the others are the Responses API's own item types: ``custom``
# (``custom_tool_call``, a freeform string input), ``local_shell`` / ``shell``
# (``local_shell_call`` / ``shell_call``), ``apply_patch`` (``apply_patch_call``),
# ``computer`` (``computer_call``) and ``mcp_approval`` (``mcp_approval_request``: a
# provider-run MCP call waiting for the client's approval).
CallType = Literal[
    "function", "custom", "local_shell", "shell", "apply_patch", "computer", "mcp_approval"
]


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageStart:
    """The response began: its id and model, as the provider named them."""

    id: str
    model: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """Visible answer text."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDelta:
    """Reasoning text (Anthropic ``thinking``, OpenAI-compatible ``reasoning_content``).

    ``signature`` carries Anthropic's ``signature_delta``; ``redacted`` carries the
    opaque data of a ``redacted_thinking`` block. Both must be sent back verbatim.
    """

    text: str
    signature: str = ""
    redacted: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusalDelta:
    """OpenAI ``delta.refusal`` text: the model declined, in words."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStart:
    """A tool call began. ``kind`` tells local calls from provider-run ones; ``call_type``
    what a local call asks the client to do (:data:`CallType`).

    ``initial_arguments`` is the argument JSON the start itself carried (an
    Anthropic ``content_block_start`` input, or a whole call sent in one delta);
    ``initial_parsed`` is True when that JSON is railings' serialization of an
    object on the wire rather than text the model wrote.
    """

    index: int
    id: str
    name: str
    kind: ToolKind = "function"
    initial_arguments: str = ""
    call_type: CallType = "function"
    initial_parsed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolArgumentsDelta:
    """One fragment of a call's argument JSON. Fragments are joined, never parsed alone.

    ``parsed`` is True when the fragment is railings' serialization of arguments the
    wire carried as an object (already parsed upstream), not the model's own text."""

    index: int
    fragment: str
    parsed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEnd:
    """The provider closed the call's argument block (Anthropic ``content_block_stop``,
    OpenAI when a later call starts or the finish reason arrives)."""

    index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolResult:
    """A result of a provider-run tool (``web_search_tool_result``, ...).

    ``block`` is the result block as the provider sent it, parsed (Anthropic), so the
    conversation can send it back verbatim; ``None`` where the wire has no such block
    (the Responses API reports a provider-run call's result as its item's status)."""

    tool_use_id: str
    type: str
    block: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputItems:
    """The Responses API's own list of a finished response's output items (the
    ``output`` of ``response.completed``): reasoning with its encrypted content,
    messages and calls, with their item ids, as parsed, so the conversation can send
    the items back as they are to that API."""

    items: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageUpdate:
    """Token usage as last reported; ``None`` where the provider said nothing.

    ``opening`` is True for the count the response's opening event reports before any
    output exists (Anthropic's ``message_start``, whose ``output_tokens`` is a small
    number already): the baseline a later report's output count is measured against
    (:mod:`railings.turn.billable`, the Empty table)."""

    input_tokens: int | None
    output_tokens: int | None
    opening: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReason:
    """The stop reason exactly as the wire spelled it (``length``, ``end_turn`` ...)."""

    wire: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TerminationProof:
    """The provider's own proof that the turn finished: ``[DONE]``, ``message_stop``,
    ``response.completed`` ..."""

    marker: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderErrorEvent:
    """An error the provider reported inside the stream."""

    message: str
    provider_type: str | None
    status: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BilledOutput:
    """Output the provider bills that the turn keeps nothing of: a finished Responses
    ``reasoning`` item (hidden reasoning, its summary streamed apart if at all),
    OpenRouter's structured ``reasoning_details`` (encrypted reasoning among them), a
    citation, text already in Anthropic's ``message_start``, a Chat choice other than the
    one read (``n`` > 1). ``name`` says which (``openai-responses:item:reasoning``). It carries no
    content; it is there so that a turn cut after it is Partial, never resent
    (:mod:`railings.turn.billable`, the Empty table)."""

    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
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
    | BilledOutput
    | Unknown
)
