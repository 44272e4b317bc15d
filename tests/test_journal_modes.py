"""The journal is private: its directory and files are the user's alone, and an existing
one that others can read gets one warning line.

The journal holds tasks, files read and command output. Made under the common umask 022,
it used to be readable by every local user (directory 0755, database 0644, and the
SQLite ``-wal`` / ``-shm`` files beside it)."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import railings
from railings.journal import Journal

UMASK = 0o022  # the common default, under which files are made world-readable


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _modes(directory: Path) -> dict[str, int]:
    return {p.name: _mode(p) for p in sorted(directory.iterdir())}


@pytest.fixture
def common_umask() -> Iterator[None]:
    old = os.umask(UMASK)
    try:
        yield
    finally:
        os.umask(old)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NO_COLOR": "1",
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PYTHONPATH": str(Path(railings.__file__).parents[1]),  # the code under test
    }
    env.update(extra)
    return env


def railings_cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path, **env),
        cwd=tmp_path,
        umask=UMASK,
    )


def test_a_new_journal_is_the_users_alone(tmp_path: Path, common_umask: None) -> None:
    where = tmp_path / "made" / "for" / "it"
    with Journal(where / "journal.sqlite3") as journal:
        journal.write(journal.start_session("task"), "user", {"text": "secret plans"})
        files = _modes(where)
    assert files == {
        "journal.sqlite3": 0o600,
        "journal.sqlite3-shm": 0o600,
        "journal.sqlite3-wal": 0o600,
    }
    for made in (where, where.parent, where.parent.parent):
        assert _mode(made) == 0o700, made


def test_railings_run_makes_a_private_journal(tmp_path: Path) -> None:
    done = railings_cli(tmp_path, "run", "write a report", "--demo")
    assert done.returncode == 0, done.stderr
    data = tmp_path / "data"
    assert _mode(data) == 0o700 and _mode(data / "railings") == 0o700
    files = _modes(data / "railings")
    assert files["journal.sqlite3"] == 0o600
    assert set(files.values()) == {0o600}, files  # the WAL and SHM files too, if still there
    assert "warning" not in done.stderr


def test_an_existing_journal_others_can_read_gets_one_warning_line(tmp_path: Path) -> None:
    first = railings_cli(tmp_path, "run", "write a report", "--demo")
    assert first.returncode == 0, first.stderr
    own = tmp_path / "data" / "railings"
    own.chmod(0o755)
    for file in own.iterdir():
        file.chmod(0o644)
    listed = railings_cli(tmp_path, "sessions")
    assert listed.returncode == 0, listed.stderr
    warnings = [line for line in listed.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, listed.stderr
    (line,) = warnings
    assert line.startswith("railings: warning: the journal") and "other users" in line
    assert "journal.sqlite3 0644" in line and f"{own} 0755" in line
    # The files are the user's to fix: a warning, not a silent change.
    assert _mode(own / "journal.sqlite3") == 0o644


def test_the_warning_is_given_once_per_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, common_umask: None
) -> None:
    path = tmp_path / "group" / "journal.sqlite3"
    path.parent.mkdir()
    Journal(path).close()
    path.chmod(0o640)
    with caplog.at_level(logging.WARNING, logger="railings"):
        Journal(path).close()
        Journal(path).close()
    lines = [r.getMessage() for r in caplog.records if "other users" in r.getMessage()]
    assert len(lines) == 1 and "journal.sqlite3 0640" in lines[0], lines
    # A folder railings did not make is not railings' to judge: only the files are named.
    assert str(path.parent) not in lines[0].replace(str(path), "")


def test_a_private_journal_gets_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, common_umask: None
) -> None:
    path = tmp_path / "journal.sqlite3"
    with caplog.at_level(logging.WARNING, logger="railings"):
        Journal(path).close()
        Journal(path).close()
    assert caplog.records == []
