"""``railings demo``: why railings exists, in a few seconds and one screen."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from rich.markup import escape

from railings._extras import missing
from railings.cli._common import console

__all__ = ["register", "run"]

HELP = """\
Stream the main fault classes (a cut connection, a forged clean ending, a silent
server, a 429, an error event, the proof followed by a broken connection) on the
three wire formats, each with and without a tool call cut by max_tokens, into
railings and into the plain official openai and anthropic SDKs, and show what
each handed the application. Everything runs on 127.0.0.1: the embedded scripted
model server behind the fault proxy. No API key, no network.

The full matrix (every fault class, three payload sizes, the SDKs with and
without railings.guard) is `railings matrix --client all`.

exit codes: 0 railings held to the rule in every cell; 1 a railings cell failed.
"""

SDK_CLIENTS = ("openai-sdk", "anthropic-sdk")


def register(commands: Any) -> None:
    """Add ``railings demo`` to the command line."""
    parser = commands.add_parser(
        "demo",
        help="railings beside the plain official SDKs, in a few seconds",
        description=HELP,
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the comparison and print it; the exit code is railings' own verdict."""
    from railings.matrix import CLIENTS, QUICK_FAULTS, grid, run_matrix
    from railings.matrix.compare import PROVIDERS, render_comparison
    from railings.matrix.report import progress
    from railings.matrix.run import DEFAULT_JOBS, count

    names = ["railings"]
    absent = missing("openai", "anthropic")
    names += [
        n
        for n, module in zip(SDK_CLIENTS, ("openai", "anthropic"), strict=True)
        if module not in absent
    ]
    clients = [CLIENTS[n]() for n in names]
    cells = grid(list(QUICK_FAULTS), ["small"], list(PROVIDERS))
    err = console(stderr=True)
    with progress(err, count(cells, clients), enabled=err.is_terminal) as advance:
        result = asyncio.run(run_matrix(cells, clients, jobs=DEFAULT_JOBS, on_result=advance))
    out = console(wrap=True)
    render_comparison(out, result)
    if absent:
        note = (
            f"Not installed: {', '.join(absent)}. pip install {' '.join(absent)} to see"
            " the official SDKs beside railings."
        )
        out.print(f"[dim]{escape(note)}[/]")
    out.print("[dim]The full matrix: railings matrix --client all[/]")
    return result.exit_code
