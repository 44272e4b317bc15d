"""What an agent run publishes and returns: its events (``on_event``) and its result.

The loop that makes them is :mod:`railings.agent.loop`, which re-exports every name here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from railings.continuation import Continued
from railings.dispatch import BatchResult
from railings.errors import RailingsError
from railings.events import StreamEvent
from railings.turn.model import Turn

__all__ = [
    "AgentEvent",
    "RunEnded",
    "RunResult",
    "RunStatus",
    "StreamDelta",
    "ToolsDispatched",
    "TurnEnded",
    "TurnStarted",
]


class RunStatus(enum.Enum):
    """How a run ended (:mod:`railings.agent.loop` says when each one happens)."""

    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    TURN_LIMIT = "turn_limit"
    CIRCUIT_OPEN = "circuit_open"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """Turn ``number`` (1, 2, ...) is about to be streamed; ``continues``: it is the rest
    of the interrupted reply, asked for by ``Agent.continue_reply``."""

    number: int
    continues: bool = False


@dataclass(frozen=True, slots=True)
class StreamDelta:
    """One normalized stream event of the current turn, with registered secrets redacted:
    a text event may be held back a few characters and released with the next one
    (see :mod:`railings.agent.release`)."""

    number: int
    event: StreamEvent


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """Turn ``number`` ended: ``turn`` is what arrived, proven COMPLETE or interrupted."""

    number: int
    turn: Turn


@dataclass(frozen=True, slots=True)
class ToolsDispatched:
    """The calls of turn ``number`` went through the dispatcher: one outcome each."""

    number: int
    batch: BatchResult


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The run is over; ``result`` says how."""

    result: RunResult


AgentEvent = TurnStarted | StreamDelta | TurnEnded | ToolsDispatched | RunEnded


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a run ended. ``turns`` are all the turns streamed, the last one included;
    ``continued`` says how the first was made when the run continued an interrupted
    reply (its strategy, whether a prefill was refused, the attempts)."""

    status: RunStatus
    turns: tuple[Turn, ...]
    session_id: str | None = None
    error: RailingsError | None = None
    continued: Continued | None = None

    @property
    def last(self) -> Turn | None:
        """The last turn streamed, or None when none was."""
        return self.turns[-1] if self.turns else None

    @property
    def text(self) -> str:
        """The last turn's text (partial, when the run was interrupted)."""
        return self.last.text if self.last else ""
