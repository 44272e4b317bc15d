"""The comparison a newcomer reads first: railings beside the plain official SDKs.

``railings demo`` (what ``make demo`` runs) streams the main fault classes, each on the
three wire formats, with and without a tool call that ``max_tokens`` cuts, into
railings and into the plain ``openai`` and ``anthropic`` SDKs, and shows one small
table that fits 80 columns::

    fault                   railings   openai chat   openai resp.  anthropic
    truncate                ✓ marked   ✗ SAID DONE   ✗ SAID DONE   ✗ SAID DONE

A mark covers its fault's text stream and its stream with a tool call cut by
``max_tokens`` (railings': on each of the three wires), and the table says so: ``✓`` as
expected, ``✗`` not. The words say what the application was handed: ``SAID DONE`` is a
cut stream returned as a finished answer without a word, ``LOST IT`` a complete answer
thrown away; the legend explains only the words the table shows. The last lines count
what the table shows: the marks of each side that handed a broken stream over as
finished, and how many cut tool calls railings ran (always 0), of how many streams.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from railings.matrix.cells import FAULT_CASES, Expect
from railings.matrix.judge import Status
from railings.matrix.run import CellResult, MatrixResult

__all__ = ["COLUMNS", "PROVIDERS", "Tally", "render_comparison", "tally"]

# (client, provider) -> column heading, in table order.
COLUMNS: dict[tuple[str, str], str] = {
    ("railings", ""): "railings",
    ("openai-sdk", "openai"): "openai chat",
    ("openai-sdk", "openai-responses"): "openai resp.",
    ("anthropic-sdk", "anthropic"): "anthropic",
}
# The wires the comparison runs on: those of its SDK columns (the demo stays a few
# seconds; ``railings matrix --client all`` covers every wire).
PROVIDERS: tuple[str, ...] = tuple(p for (_, p) in COLUMNS if p)

# What railings makes of each fault class, in a word or two.
_RAILINGS_WORDS = {
    Expect.FULL: "full text",
    Expect.RESENT: "resent",
    Expect.RETRIED: "retried",
    Expect.PARTIAL: "marked",
    Expect.RAISES: "raised",
    Expect.COUNTEREXAMPLE: "complete",
    Expect.LIMIT: "~",
    Expect.RESUMED: "resumed",
    Expect.STALLED: "marked",
}


class Tally:
    """What each side handed the application: broken streams taken for finished answers,
    complete answers thrown away, and (railings) cut tool calls executed."""

    def __init__(self) -> None:
        self.taken_as_done: dict[str, int] = {}
        self.lost: dict[str, int] = {}
        self.cut_calls_run = 0
        self.tool_cells = 0

    def sdk_taken_as_done(self) -> int:
        """Cells in which a plain SDK returned a cut stream as a finished answer."""
        return sum(n for client, n in self.taken_as_done.items() if client != "railings")


def _taken_as_done(r: CellResult) -> bool:
    """Did the client hand a broken stream over as a finished answer?"""
    return r.judgement.label.startswith("UNDETECTED") or (
        r.counts and r.status is Status.FAIL and r.observation.returned
    )


def tally(result: MatrixResult) -> Tally:
    """Count the cells (streams) of ``result``."""
    counts = Tally()
    for r in result.results:
        counts.taken_as_done.setdefault(r.client, 0)
        counts.lost.setdefault(r.client, 0)
        if _taken_as_done(r):
            counts.taken_as_done[r.client] += 1
        elif r.lost:
            counts.lost[r.client] += 1
        if r.counts and r.cell.tool:
            counts.tool_cells += 1
            if any("EXECUTED" in p for p in r.judgement.problems):
                counts.cut_calls_run += 1
    return counts


def _column(r: CellResult) -> tuple[str, str]:
    return (r.client, "") if r.counts else (r.client, r.cell.provider.name)


def _failure(results: Sequence[CellResult]) -> str | None:
    """The word of a ✗ mark, or None for a cell that held."""
    failed = next((r for r in results if r.status is Status.FAIL), None)
    if failed is None:
        return None
    if failed.counts:
        return "FAILED"
    return "SAID DONE" if failed.judgement.label.startswith("UNDETECTED") else "LOST IT"


_WORDS = {
    "SAID DONE": "SAID DONE: a cut stream handed over as a finished answer, without a word.",
    "LOST IT": "LOST IT: a complete answer (its proof had arrived) thrown away for an error.",
}


def _cell(results: Sequence[CellResult]) -> str:
    if not results:
        return "[dim]-[/]"
    word = _failure(results)
    if word is not None:
        return f"[bold red]✗ {word}[/]"
    if all(r.status is Status.LIMIT for r in results):
        return "[yellow]~[/]"
    first = results[0]
    if first.counts:
        return f"[green]✓[/] {_RAILINGS_WORDS[first.cell.fault.expect]}"
    if any(not r.observation.returned for r in results):
        word = "raised"
    elif any("error" in r.judgement.label for r in results):
        word = "error event"  # handed over as an event the application must look for
    else:
        word = "full text"
    return f"[green]✓[/] {word}"


def render_comparison(console: Console, result: MatrixResult) -> None:
    """The table, then the lines to remember."""
    by_key: dict[tuple[str, tuple[str, str]], list[CellResult]] = {}
    for r in result.results:
        by_key.setdefault((r.cell.fault.name, _column(r)), []).append(r)
    present = [c for c in COLUMNS if any(k[1] == c for k in by_key)]
    # No borders and one space between columns: five columns in 80.
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 2, 0, 0))
    table.add_column("fault", no_wrap=True)
    for column in present:
        table.add_column(COLUMNS[column], no_wrap=True)
    rows = [f for f in FAULT_CASES if any(k[0] == f.name for k in by_key)]
    for fault in rows:
        table.add_row(fault.name, *(_cell(by_key.get((fault.name, c), [])) for c in present))
    console.print(table)
    wires = len({r.cell.provider.name for r in result.results if r.counts})
    console.print(
        "[dim]A mark covers a text stream and a stream with a tool call cut by\n"
        f"max_tokens (railings: on each of the {wires} wires).[/]"
    )
    shown = {_failure(by_key.get((f.name, c), [])) for f in rows for c in present}
    for word, meaning in _WORDS.items():
        if word in shown:
            console.print(f"[dim]{meaning}[/]")
    # What the table shows: the marks whose streams were handed over as finished.
    handed: dict[str, int] = {}
    for (_, (client, _)), results in by_key.items():
        side = "railings" if client == "railings" else "sdks"
        handed[side] = handed.get(side, 0) + any(_taken_as_done(r) for r in results)
    counts = tally(result)
    console.print()
    if any(c[0] != "railings" for c in present):
        console.print(
            f"Marks of a broken stream handed over as finished: plain SDKs "
            f"[bold red]{handed.get('sdks', 0)}[/], railings "
            f"[bold green]{handed.get('railings', 0)}[/]."
        )
    console.print(
        f"Tool calls cut by the output limit that ran: railings {counts.cut_calls_run} of "
        f"{counts.tool_cells} streams."
    )
