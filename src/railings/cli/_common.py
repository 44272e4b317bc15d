"""Small pieces every command shares: one-line failures, consoles that respect NO_COLOR."""

from __future__ import annotations

import argparse
import os
import sys

from rich.console import Console

__all__ = ["UsageError", "console", "fail", "positive"]


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
