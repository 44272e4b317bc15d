"""The ``railings`` command line.

Exit codes shared by every command (CONTRIBUTING.md, "Command-line conventions"):
0 success, 1 the command ran and found a failure (one line on stderr), 2 a usage or
input error (one line on stderr, never a traceback), 130 Ctrl-C and 143 SIGTERM for
a command that ends on its own; a server (serve, proxy, gateway) stops on either with
0. Commands add their own codes and say so in their ``--help``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from railings import __version__, accelerations
from railings.cli import agent, demo, gateway, kit, matrix, probe
from railings.cli import journal as journal_cmd
from railings.cli import replay as replay_cmd
from railings.cli._common import (
    EXIT_TERMINATED,
    HelpFormatter,
    InputError,
    Terminated,
    UsageError,
    fail,
    usage_line,
)
from railings.errors import MissingDependency

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2 (no usage block: the
    line names the help that has it), and ``--help`` fits 80 columns."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.commands: Mapping[str, argparse.ArgumentParser] = {}  # the top level's subcommands

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("railings").strip()
        raise UsageError(message, command or None)


def build_parser() -> _Parser:
    """The whole command line; ``parser.commands`` maps each subcommand to its parser."""
    parser = _Parser(
        prog="railings",
        description="Streaming LLM turns you can trust: a turn is finished only when the\n"
        "provider proved it, and a tool call cut off by the output limit never runs.\n\n"
        "'railings COMMAND --help' tells what a command does and its exit codes.",
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
    parser.commands = commands.choices
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``railings`` command on ``argv`` (default: the process arguments); the exit code.

    A usage error or a missing optional dependency is one line on stderr and 2, no
    command prints the help on stderr and 2, Ctrl-C is 130, SIGTERM (where a command
    catches it) 143, a closed stdout pipe is 1.
    """
    parser = build_parser()
    command: str | None = None
    try:
        problem = accelerations.environment_error()
        if problem is not None:  # a misspelt switch: refused, not guessed
            raise InputError(problem)
        args, extra = parser.parse_known_args(argv)
        command = args.command
        if extra:  # the subcommand's own parser names its help, not the top level's
            where = parser.commands.get(command or "", parser)
            where.error(f"unrecognized arguments: {' '.join(extra)}")
        if not getattr(args, "run", None):
            parser.print_help(sys.stderr)
            return 2
        code: int = args.run(args)
        return code
    except UsageError as exc:
        return fail(exc.command or command, usage_line(exc, command), 2)
    except MissingDependency as exc:
        return fail(command, str(exc), 2)
    except KeyboardInterrupt:
        return fail(command, "interrupted", 130)
    except Terminated:
        return fail(command, "terminated", EXIT_TERMINATED)
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
