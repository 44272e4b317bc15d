"""What the gateway keeps of each proxied turn: the journal row, the span, the log line.

A :class:`TurnRecord` is filled while the answer passes and finished once. The
journal is the store the agent writes too (:class:`~railings.journal.Journal`, SQLite WAL,
every string redacted): one session per gateway process, titled
``gateway <upstream>``, and one ``gateway_turn`` entry per proxied turn, readable
with ``railings gateway-log`` (and ``railings sessions`` / ``show --json``).
Writes go through one writer thread, so a slow disk never stalls the event loop
that is forwarding other streams; :meth:`GatewayJournal.close` drains it.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from railings.gateway.upstream import scrub
from railings.journal import Journal
from railings.redact import redact
from railings.turn.model import Turn
from railings.turn.usage import usage_fields

__all__ = [
    "ENTRY_KIND",
    "INTERRUPTED",
    "MAX_FIELD",
    "GatewayJournal",
    "TurnRecord",
    "clip",
    "log_field",
]

ENTRY_KIND = "gateway_turn"
INTERRUPTED = "interrupted"  # the outcome of a turn the gateway's own stop cut
# The most characters kept of a string a client or the model chose (a model name, a path,
# a call's name) in the journal, the span and the log: a request of megabytes would
# otherwise write megabytes to each, for the price of a 400.
MAX_FIELD = 200
log = logging.getLogger("railings.gateway")


@dataclass(slots=True)
class TurnRecord:
    """One proxied turn on a model path."""

    provider: str
    method: str
    path: str
    model: str | None
    stream: bool
    started: float = field(default_factory=time.monotonic)
    started_at: float = field(default_factory=time.time)
    status: int | None = None
    outcome: str | None = None
    attempts: int = 0
    first_byte: float | None = None  # seconds after ``started``
    duration: float | None = None
    turn: Turn | None = None
    rejected: tuple[str, ...] = ()  # names of the calls refused as cut
    error: str | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)  # this request's keys
    max_tokens: int | None = None  # the output limit the request asked for
    request_chars: int | None = None  # the size of the request's text (railings.turn.usage)
    profile: str = "wire"  # the endpoint profile that judged it (railings.profiles.label)
    resumed: tuple[int, ...] = ()  # a kept response read again after each of these events

    def __post_init__(self) -> None:
        self.path = clip(self.path)
        self.model = clip(self.model) if self.model is not None else None

    def sent_first_byte(self) -> None:
        """Note the time to the first byte sent to the client (the first call counts)."""
        if self.first_byte is None:
            self.first_byte = time.monotonic() - self.started

    def finish(self, outcome: str, *, turn: Turn | None = None, error: str | None = None) -> None:
        """The call ended with ``outcome``; its duration is measured now."""
        self.outcome = outcome
        self.turn = turn if turn is not None else self.turn
        # An upstream may echo the request's key into its error: never kept as it came.
        self.error = scrub(error, self.secrets) if error is not None else self.error
        self.duration = time.monotonic() - self.started

    def as_entry(self) -> dict[str, Any]:
        """The journal entry of this call: verdict, provider, model, status, timings, usage."""
        turn = self.turn
        return {
            "provider": self.provider,
            "method": self.method,
            "path": self.path,
            "model": clip(turn.model) if turn is not None and turn.model else self.model,
            "stream": self.stream,
            "status": self.status,
            "outcome": self.outcome,
            "termination": turn.termination.value if turn is not None else None,
            "stop_reason": turn.stop_reason if turn is not None else None,
            "truncated": turn.truncated if turn is not None else None,
            "attempts": self.attempts,
            "profile": self.profile,
            "resumed": list(self.resumed),
            "started_at": self.started_at,
            "first_byte_s": self.first_byte,
            "duration_s": self.duration,
            "usage": usage_fields(turn.usage) if turn is not None else None,
            "tool_calls": [clip(c.name) for c in turn.tool_calls] if turn is not None else [],
            "rejected": [clip(name) for name in self.rejected],
            "error": self.error,
        }

    def log_line(self) -> str:
        """One redacted line for the gateway's log, one field per space-separated word.

        The method, path, model and refused call names come from the client or the
        model: each is escaped (:func:`log_field`, the path percent-encoded), so none
        can end the line, forge a field or reach a terminal as a control sequence.
        """
        e = self.as_entry()
        line = (
            f"{log_field(e['method'])} {quote(e['path'], safe=_PATH_SAFE)} {e['provider']} "
            f"{log_field(e['model'] or '-')} "
            f"status={e['status']} outcome={e['outcome']} attempts={e['attempts']}"
        )
        if e["rejected"]:
            line += " refused=" + ",".join(log_field(name) for name in e["rejected"])
        return redact(line)


# RFC 3986's pchar and "/", but "%" (a literal percent sign is encoded, so each escape is
# the gateway's own) and nothing that a log reader splits fields on.
_PATH_SAFE = "/!$&'()*+,;=:@-._~"
_BARE = re.compile(r"[A-Za-z0-9._:/@+\-]+")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def clip(value: str, limit: int = MAX_FIELD) -> str:
    """``value`` cut to its first ``limit`` characters, with a marker that says how many
    were cut (a value within ``limit`` is returned as it is)."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}...[{len(value) - limit} characters cut]"


def log_field(value: str) -> str:
    """``value`` as one field of a log line: as it is when it holds only plain characters
    (a model name, a method), else in double quotes (the logfmt convention) with the
    quote, the backslash and every character that is not printable escaped."""
    if _BARE.fullmatch(value):
        return value
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:  # C0/C1 controls, ESC, U+2028 and every other separator or format character
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}")
    return '"' + "".join(out) + '"'


class GatewayJournal:
    """The journal of one gateway process, written by a background thread."""

    def __init__(self, path: str | os.PathLike[str] | None, upstream: str) -> None:
        self.journal = Journal(path)
        self.session = self.journal.start_session(
            f"gateway {upstream}", details={"kind": "gateway", "upstream": upstream}
        )
        self._queue: queue.SimpleQueue[tuple[int, dict[str, Any]] | None] = queue.SimpleQueue()
        self._count = 0
        self._interrupted = 0  # turns the gateway's own stop cut
        self._thread = threading.Thread(target=self._run, name="railings-journal", daemon=True)
        self._thread.start()

    def write(self, record: TurnRecord) -> None:
        """Queue ``record`` for the journal thread (never blocks a stream)."""
        self._count += 1
        if record.outcome == INTERRUPTED:
            self._interrupted += 1
        self._queue.put((self._count, record.as_entry()))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            number, data = item
            try:
                self.journal.write(self.session, ENTRY_KIND, data, turn=number)
            except Exception as exc:  # a full disk must not take the gateway down
                log.warning("journal write failed: %s", exc)

    def close(self) -> None:
        """Write what is queued, end the session and close the journal.

        A gateway is a service: SIGINT and SIGTERM are how it is meant to stop (exit 0),
        and the server's shutdown closes the journal, so its session is never left
        ``running``. It ends ``interrupted`` when the stop cut turns that were in flight
        (each journaled with the outcome ``interrupted``), else ``stopped``."""
        self._queue.put(None)
        self._thread.join()
        status = "interrupted" if self._interrupted else "stopped"
        details = {"turns": self._count, "interrupted": self._interrupted}
        self.journal.end_session(self.session, status, details)
        self.journal.close()
