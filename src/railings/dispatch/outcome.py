"""The values dispatch passes around: a call on its way through the gates, and what
became of it.

:class:`OutcomeStatus` separates the two things a circuit breaker must never
confuse. An *execution* ran the tool (``EXECUTED``) or tried to and failed
(``ERROR``). An *intervention* stopped the call before it ran: the truncation
gate (``REJECTED``), the loop guard (``INTERCEPTED``), the user (``DENIED``).
Interventions are not attempts of the model's and not failures of a tool.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from railings.dispatch.tools import Execution, Tool
from railings.turn.model import ToolCall, Turn
from railings.turn.verdict import CallVerdict

__all__ = ["BatchResult", "Invocation", "OutcomeStatus", "ToolOutcome"]


class OutcomeStatus(enum.Enum):
    """What became of a call: an execution (``EXECUTED``, ``ERROR``) or an intervention that
    stopped it before it ran (``REJECTED``, ``INTERCEPTED``, ``DENIED``)."""

    EXECUTED = "executed"  # the tool ran; ``content`` is its result
    ERROR = "error"  # a complete call failed: the tool raised, its schema, an unknown name
    REJECTED = "rejected"  # truncated, interrupted, malformed; or repaired for a strict tool
    INTERCEPTED = "intercepted"  # the loop guard stopped a repetition
    DENIED = "denied"  # the approval hook said no

    @property
    def intervention(self) -> bool:
        """True for a call stopped before it ran (never counted as an attempt or an error)."""
        return self in (OutcomeStatus.REJECTED, OutcomeStatus.INTERCEPTED, OutcomeStatus.DENIED)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What became of one tool call; ``content`` is the text the model gets back."""

    call_id: str
    name: str
    status: OutcomeStatus
    content: str
    verdict: CallVerdict
    speculative: bool = False  # the result came from a task started while streaming

    @property
    def is_error(self) -> bool:
        """Send the result to the model flagged as an error (``is_error`` / a failed call)."""
        return self.status is not OutcomeStatus.EXECUTED

    @property
    def index(self) -> int:
        """The call's index in its turn (calls are numbered in the order they started)."""
        return self.verdict.call.index


@dataclass(frozen=True, slots=True)
class Invocation:
    """A call that passed the truncation gate, on its way through the other gates.

    ``arguments`` are the verdict's (after repair, when the turn allowed it).
    ``prestarted`` is the task a :class:`~railings.dispatch.speculative.SpeculativeRunner`
    started for exactly these arguments, if any; the innermost dispatch awaits it
    instead of running the tool again.
    """

    verdict: CallVerdict
    tool: Tool
    prestarted: asyncio.Task[Execution] | None = None

    @property
    def call(self) -> ToolCall:
        """The tool call as the stream delivered it."""
        return self.verdict.call

    @property
    def id(self) -> str:
        """The provider's id for the call (its result goes back with it; may be empty)."""
        return self.verdict.call.id

    @property
    def name(self) -> str:
        """The name of the tool the model called."""
        return self.verdict.call.name

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments to run the tool with: the verdict's, after any repair; ``{}`` if none."""
        return self.verdict.arguments or {}

    @property
    def approval_reason(self) -> str | None:
        """Why this call needs the user's approval whatever the rule for its tool says (a
        write that configures later commands), or None: the tool's ``approval`` hook."""
        hook = self.tool.approval
        if hook is None:
            return None
        try:
            return hook(self.arguments)
        except Exception as exc:  # fail closed: a rule that cannot tell asks
            return f"its approval rule failed ({type(exc).__name__}: {exc})"

    def outcome(
        self, status: OutcomeStatus, content: str, *, speculative: bool = False
    ) -> ToolOutcome:
        """The outcome of this call with ``status``; ``content`` is what the model gets back."""
        return ToolOutcome(self.id, self.name, status, content, self.verdict, speculative)


@dataclass(frozen=True, slots=True)
class BatchResult:
    """The outcomes of one turn's calls, in the order the calls started."""

    turn: Turn
    outcomes: tuple[ToolOutcome, ...]

    def __iter__(self) -> Iterator[ToolOutcome]:
        return iter(self.outcomes)

    def __len__(self) -> int:
        return len(self.outcomes)

    def with_status(self, status: OutcomeStatus) -> tuple[ToolOutcome, ...]:
        """The outcomes with ``status``, in the order the calls started."""
        return tuple(o for o in self.outcomes if o.status is status)

    @property
    def executed(self) -> tuple[ToolOutcome, ...]:
        """The outcomes of the calls whose tool ran and returned a result."""
        return self.with_status(OutcomeStatus.EXECUTED)

    @property
    def rejected(self) -> tuple[ToolOutcome, ...]:
        """The outcomes of the calls the truncation gate stopped (truncated, interrupted,
        malformed, or repaired for a strict tool); none of them ran."""
        return self.with_status(OutcomeStatus.REJECTED)

    @property
    def resend_requested(self) -> bool:
        """True when some call was rejected and the model was asked to resend it."""
        return bool(self.rejected)
