"""``railings sessions`` and ``railings show``: read the journal, damaged or not.

Everything printed is redacted as the text it joins into: consecutive deltas of
one stream are redacted together (:func:`~railings.redact.redact_pieces`), so a
key stored in pieces by an older railings is still shown as the marker. A
journal that is not a usable database is one line on stderr and exit 2; a row
that cannot be read is shown as damaged, and the rest of the session as usual.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.markup import escape

from railings.cli._common import InputError, console, positive
from railings.errors import ConfigurationError
from railings.journal import Entry, Journal, SessionInfo, default_path
from railings.redact import redact, redact_json, redact_pieces
from railings.turn.usage import describe

__all__ = ["journal_option", "open_journal", "register"]


def register(commands: Any) -> None:
    """Add ``railings sessions`` and ``railings show`` to the subcommands."""
    sessions = commands.add_parser(
        "sessions",
        help="list journaled sessions",
        description="List the sessions in the journal, newest first.\n\n"
        "exit codes: 0 listed; 2 usage error, or a journal that is not a usable\n"
        "database.",
    )
    journal_option(sessions)
    sessions.add_argument(
        "--limit", type=positive, default=50, metavar="N", help="at most N (default 50)"
    )
    sessions.add_argument("--json", action="store_true", help="print JSON")
    sessions.set_defaults(run=run_sessions)

    show = commands.add_parser(
        "show",
        help="print one journaled session",
        description="Print everything the journal holds for one session: the task, every\n"
        "streamed delta, tool call, verdict, result and error, with known secrets\n"
        "redacted in the joined text. A row that cannot be read is shown as damaged\n"
        "and the rest as usual.\n\n"
        "exit codes: 0 shown; 2 unknown session, usage error, or a journal that is\n"
        "not a usable database.",
    )
    show.add_argument("session", metavar="ID", help="session id (a unique prefix is enough)")
    journal_option(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(run=run_show)


def journal_option(parser: Any) -> None:
    """``--journal PATH``, the journal file a command writes or reads."""
    parser.add_argument(
        "--journal", metavar="PATH", help=f"journal file (default: {default_path()})"
    )


def open_journal(path: str | None, *, create: bool) -> Journal:
    """The journal at ``path`` (default: :func:`default_path`), or a one-line usage error.

    Only a run creates a journal (``create``), and only the default one gets its folder
    made: reading a mistyped path, or writing into a folder that does not exist, is an
    error, not a new empty file or a new tree of folders.
    """
    if path is not None:
        given = Path(path).expanduser()
        if not create and not given.exists():
            raise InputError(f"--journal {path}: no such file")
        if create and not given.parent.is_dir():
            raise InputError(f"--journal {path}: no such directory {given.parent}")
    elif not create and not default_path().exists():
        raise InputError(f"no journal yet at {default_path()}: railings run or chat makes one")
    try:
        journal = Journal(path)
    except ConfigurationError as exc:
        raise InputError(str(exc)) from None
    try:
        journal.sessions(limit=1)  # a damaged page shows here, not mid-way through a run
    except ConfigurationError as exc:
        journal.close()
        raise InputError(str(exc)) from None
    return journal


def _stream_key(entry: Entry) -> tuple[str, Any] | None:
    """Which stream a delta row belongs to: rows of one stream are redacted as one text."""
    if entry.kind != "delta" or entry.damaged or not isinstance(entry.data.get("text"), str):
        return None
    return (str(entry.data.get("kind")), entry.data.get("index"))


def redacted_entries(entries: list[Entry]) -> list[Entry]:
    """``entries`` with every string redacted, and each run of consecutive deltas of one
    stream redacted as the text it joins into."""
    out: list[Entry] = []
    run: list[Entry] = []

    def close_run() -> None:
        texts = redact_pieces([e.data["text"] for e in run])
        for e, text in zip(run, texts, strict=True):
            out.append(replace(e, data={**redact_json(e.data), "text": text}))
        run.clear()

    for entry in entries:
        key = _stream_key(entry)
        if run and key != _stream_key(run[-1]):
            close_run()
        if key is not None:
            run.append(entry)
        else:
            out.append(replace(entry, data=redact_json(entry.data)))
    if run:
        close_run()
    return out


def run_sessions(args: argparse.Namespace) -> int:
    if args.journal is None and not default_path().exists():
        if args.json:
            sys.stdout.write("[]\n")
        else:
            console().print(f"no sessions yet ({default_path()} is made by railings run or chat)")
        return 0
    with open_journal(args.journal, create=False) as journal:
        try:
            sessions = journal.sessions(limit=args.limit)
        except ConfigurationError as exc:
            raise InputError(str(exc)) from None
    if args.json:
        rows = [
            {
                "id": s.id,
                "started_at": s.started_at,
                "title": redact(s.title),
                "provider": s.provider,
                "model": s.model,
                "status": s.status,
                "ended_at": s.ended_at,
                "entries": s.entries,
            }
            for s in sessions
        ]
        sys.stdout.write(json.dumps(rows, ensure_ascii=False) + "\n")
        return 0
    out = console()
    if not sessions:
        out.print(f"no sessions in {args.journal or default_path()}")
    for s in sessions:
        when = datetime.datetime.fromtimestamp(s.started_at).strftime("%Y-%m-%d %H:%M")
        title = escape(redact(s.title)[:70])
        out.print(f"{s.id}  {when}  {s.status:<11} {title}  [dim]({s.entries} entries)[/]")
    return 0


def _find(journal: Journal, prefix: str) -> SessionInfo:
    """The one session whose id starts with ``prefix``; several or none is a usage error
    that lists what matched."""
    matches = [s for s in journal.sessions(limit=1_000_000) if s.id.startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise InputError(f"no session id starts with {prefix!r} (railings sessions lists them)")
    listed = ", ".join(s.id for s in matches[:10]) + (" ..." if len(matches) > 10 else "")
    raise InputError(f"{len(matches)} sessions start with {prefix!r}: {listed}")


def run_show(args: argparse.Namespace) -> int:
    """``railings show SESSION``: one journaled session, redacted, as text or ``--json``."""
    with open_journal(args.journal, create=False) as journal:
        try:
            info = _find(journal, args.session)
            entries = redacted_entries(journal.entries(info.id))
        except ConfigurationError as exc:
            raise InputError(str(exc)) from None
    if args.json:
        sys.stdout.write(json.dumps(_show_json(info, entries), ensure_ascii=False) + "\n")
        return 0
    out = console()
    who = escape(f"{info.provider or ''} {info.model or ''}")
    out.print(f"[bold]session {info.id}[/] ({info.status}) {who}")
    mode = ""  # the kind of streamed text being printed, so a run of deltas reads as one
    for e in entries:
        streamed = e.kind == "delta" and e.data.get("kind") in ("text", "thinking", "refusal")
        if mode and (e.damaged or not streamed or e.data["kind"] != mode):
            out.print()
            mode = ""
        if streamed and not e.damaged:
            if not mode:
                mode = e.data["kind"]
                if mode != "text":
                    out.print(f"[dim]{mode}:[/] ", end="")
            out.print(escape(e.data["text"]), end="")
            continue
        for line in _entry_lines(e):
            out.print(line)
    if mode:
        out.print()
    return 0


def _show_json(info: SessionInfo, entries: list[Entry]) -> dict[str, Any]:
    return {
        "id": info.id,
        "title": redact(info.title),
        "status": info.status,
        "provider": info.provider,
        "model": info.model,
        "entries": [
            {"turn": e.turn, "kind": e.kind, "data": e.data, "at": e.at}
            | ({"damaged": e.damaged, "id": e.id} if e.damaged else {})
            for e in entries
        ],
    }


def _entry_lines(e: Entry) -> list[str]:
    """What ``show`` prints for one entry that is not streamed text."""
    d = e.data
    if e.damaged:
        return [f"[bold red]damaged entry[/] {e.id} ({escape(e.kind)}): {escape(e.damaged)}"]
    if e.kind == "delta":
        return []  # tool-call fragments: shown whole with their verdict at turn_end
    if e.kind == "user":
        return [f"[bold]you:[/] {escape(d.get('text', ''))}"]
    if e.kind == "turn_start":
        continues = ": the rest of the interrupted reply" if d.get("continues") else ""
        return [f"[dim]── turn {e.turn}{continues} ──[/]"]
    if e.kind == "turn_end":
        lines = []
        if d.get("outcome") != "complete":
            why = str((d.get("error") or {}).get("message", ""))
            lines.append(f"[bold red]INCOMPLETE[/] ({escape(why)})")
        if isinstance(d.get("usage"), dict):
            lines.append(f"  [dim]usage:[/] {escape(describe(d['usage']))}")
        resumed = d.get("resumed")
        if isinstance(resumed, list) and resumed:
            after = ", ".join(escape(str(n)) for n in resumed)
            lines.append(f"  [dim]resumed after event {after}[/]")
        for call in d.get("tool_calls", []):
            verdict = "run" if call["verdict"] == "execute" else f"NOT executed: {call['reason']}"
            raw = escape(call["raw_arguments"][:120])
            lines.append(f"  tool [bold]{escape(call['name'])}[/] {raw} -> {verdict}")
        return lines
    if e.kind == "tool_result":
        return [f"  [dim]{d.get('status')}:[/] {escape(d.get('content', '')[:200])}"]
    if e.kind in ("error", "run_end", "end"):
        return [f"[dim]{e.kind}:[/] {escape(json.dumps(d, ensure_ascii=False))}"]
    return []
