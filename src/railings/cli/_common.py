"""Small pieces every command shares: the one message prefix, one-line failures, the
help layout, consoles that respect NO_COLOR, and how a signal ends a command.

The conventions they hold (CONTRIBUTING.md, "Command-line conventions"): every message
railings itself prints on stderr starts with :func:`prefix` (``railings <command>: ``);
a usage error ends with ``see 'railings <command> --help'``; ``--help`` fits 80 columns.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import signal
import sys
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from railings.errors import ConfigurationError
from railings.profiles import NAMES, choose
from railings.turn.profile import WIRE, Profile

__all__ = [
    "EXIT_TERMINATED",
    "HELP_WIDTH",
    "HelpFormatter",
    "InputError",
    "Terminated",
    "UsageError",
    "chosen_profile",
    "console",
    "fail",
    "log_requests",
    "port",
    "positive",
    "prefix",
    "run_until_stopped",
    "say",
    "stop_on_sigterm",
    "upstream_origin",
    "usage_line",
]

HELP_WIDTH = 80  # --help never wider, whatever the terminal


class UsageError(Exception):
    """A mistake on the command line: one line on stderr, exit code 2, ending with where
    the command's help is. ``command`` is filled in by :func:`railings.cli.main`."""

    hint = True  # end the line with "see 'railings <command> --help'"

    def __init__(self, message: str, command: str | None = None) -> None:
        super().__init__(message)
        self.command = command


class InputError(UsageError):
    """Input the command cannot use (a missing file, a damaged journal, a port in use,
    an unreachable upstream): one line, exit code 2, and no pointer to ``--help``, which
    would not help."""

    hint = False


def chosen_profile(value: str | None) -> Profile:
    """The endpoint profile ``--profile`` names (a built-in's name, else a file; None: the
    wire's own rule), or :class:`InputError` saying why it cannot be used. A built-in's
    name is never read as a file of that name in the current directory."""
    if value is None:
        return WIRE
    try:
        named = value in NAMES or not Path(value).exists()
        return choose(value if named else Path(value), "")
    except ConfigurationError as exc:
        raise InputError(f"--profile: {exc}") from None


def prefix(command: str | None) -> str:
    """The start of every message railings prints on stderr: ``railings <command>: ``
    (``railings: `` before a command is known)."""
    return f"railings {command}: " if command else "railings: "


def say(command: str | None, message: str) -> None:
    """One status or error line on stderr, with the command's prefix."""
    print(prefix(command) + message, file=sys.stderr, flush=True)


def log_requests(command: str, logger: str) -> None:
    """``logger``'s records at INFO and above on stderr, each after :func:`prefix`: the
    line per request of a server command. They stop there: passed on to the root logger
    too, they would print twice wherever the root has a handler."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(prefix(command) + "%(message)s"))
    log = logging.getLogger(logger)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def fail(command: str | None, message: str, code: int) -> int:
    """Say ``message`` on stderr; ``code``, for ``return fail(...)``."""
    say(command, message)
    return code


def usage_line(error: UsageError, command: str | None) -> str:
    """The one line a usage or input error prints (without the prefix)."""
    where = error.command or command
    text = str(error)
    if error.hint:
        text += f"; see 'railings{f' {where}' if where else ''} --help'"
    return text


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help, at most :data:`HELP_WIDTH` columns wide on any terminal; the
    descriptions are laid out by hand, so they are kept as written."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        width = min(shutil.get_terminal_size().columns, HELP_WIDTH)
        super().__init__(prog, width=width, max_help_position=26)

    def _split_lines(self, text: str, width: int) -> list[str]:
        # An option's help, wrapped without breaking a name at its hyphen
        # ("openai-responses", "--base-url").
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def console(*, stderr: bool = False, wrap: bool = False) -> Console:
    """A rich console: colour only on a terminal and without ``NO_COLOR``. ``wrap`` (a
    report): on a terminal, long lines wrap at word boundaries, where the terminal itself
    would cut words; to a pipe each line stays whole, for grep. Without it (a live stream
    printed in pieces) lines are left to the terminal."""
    no_color = bool(os.environ.get("NO_COLOR"))
    out = Console(stderr=stderr, no_color=no_color, highlight=False)
    out.soft_wrap = not (wrap and out.is_terminal)
    return out


def positive(text: str) -> int:
    """argparse type: a positive integer, or a one-line usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def port(text: str) -> int:
    """argparse type: a port number, 0 (a free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return value


def upstream_origin(upstream: str, command: str) -> str:
    """The upstream to forward to: clients' paths are appended as they came, so an OpenAI
    base URL pasted as ``--upstream`` (``.../v1``) would double it (``/v1/v1/...``). A
    trailing ``/v1`` is taken off, and the command says so on stderr."""
    trimmed = upstream.rstrip("/")
    if not trimmed.endswith("/v1"):
        return upstream
    origin = trimmed.removesuffix("/v1")
    say(command, f"forwarding to {origin}: clients' paths already start with /v1")
    return origin


EXIT_TERMINATED = 128 + signal.SIGTERM  # as a shell reports a process SIGTERM ended


def stop_on_sigterm() -> None:
    """A server (serve, proxy, gateway) stops on SIGTERM as on Ctrl-C: cleanly, exit 0.
    Both are how a server is meant to stop (``docker stop``, systemd), and a service
    manager counts 143 as a failure."""
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class Terminated(Exception):
    """SIGTERM ended a command before its end: exit 143 in :func:`railings.cli.main`,
    ``railings <command>: terminated`` on stderr."""


def run_until_stopped(session: Callable[[], Awaitable[int]]) -> int:
    """Run ``session()`` to its end. Ctrl-C cancels it (``asyncio.run`` does that, then
    raises KeyboardInterrupt: exit 130 in :func:`railings.cli.main`); SIGTERM cancels
    it the same way and raises :class:`Terminated` (exit 143), so the journal session
    ends ``interrupted`` either way."""
    terminated = False

    async def main() -> int:
        nonlocal terminated
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None  # main() runs as asyncio.run's task

        def on_sigterm() -> None:
            nonlocal terminated
            terminated = True
            task.cancel()

        try:
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        except NotImplementedError:  # no signal handlers on this loop (Windows)
            return await session()
        try:
            return await session()
        finally:
            loop.remove_signal_handler(signal.SIGTERM)

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if not terminated:
            raise
        raise Terminated from None
