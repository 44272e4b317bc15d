"""The ``railings`` command line.

Exit codes shared by every command: 0 success, 1 a runtime failure (one line on
stderr), 2 a usage error (one line on stderr, never a traceback). Commands add
their own codes and say so in their ``--help``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from railings import __version__, accelerations
from railings.cli import agent, demo, gateway, kit, matrix, probe
from railings.cli import journal as journal_cmd
from railings.cli import replay as replay_cmd
from railings.cli._common import UsageError, fail
from railings.errors import MissingDependency

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # main() prefixes every failure with "railings: ": name the subcommand only.
        command = self.prog.removeprefix("railings").strip()
        where = f"{command}: " if command else ""
        raise UsageError(f"{where}{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="railings",
        description="Streaming LLM turns you can trust: a turn is finished only when the "
        "provider proved it, and a tool call cut off by the output limit never runs.",
    )
    parser.add_argument("--version", action="version", version=f"railings {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    replay_cmd.register(commands)
    kit.register(commands)
    agent.register(commands)
    journal_cmd.register(commands)
    matrix.register(commands)
    demo.register(commands)
    gateway.register(commands)
    probe.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``railings`` command on ``argv`` (default: the process arguments); the exit code.

    A usage error or a missing optional dependency is one line on stderr and 2, no
    command prints the help on stderr and 2, Ctrl-C is 130, a closed stdout pipe is 1.
    """
    parser = build_parser()
    try:
        problem = accelerations.environment_error()
        if problem is not None:  # a misspelt switch: refused, not guessed
            raise UsageError(problem)
        args = parser.parse_args(argv)
        if not getattr(args, "run", None):
            parser.print_help(sys.stderr)
            return 2
        code: int = args.run(args)
        return code
    except (UsageError, MissingDependency) as exc:
        return fail(str(exc), 2)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
