"""Every Python example in the README and docs/ runs as written, and the README's console
examples print what they show.

Each Python block runs in a fresh interpreter, in an empty directory, with the official
SDKs' and railings' base-URL variables pointing at a scripted model server on 127.0.0.1
(the bundled demo script), so an example written for the real API runs unchanged. The
console blocks of the README are run through the real console script and compared line by
line, with only what differs from run to run (ports, temporary paths, session ids) masked.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from railings.testing import Script, ScriptedServer

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent


def _blocks(kind: str) -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for n, match in enumerate(re.finditer(rf"^```{kind}\n(.*?)^```$", text, re.M | re.S)):
            found.append((f"{page.relative_to(ROOT)}#{n + 1}", match[1]))
    return found


PYTHON = _blocks("python")
# The README's console examples and the agent's first run (the matrix pages' full runs are
# long, and their figures come from the command they name).
CONSOLE = [
    (name, body)
    for name, body in _blocks("console")
    if name.startswith(("README", "docs/agent.md"))
]


def _env(tmp_path: Path, server: ScriptedServer) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        "COLUMNS": "100",
        "OPENAI_BASE_URL": server.openai_base_url,
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
        "OPENAI_API_KEY": "sk-docs-example-0000",
        "ANTHROPIC_API_KEY": "sk-ant-docs-example-0000",
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
    }


def test_the_pages_have_examples() -> None:
    assert len(PYTHON) >= 12 and len(CONSOLE) >= 3


@pytest.mark.parametrize(("name", "code"), PYTHON, ids=[n for n, _ in PYTHON])
def test_python_example_runs_as_written(name: str, code: str, tmp_path: Path) -> None:
    with ScriptedServer(Script.demo()) as server:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=_env(tmp_path, server),
        )
    assert done.returncode == 0, f"{name}:\n{done.stdout}\n{done.stderr}"


_MASKS = [
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (re.compile(r"/tmp/[\w./-]+"), "TMP"),
    (re.compile(r"journal session \w+ in \S+"), "journal session ID in PATH"),
]


def _masked(text: str) -> list[str]:
    lines = []
    for line in text.rstrip("\n").splitlines():
        for pattern, mask in _MASKS:
            line = pattern.sub(mask, line)
        lines.append(line.rstrip())
    return lines


@pytest.mark.parametrize(("name", "shown"), CONSOLE, ids=[n for n, _ in CONSOLE])
def test_console_example_prints_what_it_shows(name: str, shown: str, tmp_path: Path) -> None:
    command, _, expected = shown.partition("\n")
    assert command.startswith("$ "), name
    argv = shlex.split(command[2:])
    program = BIN / Path(argv[0]).name  # `railings` or `.venv/bin/railings`: this venv's
    args = [str(ROOT / a) if a.startswith("tests/") else a for a in argv[1:]]
    with ScriptedServer(Script.demo()) as server:
        done = subprocess.run(
            [str(program), *args],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
            env=_env(tmp_path, server),
        )
    assert done.returncode == 0, done.stderr
    # A terminal interleaves the two streams: what is shown must be stdout's lines and
    # stderr's (status lines and messages), each in its own order.
    shown_lines = _masked(expected)
    out, err = _masked(done.stdout), [x for x in _masked(done.stderr) if x]
    assert _interleaves(shown_lines, out, err), (shown_lines, out, err)


def _interleaves(shown: list[str], out: list[str], err: list[str]) -> bool:
    """Is ``shown`` the lines of ``out`` and of ``err``, each kept in its order?"""
    if len(shown) != len(out) + len(err):
        return False
    # can[i][j]: the first i + j shown lines are out[:i] and err[:j], interleaved.
    can = [[False] * (len(err) + 1) for _ in range(len(out) + 1)]
    can[0][0] = True
    for i in range(len(out) + 1):
        for j in range(len(err) + 1):
            line = shown[i + j - 1] if i + j else ""
            if i and can[i - 1][j] and out[i - 1] == line:
                can[i][j] = True
            if j and can[i][j - 1] and err[j - 1] == line:
                can[i][j] = True
    return can[len(out)][len(err)]
