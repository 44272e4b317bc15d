"""The journal: every session, turn, streamed delta, tool call, verdict, result and error,
written to SQLite as it happens, so a crash or a kill mid-stream loses nothing received.

Theory of operation. One append-only table, ``entries``, holds what happened, in
order; ``sessions`` indexes them. Each write is its own transaction, committed
before the agent reads the next chunk from the network. SQLite runs in WAL mode
with ``synchronous=NORMAL``: a committed entry survives the death of the process
(SIGKILL included) because it is already in the WAL file; only a power loss
can take the last commits back (set ``durable=True`` for ``synchronous=FULL``).
Two processes may write the same journal: WAL allows it, and a busy timeout
makes a writer wait for the other instead of failing.

The agent and the gateway both write here (see :mod:`railings.journal`).

Every string is passed through :func:`railings.redact.redact_json` before it is
written: API keys and authorization headers never reach the journal, nor does
the password of a base URL. Streamed text arrives already held back and
redacted as joined text (:mod:`railings.agent.release`), so a key split across
deltas is not stored piece by piece either.

The journal is the user's alone: the directories made for it are 0700, the database
0600 (and so SQLite's ``-wal`` / ``-shm`` files); an existing one that other users can
read gets one warning line (:mod:`railings.journal.private`).

A damaged file is read, not fatal: a file that is not a usable database is a
:class:`~railings.errors.ConfigurationError` (one line, exit 2 in the CLI), and
a row whose data is not a JSON object comes back as an :class:`Entry` with
``damaged`` saying why, while the rest of the session reads as usual.

Entry kinds (:class:`EntryKind`): ``session`` (start, with provider/model/base URL),
``user`` (a task or chat line), ``turn_start``, ``delta`` (``{"kind": ...}``, one of
:class:`DeltaKind`: ``text``, ``thinking``, ``refusal``, ``tool_start``, ``tool_args``),
``turn_end`` (the verdict of the turn, with its calls), ``tool_result``, ``error``,
``run_end`` (how a run ended) and ``end`` (how the session ended). Both are ``StrEnum``:
each member is the very string stored, so the file format is the strings above.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from railings.errors import ConfigurationError
from railings.journal.private import create_private, warn_if_shared
from railings.redact import redact_json
from railings.turn.model import Turn
from railings.turn.usage import usage_fields
from railings.turn.verdict import judge

__all__ = [
    "DeltaKind",
    "Entry",
    "EntryKind",
    "Journal",
    "SessionInfo",
    "default_path",
    "turn_entry",
]


class EntryKind(StrEnum):
    """The kind of a journal entry, as stored (see the module docstring)."""

    SESSION = "session"
    USER = "user"
    TURN_START = "turn_start"
    DELTA = "delta"
    TURN_END = "turn_end"
    TOOL_RESULT = "tool_result"
    ERROR = "error"
    RUN_END = "run_end"
    END = "end"


class DeltaKind(StrEnum):
    """What a ``delta`` entry streamed, as stored in its ``kind`` field."""

    TEXT = "text"
    THINKING = "thinking"
    REFUSAL = "refusal"
    TOOL_START = "tool_start"
    TOOL_ARGS = "tool_args"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    started_at REAL NOT NULL,
    title TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    status TEXT NOT NULL DEFAULT 'running',
    ended_at REAL
);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn INTEGER,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_session ON entries(session_id, id);
"""


def default_path() -> Path:
    """``$RAILINGS_JOURNAL``, else ``$XDG_DATA_HOME/railings/journal.sqlite3``
    (``~/.local/share`` when XDG_DATA_HOME is unset)."""
    explicit = os.environ.get("RAILINGS_JOURNAL")
    if explicit:
        return Path(explicit).expanduser()
    return _own_directory() / "journal.sqlite3"


def _own_directory() -> Path:
    """The directory railings keeps its journal in by default, and makes itself."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "railings"


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session as listed: its ``status`` is ``running`` until :meth:`Journal.end_session`
    sets how it ended (``ended_at`` is None until then); ``entries`` counts its rows."""

    id: str
    started_at: float
    title: str
    provider: str | None
    model: str | None
    status: str
    ended_at: float | None
    entries: int


@dataclass(frozen=True, slots=True)
class Entry:
    """One row. ``damaged`` is None, or why the row could not be read (``data`` is then
    empty)."""

    id: int
    turn: int | None
    kind: str
    data: dict[str, Any]
    at: float
    damaged: str | None = None


def _entry(row: tuple[Any, ...]) -> Entry:
    ident, turn, kind, raw, at = row
    try:
        data = json.loads(raw)
    except (TypeError, ValueError) as exc:
        return Entry(ident, turn, str(kind), {}, at, f"its data is not valid JSON ({exc})")
    if not isinstance(data, dict):
        return Entry(ident, turn, str(kind), {}, at, "its data is not a JSON object")
    return Entry(ident, turn, str(kind), data, at)


