"""`railings run` asks before a write that configures later commands, as a user meets it.

The attack: the model writes ``core.fsmonitor`` into ``.git/config`` with ``write_file``,
then asks to run a harmless ``git status``. A user who approves ``git status`` must not
thereby run the planted command: the write itself is shown and asked about first.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import railings
from railings.testing import Script, ScriptedServer

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

PLANTED = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = touch PWNED\n"
KEY = "sk-test-approval-0000"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _plant_then_run(path: str, command: str = "git status") -> Script:
    return Script.from_dict(
        {
            "turns": [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": path, "content": PLANTED}}
                    ]
                },
                {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]},
                {"text": "Done."},
            ]
        }
    )


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NO_COLOR": "1",
        "HOME": str(tmp_path),
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
        "OPENAI_API_KEY": KEY,
        "PYTHONPATH": str(Path(railings.__file__).parents[1]),  # the code under test
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True, env=_env(tmp_path))
    return work


def _argv(base_url: str, workdir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "railings",
        "run",
        "tidy up",
        "--provider",
        "openai",
        "--base-url",
        base_url,
        "--model",
        "m",
        "--workdir",
        str(workdir),
        *extra,
    ]


def _on_a_terminal(argv: list[str], env: dict[str, str], cwd: Path, answer: Any) -> tuple[int, str]:
    """Run ``argv`` with a pseudo-terminal as its stdin, stdout and stderr; answer each
    ``[y/N]`` prompt with ``answer(text_since_the_last_prompt)``. The exit code and all
    that was printed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd)
    os.close(slave)
    seen = b""
    pending = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            assert ready, f"no output for 60 s: {seen!r}"
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal: it has exited
                break
            if not chunk:
                break
            seen += chunk
            pending += chunk
            if b"[y/N]" in pending:
                reply = answer(ANSI.sub("", pending.decode(errors="replace")))
                os.write(master, b"y\n" if reply else b"n\n")
                pending = b""
        code = proc.wait(60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, seen.decode(errors="replace")


def test_a_planted_fsmonitor_never_runs_when_the_user_approves_git_status(
    tmp_path: Path, repo: Path
) -> None:
    asked: list[str] = []

    def answer(prompt: str) -> bool:
        asked.append(prompt)
        return "git status" in prompt  # the user approves the harmless command, nothing else

    before = (repo / ".git" / "config").read_text()
    with ScriptedServer(_plant_then_run(".git/config")) as server:
        code, printed = _on_a_terminal(
            _argv(server.openai_base_url, repo), _env(tmp_path), tmp_path, answer
        )
    assert code == 0, printed
    assert not (repo / "PWNED").exists(), printed  # git status ran without the planted command
    assert (repo / ".git" / "config").read_text() == before
    assert len(asked) == 2, asked
    write_prompt = " ".join(asked[0].split())
    assert "write .git/config?" in write_prompt
    assert "fsmonitor = touch PWNED" in write_prompt  # the user sees what would be written
    assert "git status" in asked[1]


@pytest.mark.parametrize(
    "path",
    [
        "./.git/../.git/config",
        ".GIT/config",
        ".git/hooks/pre-commit",
        "Makefile",
        "sub/.envrc",
        "link/config",  # a symbolic link to .git
    ],
)
def test_without_a_terminal_a_configuring_write_is_refused_and_says_why(
    tmp_path: Path, repo: Path, path: str
) -> None:
    (repo / "link").symlink_to(".git")
    with ScriptedServer(_plant_then_run(path, "true")) as server:
        done = subprocess.run(
            _argv(server.openai_base_url, repo),
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(tmp_path),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
        )
        sent = server.requests[1].body["messages"][-1]["content"]
    assert done.returncode == 0, done.stderr
    assert "no terminal to ask on" in sent and "--yes" in sent, sent
    written = [
        p for p in repo.rglob("*") if p.is_file() and "PWNED" in p.read_text(errors="replace")
    ]
    assert written == []


def test_yes_allows_a_configuring_write_as_it_allows_every_command(
    tmp_path: Path, repo: Path
) -> None:
    with ScriptedServer(_plant_then_run("Makefile", "true")) as server:
        done = subprocess.run(
            [*_argv(server.openai_base_url, repo), "--yes"],
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(tmp_path),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr
    assert (repo / "Makefile").read_text() == PLANTED


def test_a_plain_write_is_not_asked_about(tmp_path: Path, repo: Path) -> None:
    with ScriptedServer(_plant_then_run("notes/todo.txt", "true")) as server:
        done = subprocess.run(
            _argv(server.openai_base_url, repo),
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(tmp_path),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr
    assert (repo / "notes" / "todo.txt").read_text() == PLANTED
