"""Usage errors through the real console script: one line, the command named once, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RAILINGS = Path(sys.executable).parent / "railings"


@pytest.mark.parametrize(
    ("argv", "start", "help"),
    [
        (["replay", "--provider", "nope", "x"], "railings replay: argument --provider", "replay"),
        (["bogus"], "railings: argument COMMAND: invalid choice: 'bogus'", ""),
        (["matrix", "--sizes", "huge"], "railings matrix: argument --sizes", "matrix"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_command_once(
    argv: list[str], start: str, help: str
) -> None:
    done = subprocess.run([str(RAILINGS), *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(start), line
    assert "railings railings" not in line
    assert line.endswith(f"; see '{' '.join(['railings', help]).strip()} --help'"), line
