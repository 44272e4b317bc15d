"""What a turn is once its stream has been read: frozen values, no behaviour.

A turn's content is its ordered tuple of typed parts (:mod:`railings.turn.parts`);
``text``, ``thinking``, ``refusal`` and the call lists are read from the parts, so
there is one record of what the model produced, not two.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from railings.errors import ConfigurationError
from railings.stops import Stop, StopSource
from railings.turn.parts import (
    JSON_TEXT_TYPES,
    ArgumentOrigin,
    Part,
    ProviderItem,
    RedactedThinkingPart,
    RefusalPart,
    ServerToolCall,
    TextPart,
    ThinkingPart,
    ToolCall,
)

__all__ = [
    "JSON_TEXT_TYPES",
    "ArgumentOrigin",
    "ErrorKind",
    "Outcome",
    "Part",
    "ServerToolCall",
    "Stop",
    "StopSource",
    "Termination",
    "ToolCall",
    "Turn",
    "TurnError",
    "Usage",
    "UsageSource",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnError:
    """Why a turn terminated abruptly."""

    kind: ErrorKind
    message: str
    provider_type: str | None = None
    retryable: bool = False


class UsageSource(enum.StrEnum):
    """Where one token count came from: the provider REPORTED it, railings ESTIMATED it
    (``Usage.method`` says how), or it is UNKNOWN (no count at all). A ``StrEnum``: each
    member is its string (``"estimated" == UsageSource.ESTIMATED``)."""

    REPORTED = "reported"
    ESTIMATED = "estimated"
    UNKNOWN = "unknown"


# The weakest source first: the order :attr:`Usage.source` reads.
_STRENGTH = (UsageSource.UNKNOWN, UsageSource.ESTIMATED, UsageSource.REPORTED)


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """A turn's token counts, each with where it came from (:class:`UsageSource`).

    A count the provider reported is kept as it came; one it did not send is railings'
    estimate (``method`` names how it was made: never mistake it for a count) or None,
    UNKNOWN. The sources default to REPORTED, so ``Usage(input_tokens=5,
    output_tokens=9)`` means what it always meant; a None count is UNKNOWN whatever its
    source says. The rule that settles a turn's usage is :mod:`railings.turn.usage`.
    """

    input_tokens: int | None
    output_tokens: int | None
    input_source: UsageSource = UsageSource.REPORTED
    output_source: UsageSource = UsageSource.REPORTED
    method: str | None = None  # how the ESTIMATED counts were made (``"chars/4"``)

    def __post_init__(self) -> None:
        for count, field in (("input_tokens", "input_source"), ("output_tokens", "output_source")):
            source = UsageSource(getattr(self, field))
            if getattr(self, count) is None:
                source = UsageSource.UNKNOWN  # no count: nobody reported or estimated one
            elif source is UsageSource.UNKNOWN:
                raise ConfigurationError(f"{count} is a count, so its source cannot be unknown")
            elif source is UsageSource.ESTIMATED and not self.method:
                raise ConfigurationError(f"an estimated {count} needs the method that made it")
            object.__setattr__(self, field, source)

    @property
    def source(self) -> UsageSource:
        """The weaker of the two counts' sources: REPORTED only when the provider reported
        both, UNKNOWN when either count is unknown, else ESTIMATED."""
        return min(self.input_source, self.output_source, key=_STRENGTH.index)


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One assistant turn, with the evidence of how it ended.

    ``parts`` is what the model produced, in the order each piece began
    (:mod:`railings.turn.parts`); the other content fields are read from it.
    ``stop_reason`` is a :class:`Stop` for every spelling the stop-reason table knows,
    and an unknown wire spelling lowercased as is; ``stop_reason_source`` says whether
    the wire said it or railings derived it (``None`` when the turn has no stop reason).
    ``truncated`` is True when the output limit cut the turn: an output-limit stop, or
    billed output that reached ``max_tokens`` (the request's limit) whatever the stop;
    the billed output read there is ``peak_output_tokens``, the largest count reported.
    """

    provider: str
    termination: Termination
    outcome: Outcome
    parts: tuple[Part, ...]
    usage: Usage  # every count with its source: reported, estimated or unknown
    stop_reason: str | None
    stop_reason_wire: str | None
    stop_reason_source: StopSource | None
    truncated: bool
    error: TurnError | None
    message_id: str = ""
    model: str = ""
    unknown_events: int = 0
    max_tokens: int | None = None  # the request's output limit, when the reader was told it
    # The largest output count any usage report gave: the evidence at the cap, which a
    # later smaller report never erases (``usage`` keeps the counts as last reported).
    peak_output_tokens: int | None = None
    # A kept response read again after its stream broke: the number of the last event
    # read before each break, oldest first (railings.turn.resume).
    resumed: tuple[int, ...] = ()

    @property
    def complete(self) -> bool:
        """True when the termination proof arrived (``outcome`` is COMPLETE)."""
        return self.outcome is Outcome.COMPLETE

    @property
    def text(self) -> str:
        """The visible answer text, every text part joined."""
        return "".join(p.text for p in self.parts if type(p) is TextPart)

    @property
    def thinking(self) -> str:
        """All the reasoning text in one string, every thinking block joined."""
        return "".join(p.text for p in self.parts if type(p) is ThinkingPart)

    @property
    def thinking_signature(self) -> str:
        """The thinking blocks' signatures joined (one block: its signature)."""
        return "".join(p.signature for p in self.parts if type(p) is ThinkingPart)

    @property
    def redacted_thinking(self) -> tuple[str, ...]:
        """The data of each ``redacted_thinking`` block, in order."""
        return tuple(p.data for p in self.parts if type(p) is RedactedThinkingPart)

    @property
    def refusal(self) -> str:
        """The refusal text, every refusal part joined."""
        return "".join(p.text for p in self.parts if type(p) is RefusalPart)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The local calls, in the order they started."""
        return tuple(p for p in self.parts if type(p) is ToolCall)

    @property
    def server_tool_calls(self) -> tuple[ServerToolCall, ...]:
        """The provider-run calls, in the order they started."""
        return tuple(p for p in self.parts if type(p) is ServerToolCall)

    @property
    def output_items(self) -> tuple[Mapping[str, Any], ...]:
        """The Responses API's own output items of a completed response (else empty)."""
        return tuple(p.item for p in self.parts if type(p) is ProviderItem)
