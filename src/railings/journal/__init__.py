"""The journal: railings' SQLite record of what happened, written as it happens.

One store (:mod:`railings.journal.store`: :class:`Journal`, WAL, every string
redacted, the file the user's alone by :mod:`railings.journal.private`) with two
writers that know nothing of each other: the agent (:mod:`railings.agent.loop`, its
sessions, deltas and verdicts) and the gateway (:mod:`railings.gateway.record`, one
``gateway_turn`` entry per proxied turn). Its reader is ``railings sessions`` /
``show`` / ``gateway-log`` (:mod:`railings.cli.journal`). Neither writer imports the
other: the store sits below both.
"""

from __future__ import annotations

from railings.journal.store import (
    DeltaKind,
    Entry,
    EntryKind,
    Journal,
    SessionInfo,
    default_path,
    turn_entry,
)

__all__ = [
    "DeltaKind",
    "Entry",
    "EntryKind",
    "Journal",
    "SessionInfo",
    "default_path",
    "turn_entry",
]
