"""Small pieces every command shares: one-line failures, consoles that respect NO_COLOR."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable

from rich.console import Console

__all__ = [
    "EXIT_TERMINATED",
    "UsageError",
    "console",
    "fail",
    "positive",
    "run_until_stopped",
    "upstream_origin",
]


class UsageError(Exception):
    """A user mistake on the command line: reported in one line, exit code 2."""


def console(*, stderr: bool = False) -> Console:
    """A rich console: colour only on a terminal and without ``NO_COLOR``."""
    no_color = bool(os.environ.get("NO_COLOR"))
    return Console(stderr=stderr, no_color=no_color, highlight=False, soft_wrap=True)


def fail(message: str, code: int) -> int:
    print(f"railings: {message}", file=sys.stderr)
    return code


def positive(text: str) -> int:
    """argparse type: a positive integer, or a one-line usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def upstream_origin(upstream: str, command: str) -> str:
    """The upstream to forward to: clients' paths are appended as they came, so an OpenAI
    base URL pasted as ``--upstream`` (``.../v1``) would double it (``/v1/v1/...``). A
    trailing ``/v1`` is taken off, and the command says so on stderr."""
    trimmed = upstream.rstrip("/")
    if not trimmed.endswith("/v1"):
        return upstream
    origin = trimmed.removesuffix("/v1")
    print(
        f"railings: {command}: forwarding to {origin}: clients' paths already start with /v1",
        file=sys.stderr,
    )
    return origin


EXIT_TERMINATED = 128 + signal.SIGTERM  # as a shell reports a process SIGTERM ended


def run_until_stopped(session: Callable[[], Awaitable[int]]) -> int:
    """Run ``session()`` to its end. Ctrl-C cancels it (``asyncio.run`` does that, then
    raises KeyboardInterrupt: exit 130 in :func:`railings.cli.main`); SIGTERM cancels
    it the same way, so the journal session ends ``interrupted`` either way, and the
    exit code is 143, "railings: terminated" on stderr."""
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
        print("railings: terminated", file=sys.stderr)
        return EXIT_TERMINATED
