"""The parts of a turn: what the model produced, one typed value per piece, in order.

A :class:`~railings.turn.model.Turn` holds its content as one ordered tuple of parts
(``turn.parts``), each a frozen value holding parsed data, never a JSON string:

==========================  =================================================================
part                        what it is
==========================  =================================================================
:class:`TextPart`           visible answer text
:class:`RefusalPart`        OpenAI refusal text: the model declined, in words
:class:`ThinkingPart`       one reasoning block, with the signature that closed it (Anthropic)
:class:`RedactedThinkingPart`  Anthropic ``redacted_thinking``: opaque data, sent back verbatim
:class:`ToolCall`           a call the client must act on (its arguments strictly parsed)
:class:`ServerToolCall`     a call the provider runs itself (web search, MCP ...)
:class:`ServerToolResultPart`  the result block of a provider-run call, as the provider sent it
:class:`ProviderItem`       one of the Responses API's own output items (reasoning with its
                            encrypted content, messages, calls), to send back as it came
==========================  =================================================================

Order is where each part *began*. A text part continues while text keeps arriving and
ends at any other part; a thinking block stays open until its signature closes it
(Anthropic signs every block on its own; a wire without signatures -- Chat
``reasoning_content``, Responses summaries -- has one reasoning block per turn, whatever
text arrives between its deltas); a call's part sits where the call started. The
Responses API's output items arrive whole with ``response.completed`` and come last.

Mappings inside parts (a result block, an output item, parsed arguments) are the
provider's JSON as parsed; they are typed ``Mapping`` because they are not to be
mutated: the conversation sends them back as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from railings.events import CallType, ToolKind

__all__ = [
    "JSON_TEXT_TYPES",
    "ArgumentOrigin",
    "Part",
    "ProviderItem",
    "RedactedThinkingPart",
    "RefusalPart",
    "ServerToolCall",
    "ServerToolResultPart",
    "TextPart",
    "ThinkingPart",
    "ToolCall",
]

ArgumentOrigin = Literal["raw", "parsed"]

# Call types whose arguments are JSON text the model wrote: a strict parse of that text
# is the proof the call is whole. A freeform input (``custom``) has no closing brace to
# prove it, and the structured items carry objects the provider already parsed.
JSON_TEXT_TYPES: frozenset[str] = frozenset({"function", "mcp_approval"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TextPart:
    """Visible answer text, as one piece between other parts."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusalPart:
    """OpenAI refusal text (``delta.refusal``, a Responses ``refusal`` part)."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingPart:
    """One reasoning block. ``signature`` is Anthropic's proof the block is unmodified
    (empty where the wire has none); it must go back verbatim with the block."""

    text: str
    signature: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RedactedThinkingPart:
    """An Anthropic ``redacted_thinking`` block: opaque ``data``, sent back verbatim."""

    data: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A local tool call as the stream delivered it.

    ``arguments`` is the strict parse of ``raw_arguments`` (a JSON object) or
    ``None``: the truncation sentinel. A ``custom`` call's freeform input is not
    JSON: its arguments are ``{"input": raw_arguments}`` once its item closed.
    ``closed`` is True when the provider closed the call's argument block.
    ``index`` is the call's position among the turn's local calls.

    ``type`` is what the call asks the client to do (:data:`~railings.events.CallType`).
    ``origin`` is ``raw`` when ``raw_arguments`` is the text the model wrote, and
    ``parsed`` when it is railings' serialization of an object someone parsed before
    railings saw it (an object in Chat ``function.arguments``, an Anthropic
    ``Message``'s ``tool_use.input``, a LangChain call, a Responses item's ``action``).
    """

    index: int
    id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None
    closed: bool
    type: CallType = "function"
    origin: ArgumentOrigin = "raw"

    @property
    def provable(self) -> bool:
        """True when the call's completeness can be proven from its raw text: the
        model's own JSON, which parses strictly only if it was written to the end."""
        return self.origin == "raw" and self.type in JSON_TEXT_TYPES


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolCall:
    """A tool the provider runs itself (Anthropic ``server_tool_use`` / ``mcp_tool_use``,
    the Responses API's ``web_search_call``, ``mcp_call`` ...).

    Kept for display and history; never dispatched locally. ``index`` is the call's
    position among all the turn's calls, local and provider-run."""

    index: int
    id: str
    name: str
    kind: ToolKind
    raw_input: str
    input: dict[str, Any] | None
    result_arrived: bool
    result_types: tuple[str, ...] = ()

    def block(self) -> dict[str, Any]:
        """The call as the Anthropic content block it came as (``input`` is ``{}`` when
        it did not parse), to send back with the turn."""
        return {
            "type": self.kind,
            "id": self.id,
            "name": self.name,
            "input": {} if self.input is None else self.input,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolResultPart:
    """The result block of a provider-run tool (``web_search_tool_result`` ...), as the
    provider sent it: Anthropic asks for it back verbatim to continue the turn."""

    tool_use_id: str
    type: str
    block: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderItem:
    """One of the Responses API's own output items (the ``output`` of
    ``response.completed``): reasoning with its encrypted content, a message, a call,
    with its item id. Sent back as it came, to that API only."""

    item: Mapping[str, Any]

    @property
    def type(self) -> str:
        """The item's ``type`` (``reasoning``, ``message``, ``function_call`` ...)."""
        kind = self.item.get("type")
        return kind if isinstance(kind, str) else ""


Part = (
    TextPart
    | RefusalPart
    | ThinkingPart
    | RedactedThinkingPart
    | ToolCall
    | ServerToolCall
    | ServerToolResultPart
    | ProviderItem
)
"""One piece of a turn (see the module table)."""
