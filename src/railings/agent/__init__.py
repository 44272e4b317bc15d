"""The agent: a tool-using loop whose every turn goes through the railings."""

from __future__ import annotations

from railings.agent.loop import (
    Agent,
    AgentEvent,
    RunEnded,
    RunResult,
    RunStatus,
    StreamDelta,
    ToolsDispatched,
    TurnEnded,
    TurnStarted,
)
from railings.journal import Entry, Journal, SessionInfo, default_path

__all__ = [
    "Agent",
    "AgentEvent",
    "Entry",
    "Journal",
    "RunEnded",
    "RunResult",
    "RunStatus",
    "SessionInfo",
    "StreamDelta",
    "ToolsDispatched",
    "TurnEnded",
    "TurnStarted",
    "default_path",
]
