"""Every Python example in the README and docs/ runs as written, and every console example
prints what it shows.

Each Python block runs in a fresh interpreter, in an empty directory, with the official
SDKs' and railings' base-URL variables pointing at a scripted model server on 127.0.0.1
(the bundled demo script), so an example written for the real API runs unchanged. A Python
block whose first line is ``# test_<name>.py`` is a pytest module: it is written under that
name and run by pytest with the test kit's plugin. Every console block of every page is
run through the real console script and compared line by line, with only what differs from
run to run (ports, temporary paths, session ids, the home directory, a run's wall time)
masked. A console block that is a long campaign is not run, and says so:
``<!-- not run: <why> -->`` on the line before it.
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


# The line before a console block that is not run, with the reason (a long campaign).
NOT_RUN = re.compile(r"^<!-- not run: (?P<why>\S.*?) -->\n(?:\n)?\Z")
README_LINES = 300


def _blocks(kind: str) -> list[tuple[str, str, str]]:
    """``(name, body, text before the block)`` of each ``kind`` block of every page."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for n, match in enumerate(re.finditer(rf"^```{kind}\n(.*?)^```$", text, re.M | re.S)):
            before = text[: match.start()].rsplit("\n", 3)
            found.append((f"{page.relative_to(ROOT)}#{n + 1}", match[1], "\n".join(before[-3:])))
    return found


def _not_run(before: str) -> bool:
    last = before.rstrip("\n").rsplit("\n", 1)[-1] + "\n"
    return NOT_RUN.match(last) is not None


PYTHON = [(name, body) for name, body, _ in _blocks("python")]
_CONSOLE = _blocks("console")
CONSOLE = [(name, body) for name, body, before in _CONSOLE if not _not_run(before)]
SKIPPED = [name for name, _, before in _CONSOLE if _not_run(before)]


def _env(tmp_path: Path, server: ScriptedServer) -> dict[str, str]:
    # PYTHONPATH passes through: the examples run the railings these tests import.
    passed = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    return passed | {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        "COLUMNS": "100",
        "OPENAI_BASE_URL": server.openai_base_url,
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
        "OPENAI_API_KEY": "sk-docs-example-0000",
        "ANTHROPIC_API_KEY": "sk-ant-docs-example-0000",
    }


def test_the_pages_have_examples() -> None:
    assert len(PYTHON) >= 12 and len(CONSOLE) >= 5


def test_every_console_block_not_run_says_why_and_is_known() -> None:
    # A marker is the only way to skip a block; a marker that precedes nothing is stale.
    assert SKIPPED == ["docs/matrix.md#2", "docs/matrix.md#3"]
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for marker in re.finditer(r"^<!-- not run:.*$", text, re.M):
            after = text[marker.end() :].lstrip("\n")
            assert after.startswith("```console\n"), f"{page.name}: {marker[0]}"
            assert NOT_RUN.match(marker[0] + "\n"), f"{page.name}: {marker[0]}"


def test_the_readme_stays_short() -> None:
    # Detail belongs in docs/; the README keeps what a first reader needs.
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_LINES, f"README.md has {lines} lines, at most {README_LINES}"


@pytest.mark.parametrize(("name", "code"), PYTHON, ids=[n for n, _ in PYTHON])
def test_python_example_runs_as_written(name: str, code: str, tmp_path: Path) -> None:
    argv = [sys.executable, "-c", code]
    module = re.match(r"# (test_\w+\.py)\n", code)
    if module:
        (tmp_path / module[1]).write_text(code, encoding="utf-8")
        plugin = ["-p", "railings.testing.pytest_plugin", "-p", "no:cacheprovider"]
        argv = [sys.executable, "-m", "pytest", "-q", *plugin, module[1]]
    with ScriptedServer(Script.demo()) as server:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=_env(tmp_path, server),
        )
    assert done.returncode == 0, f"{name}:\n{done.stdout}\n{done.stderr}"


_MASKS = [
    # The pages show a user's home; the examples run with a temporary one.
    (re.compile(r"/home/you\b"), "HOME"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (re.compile(r"/tmp/[\w./-]+"), "TMP"),
    (re.compile(r"journal session [0-9a-f]+ in"), "journal session ID in"),
    (re.compile(r" · \d+\.\d s$"), " · SECONDS s"),  # a run's wall time (the matrix's summary)
]


def _masked(text: str, home: Path | None = None) -> list[str]:
    lines = []
    for line in text.rstrip("\n").splitlines():
        if home is not None:
            line = line.replace(str(home), "HOME")
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
    out = _masked(done.stdout, tmp_path)
    err = [x for x in _masked(done.stderr, tmp_path) if x]
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
