"""`railings run --resume` as a user runs it: the scripted server keeps the response, the
fault proxy cuts the first stream, and the agent reads the rest of the same response."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from railings.journal import Journal
from railings.testing import FaultProxy, Script, ScriptedServer

TEXT = "Resumed from where it broke, and generated once."


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
        "OPENAI_API_KEY": "sk-test-0000",
    }
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


def test_run_resume_reads_the_rest_of_a_cut_stream(tmp_path: Path) -> None:
    with (
        ScriptedServer(Script.text(TEXT, chunk_size=6)) as server,
        FaultProxy(server.url, "truncate:events=8,times=1") as proxy,  # the POST only
    ):
        base = proxy.url + "/v1"
        done = run(tmp_path, "run", "say it", "--provider", "openai-responses",
                   "--base-url", base, "--resume", "--tools", "none")  # fmt: skip
        requests = [(r.method, r.path.partition("?")[0]) for r in server.requests]
        generations = server.generations
    assert done.returncode == 0, done.stderr
    assert TEXT in done.stdout and "INCOMPLETE" not in done.stdout
    assert "resuming: attempt 2 of 4" in done.stderr and "after event 7" in done.stderr
    assert generations == 1 and [m for m, _ in requests] == ["POST", "GET"]
    with Journal(tmp_path / "journal.sqlite3") as journal:
        (session,) = journal.sessions()
        (end,) = [e for e in journal.entries(session.id) if e.kind == "turn_end"]
    assert end.data["resumed"] == [7] and end.data["outcome"] == "complete"
    shown = run(tmp_path, "show", session.id)
    assert shown.returncode == 0, shown.stderr
    assert "resumed after event 7" in shown.stdout


def test_run_resume_on_a_wire_that_keeps_nothing_is_a_usage_error(tmp_path: Path) -> None:
    done = run(tmp_path, "run", "x", "--provider", "openai", "--resume")
    assert done.returncode == 2
    assert done.stderr.startswith("railings run: --resume: OpenAI Chat Completions keeps no")
    assert "Traceback" not in done.stderr
