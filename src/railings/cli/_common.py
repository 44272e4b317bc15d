"""Small pieces every command shares: one-line failures, consoles that respect NO_COLOR."""

from __future__ import annotations

import argparse
import os
import sys

from rich.console import Console

__all__ = ["UsageError", "console", "fail", "positive", "upstream_origin"]


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
