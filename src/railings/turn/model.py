"""What a turn is once its stream has been read: frozen values, no behaviour."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal

from railings.events import CallType, ToolKind

__all__ = [
    "JSON_TEXT_TYPES",
    "ArgumentOrigin",
    "ErrorKind",
    "Outcome",
    "Segment",
    "ServerToolCall",
    "Termination",
    "ToolCall",
    "Turn",
    "TurnError",
    "Usage",
]


class Termination(enum.Enum):
    """How the stream ended: CLEAN with the provider's termination proof, ABRUPT
    without it (a cut, malformed data or a provider error event)."""

    CLEAN = "clean"
    ABRUPT = "abrupt"


class Outcome(enum.Enum):
    """COMPLETE: the proof arrived. EMPTY: abrupt, and no content at all arrived (safe to
    resend). PARTIAL: abrupt after some content (billed: presented as-is, never retried)."""

    COMPLETE = "complete"
    PARTIAL = "partial"
    EMPTY = "empty"


class ErrorKind(enum.Enum):
    """What ended a turn abruptly: the stream ended without its proof, the provider sent
    an error event, or the bytes stopped being the protocol."""

    INTERRUPTED = "interrupted"
    PROVIDER_ERROR = "provider_error"
    MALFORMED_STREAM = "malformed_stream"


@dataclass(frozen=True, slots=True)
class TurnError:
    """Why a turn terminated abruptly."""

    kind: ErrorKind
    message: str
    provider_type: str | None = None
    retryable: bool = False


@dataclass(frozen=True, slots=True)
class Usage:
    """The token counts the provider reported; None for a count it did not send."""

    input_tokens: int | None
    output_tokens: int | None


ArgumentOrigin = Literal["raw", "parsed"]

# Call types whose arguments are JSON text the model wrote: a strict parse of that text
# is the proof the call is whole. A freeform input (``custom``) has no closing brace to
# prove it, and the structured items carry objects the provider already parsed.
JSON_TEXT_TYPES: frozenset[str] = frozenset({"function", "mcp_approval"})


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A local tool call as the stream delivered it.

    ``arguments`` is the strict parse of ``raw_arguments`` (a JSON object) or
    ``None``: the truncation sentinel. A ``custom`` call's freeform input is not
    JSON: its arguments are ``{"input": raw_arguments}`` once its item closed.
    ``closed`` is True when the provider closed the call's argument block.

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


@dataclass(frozen=True, slots=True)
class ServerToolCall:
    """A tool the provider runs itself (Anthropic ``server_tool_use`` / ``mcp_tool_use``).

    Kept for display and history; never dispatched locally."""

    index: int
    id: str
    name: str
    kind: ToolKind
    raw_input: str
    input: dict[str, Any] | None
    result_arrived: bool
    result_types: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Segment:
    """One piece of a turn whose blocks must go back in the order they arrived.

    ``kind`` is ``text`` (``value`` is the text), ``thinking`` /
    ``redacted_thinking`` (``value`` is the block's JSON, with its own signature),
    ``server_tool_use`` / ``mcp_tool_use`` (``value`` is the block's JSON) or
    ``server_tool_result`` (``value`` is the result block's JSON exactly as
    received). Anthropic asks for these blocks back in this order to continue a
    paused turn, and checks each thinking block against its own signature.
    """

    kind: str
    value: str


@dataclass(frozen=True, slots=True)
class Turn:
    """One assistant turn, with the evidence of how it ended."""

    provider: str
    termination: Termination
    outcome: Outcome
    text: str
    thinking: str
    refusal: str
    tool_calls: tuple[ToolCall, ...]
    server_tool_calls: tuple[ServerToolCall, ...]
    usage: Usage | None
    stop_reason: str | None
    stop_reason_wire: str | None
    stop_reason_source: str | None  # "wire" | "derived" | None
    truncated: bool
    error: TurnError | None
    message_id: str = ""
    model: str = ""
    thinking_signature: str = ""
    redacted_thinking: tuple[str, ...] = ()
    unknown_events: int = 0
    # Only for turns with provider-run tools or several thinking blocks (see Segment).
    segments: tuple[Segment, ...] = ()
    # The Responses API's output items of a completed response, as a JSON list (OutputItems).
    output_items: str = ""

    @property
    def complete(self) -> bool:
        """True when the termination proof arrived (``outcome`` is COMPLETE)."""
        return self.outcome is Outcome.COMPLETE