class Journal:
    """An open journal file. Thread-safe; use as a context manager or call :meth:`close`."""

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, durable: bool = False
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        try:
            create_private(self.path)
            self._db = sqlite3.connect(
                self.path, timeout=30.0, check_same_thread=False, isolation_level=None
            )
        except (OSError, sqlite3.Error) as exc:
            raise ConfigurationError(f"cannot open the journal at {self.path}: {exc}") from None
        self._lock = threading.Lock()
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            self._db.execute("PRAGMA busy_timeout=30000")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise ConfigurationError(f"{self.path} is not a railings journal: {exc}") from None
        own = self.path.parent.absolute() == _own_directory().absolute()
        warn_if_shared(self.path, own_directory=own)

    # -- writing -------------------------------------------------------------------------

    def start_session(
        self,
        title: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> str:
        """Open a session and write its ``session`` entry; the new session's id (12 hex
        digits). ``details`` go into that entry beside the title, redacted."""
        session_id = uuid.uuid4().hex[:12]
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(
                "INSERT INTO sessions (id, started_at, title, provider, model)"
                " VALUES (?, ?, ?, ?, ?)",
                (session_id, now, redact_json(title), provider, model),
            )
            self._insert(
                session_id, None, EntryKind.SESSION, {"title": title, **(details or {})}, now
            )
            self._db.execute("COMMIT")
        return session_id

    def write(
        self, session_id: str, kind: str, data: dict[str, Any], *, turn: int | None = None
    ) -> None:
        """Append one entry and commit it before returning."""
        with self._lock:
            self._insert(session_id, turn, kind, data, time.time())

    def end_session(self, session_id: str, status: str, data: dict[str, Any] | None = None) -> None:
        """Write the ``end`` entry and set the session's ``status`` and ``ended_at``, in one
        transaction."""
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._insert(session_id, None, EntryKind.END, {"status": status, **(data or {})}, now)
            self._db.execute(
                "UPDATE sessions SET status = ?, ended_at = ? WHERE id = ?",
                (status, now, session_id),
            )
            self._db.execute("COMMIT")

    def reopen_session(self, session_id: str) -> None:
        """Set an ended session ``running`` again (a conversation that goes on after a stop);
        its ``end`` entry stays in the record."""
        with self._lock:
            self._db.execute(
                "UPDATE sessions SET status = 'running', ended_at = NULL WHERE id = ?",
                (session_id,),
            )

    def _insert(
        self, session_id: str, turn: int | None, kind: str, data: dict[str, Any], at: float
    ) -> None:
        payload = json.dumps(redact_json(data), ensure_ascii=False, separators=(",", ":"))
        self._db.execute(
            "INSERT INTO entries (session_id, turn, kind, data, at) VALUES (?, ?, ?, ?, ?)",
            (session_id, turn, kind, payload, at),
        )

    # -- reading -------------------------------------------------------------------------

    @contextmanager
    def _reading(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise ConfigurationError(f"the journal at {self.path} is damaged: {exc}") from None

    def sessions(self, limit: int = 50) -> list[SessionInfo]:
        """At most ``limit`` sessions, newest first."""
        with self._reading():
            rows = self._db.execute(
                "SELECT s.id, s.started_at, s.title, s.provider, s.model, s.status, s.ended_at,"
                " (SELECT COUNT(*) FROM entries e WHERE e.session_id = s.id)"
                " FROM sessions s ORDER BY s.started_at DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [SessionInfo(*row) for row in rows]

    def session(self, session_id: str) -> SessionInfo | None:
        """The one session whose id starts with ``session_id``; None when no session or
        more than one matches."""
        matches = [s for s in self.sessions(limit=1_000_000) if s.id.startswith(session_id)]
        return matches[0] if len(matches) == 1 else None

    def entries(self, session_id: str) -> list[Entry]:
        """The session's entries in the order they were written; a row that cannot be read
        comes back ``damaged``, not raised."""
        with self._reading():
            rows = self._db.execute(
                "SELECT id, turn, kind, data, at FROM entries WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
        return [_entry(row) for row in rows]

    def integrity(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` verdict: ``ok``, or the first problem found."""
        with self._reading():
            row = self._db.execute("PRAGMA integrity_check").fetchone()
        return str(row[0])

    def close(self) -> None:
        """Close the database; every entry written is already committed."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def turn_entry(turn: Turn, attempts: int) -> dict[str, Any]:
    """What the journal keeps of a finished turn: its verdict, not its text (the deltas hold it)."""
    return {
        "termination": turn.termination.value,
        "outcome": turn.outcome.value,
        "stop_reason": turn.stop_reason,
        "stop_reason_source": turn.stop_reason_source,
        "truncated": turn.truncated,
        "attempts": attempts,
        "resumed": list(turn.resumed),  # the events after which a kept response was read again
        "usage": usage_fields(turn.usage),
        "error": None
        if turn.error is None
        else {
            "kind": turn.error.kind.value,
            "message": turn.error.message,
            "provider_type": turn.error.provider_type,
        },
        "tool_calls": [
            {
                "id": v.call.id,
                "name": v.call.name,
                "raw_arguments": v.call.raw_arguments,
                "verdict": v.verdict.value,
                "reason": None if v.reason is None else v.reason.value,
                "repaired": v.repaired,
            }
            for v in judge(turn)
        ],
    }
