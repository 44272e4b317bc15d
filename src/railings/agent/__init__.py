"""The agent: a tool-using loop whose every turn goes through the railings."""

from __future__ import annotations

from railings.agent.journal import Entry, Journal, SessionInfo, default_path

__all__ = ["Entry", "Journal", "SessionInfo", "default_path"]
