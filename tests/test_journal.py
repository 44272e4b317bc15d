"""The journal: written as it happens, redacted, readable back, safe with two writers."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from railings import ConfigurationError
from railings.journal import Journal, default_path
from railings.redact import MARKER, register_secret


def test_entries_round_trip_in_order(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.sqlite3") as journal:
        sid = journal.start_session("list files", provider="openai", model="m")
        journal.write(sid, "delta", {"kind": "text", "text": "hel"}, turn=1)
        journal.write(sid, "delta", {"kind": "text", "text": "lo"}, turn=1)
        journal.end_session(sid, "completed")
        kinds = [e.kind for e in journal.entries(sid)]
        assert kinds == ["session", "delta", "delta", "end"]
        (info,) = journal.sessions()
        assert (info.id, info.status, info.entries) == (sid, "completed", 4)
        assert journal.session(sid[:6]) == info
        assert journal.integrity() == "ok"


def test_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    Journal(path).close()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_secrets_never_reach_the_journal(tmp_path: Path) -> None:
    key = "sk-test-0123456789abcdef"
    register_secret(key)
    path = tmp_path / "j.sqlite3"
    with Journal(path) as journal:
        sid = journal.start_session(f"task mentioning {key}")
        journal.write(
            sid,
            "error",
            {"message": f"401 for key {key}", "headers": {"Authorization": f"Bearer {key}"}},
        )
        journal.write(
            sid, "request", {"x-api-key": "anything-at-all", "note": "Bearer abcdefghijkl"}
        )
    raw = path.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("j.sqlite3-*"))
    assert key.encode() not in raw
    assert b"abcdefghijkl" not in raw
    with Journal(path) as journal:
        (info,) = journal.sessions()
        data = journal.entries(info.id)[1].data
        assert MARKER in data["message"] and data["headers"]["Authorization"] == MARKER


def test_not_a_journal_is_a_typed_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus"
    bogus.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigurationError):
        Journal(bogus)


def test_default_path_honours_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RAILINGS_JOURNAL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_path() == tmp_path / "railings" / "journal.sqlite3"
    monkeypatch.setenv("RAILINGS_JOURNAL", str(tmp_path / "x.db"))
    assert default_path() == tmp_path / "x.db"


def _writer(path: str, tag: str, count: int) -> None:
    with Journal(path) as journal:
        sid = journal.start_session(tag)
        for i in range(count):
            journal.write(sid, "delta", {"kind": "text", "text": f"{tag}{i}"})
        journal.end_session(sid, "completed")


def test_two_processes_write_without_corruption(tmp_path: Path) -> None:
    path = str(tmp_path / "j.sqlite3")
    Journal(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, tag, 300)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with Journal(path) as journal:
        assert journal.integrity() == "ok"
        sessions = journal.sessions()
        assert len(sessions) == 2
        for info in sessions:
            texts = [e.data["text"] for e in journal.entries(info.id) if e.kind == "delta"]
            assert texts == [f"{info.title}{i}" for i in range(300)]
