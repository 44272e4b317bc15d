"""A newcomer's first minutes, as the README's Quick start walks them, through the real
console script: the demo's comparison, a first run, a replay, the journal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RAILINGS = Path(sys.executable).parent / "railings"


def _railings(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        "COLUMNS": "80",
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
        "OPENAI_API_KEY": "sk-a-key-a-newcomer-has-0000",  # --demo must not use it
    }
    return subprocess.run(
        [str(RAILINGS), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )


def test_the_path_a_newcomer_takes(tmp_path: Path) -> None:
    demo = _railings(tmp_path, "demo")
    assert demo.returncode == 0, demo.stderr
    counted = re.search(r"plain SDKs (\d+), railings 0\.", demo.stdout)
    assert counted and int(counted[1]) > 0, demo.stdout

    run = _railings(tmp_path, "run", "--demo", "write a report about this project")
    assert run.returncode == 0, run.stderr
    assert "using the embedded scripted model" in run.stderr
    assert "NOT executed: truncated" in run.stdout  # the cut call, refused
    assert "done: the model ended its turn" in run.stderr  # a status line
    session = re.search(r"journal session (\w+)", run.stderr)
    assert session, run.stderr

    capture = ROOT / "tests" / "corpus" / "real" / "anthropic" / "max_tokens_inside_tool_input.sse"
    replay = _railings(tmp_path, "replay", str(capture))
    assert replay.returncode == 0 and "NOT executed: truncated" in replay.stdout

    sessions = _railings(tmp_path, "sessions")
    assert sessions.returncode == 0 and session[1] in sessions.stdout
    show = _railings(tmp_path, "show", session[1])
    assert show.returncode == 0 and "NOT executed: truncated" in show.stdout
