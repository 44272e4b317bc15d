"""Install the built wheel into a fresh venv, outside the source tree, and run it.

Run by ``make wheel-check`` after ``make dist``: ``python -m tools.wheel_check dist``.
What a user gets from ``pip install <wheel>`` must work without the repository: the venv
is made in a temporary directory and every command runs there, so neither ``src/`` nor
``tests/`` is importable. It checks that ``railings`` is imported from the venv, that
``railings demo`` runs on its embedded scripted server (the railings column alone, as no
extra is installed) and that ``railings replay`` judges the example stream the wheel ships
(``railings.examples.CUT_SHELL_CALL``). Each command's output is printed; a missing line
or a failed command exits 1.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

# Lines each command must print (substrings), whatever else it prints.
DEMO_SAYS = ("Tool calls cut by the output limit that ran: railings 0 of",)
REPLAY_SAYS = ("TRUNCATED by the output limit", "NOT executed: truncated")


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    print("$", shlex.join(argv), flush=True)
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    print(done.stdout, end="")
    print(done.stderr, end="", file=sys.stderr)
    if done.returncode != 0:
        raise SystemExit(f"wheel_check: {argv[0]} exited {done.returncode}")
    return done.stdout + done.stderr


def _expect(output: str, lines: tuple[str, ...], what: str) -> None:
    for line in lines:
        if line not in output:
            raise SystemExit(f"wheel_check: {what} did not print {line!r}")


def check(wheel: Path) -> None:
    """Install ``wheel`` into a new venv in a temporary directory and run railings there."""
    with tempfile.TemporaryDirectory(prefix="railings-wheel-") as tmp:
        where = Path(tmp)
        venv = where / "venv"
        bin_ = venv / ("Scripts" if os.name == "nt" else "bin")
        # No PYTHONPATH or VIRTUAL_ENV of the caller: the venv alone decides what imports.
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env |= {"NO_COLOR": "1", "HOME": str(where), "RAILINGS_JOURNAL": str(where / "j.db")}
        _run([sys.executable, "-m", "venv", str(venv)], where, env)
        python = str(bin_ / "python")
        _run([python, "-m", "pip", "install", "--quiet", str(wheel.resolve())], where, env)
        found = _run([python, "-c", "import railings; print(railings.__file__)"], where, env)
        if not Path(found.strip()).resolve().is_relative_to(venv.resolve()):
            raise SystemExit(f"wheel_check: railings was imported from {found.strip()}")
        _expect(_run([str(bin_ / "railings"), "demo"], where, env), DEMO_SAYS, "railings demo")
        example = _run(
            [python, "-c", "import railings.examples as e; print(e.CUT_SHELL_CALL)"], where, env
        ).strip()
        replayed = _run([str(bin_ / "railings"), "replay", example], where, env)
        _expect(replayed, REPLAY_SAYS, "railings replay")
    print(f"wheel_check: {wheel.name} installs and runs outside the source tree")


def main(argv: list[str]) -> int:
    dist = Path(argv[0] if argv else "dist")
    wheels = sorted(dist.glob("railings-*.whl"))
    if len(wheels) != 1:
        print(f"wheel_check: expected one railings wheel in {dist}", file=sys.stderr)
        return 1
    check(wheels[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
