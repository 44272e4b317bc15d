"""The matrix for a person (rich tables, a progress bar, a summary) and for a machine (JSON).

The tables fit 80 columns. A row is a fault class; a column is one client on one
provider. A cell shows one mark per payload size, first the text cells, then the
cells with a tool call cut by ``max_tokens``. With one client, the providers share
one table: a column per provider, headed by a short name the legend spells out, a
cell its marks only (text on the first line, the cut tool call on the second), and
what a client did that differs from the "expected" column is listed under the
table. With several clients, each provider gets its own table, and a cell says
what its client did, in a few words::

    ✓✓✓ ✓✓✓ Partial: IdleTimeout

``✓`` as expected, ``✗`` not (for an official SDK: it did not notice, or it
threw a complete answer away), ``~`` the wire format cannot show the fault
(reorder and duplicate: Chat Completions and Messages carry no sequence
numbers), ``↻`` as expected by resuming: the broken stream was read again from the
response the provider kept, and the full text came, generated once (the
``railings+resume`` column; the legend explains it only where it shows).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from railings.matrix.cells import FAULT_CASES, Expect, FaultCase
from railings.matrix.judge import Status
from railings.matrix.run import CellResult, MatrixResult

__all__ = ["MARKS", "progress", "render", "summary_lines", "to_json"]

MARKS = {Status.PASS: "✓", Status.FAIL: "✗", Status.LIMIT: "~"}
RESUMED = "↻"  # the mark of a cell that passed by resuming the kept response
_STYLE = {Status.PASS: "green", Status.FAIL: "bold red", Status.LIMIT: "yellow"}
_SDK_FAIL = "red"

FOOTNOTES: dict[tuple[str, ...], str] = {
    (
        "close_after_terminator",
    ): "close_after_terminator is the proven-then-broken case: the whole stream and its proof "
    "arrived, then the connection broke. The proof is data, not the close: the turn is "
    "complete. Had the proof itself been lost, nobody could tell it from drop_terminator: "
    "Partial.",
    (
        "reorder",
        "duplicate",
    ): "reorder / duplicate swap or repeat two content deltas with the proof intact. Chat "
    "Completions and Messages number nothing, so no client can notice (~): reported, "
    "never a failure. Responses events carry sequence numbers and the content comes "
    "again at the end: there the full text, or a detected fault, is due.",
}


@contextmanager
def progress(console: Console, total: int, enabled: bool) -> Iterator[Callable[[CellResult], None]]:
    """A progress bar on ``console`` (stderr) while the cells run; ``advance(result)``."""
    bar = Progress(
        TextColumn("[bold]railings matrix"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not enabled,
    )
    with bar:
        task = bar.add_task("cells", total=total, failed="")
        failed = 0

        def advance(result: CellResult) -> None:
            nonlocal failed
            if result.counts and result.status is Status.FAIL:
                failed += 1
            bar.update(task, advance=1, failed=f"[red]{failed} failed[/]" if failed else "")

        yield advance


def _columns(result: MatrixResult) -> list[tuple[str, str]]:
    """(provider, client) pairs in first-seen order."""
    return list(dict.fromkeys((r.cell.provider.name, r.client) for r in result.results))


def _marks(results: Sequence[CellResult], between: str) -> str:
    """The text cells' marks, then the tool cells', ``between`` the two groups."""
    texts = [r for r in results if not r.cell.tool]
    tools = [r for r in results if r.cell.tool]
    groups = [g for g in (texts, tools) if g]
    return between.join("".join(_mark(r) for r in g) for g in groups)


def _cell_text(results: Sequence[CellResult]) -> str:
    """Marks, then what the client did (a table of several clients)."""
    labels: dict[str, CellResult] = {}
    for r in results:
        labels.setdefault(r.judgement.label, r)
    words = "; ".join(f"[{_label_style(r)}]{escape(label)}[/]" for label, r in labels.items())
    return f"{_marks(results, ' ')} {words}".rstrip()


def short_name(provider: str) -> str:
    """A provider's column heading in a one-client table: each hyphenated part's first
    three letters (``openai-responses`` -> ``ope-res``), spelt out in the legend."""
    return "-".join(part[:3] for part in provider.split("-"))


def _mark(r: CellResult) -> str:
    style = _STYLE[r.status] if r.counts or r.status is not Status.FAIL else _SDK_FAIL
    mark = RESUMED if _resumed(r) else MARKS[r.status]
    return f"[{style}]{mark}[/]"


def _resumed(r: CellResult) -> bool:
    """Did the cell pass by reading the kept response again to the end?"""
    return (
        r.status is Status.PASS
        and bool(r.observation.resumed)
        and r.observation.outcome == "complete"
    )


def _label_style(r: CellResult) -> str:
    if r.status is Status.FAIL:
        return "bold red" if r.counts else _SDK_FAIL
    return "yellow" if r.status is Status.LIMIT else "default"


def _table(result: MatrixResult, columns: list[tuple[str, str]], title: str) -> Table:
    """One client: an "expected" column, and a cell shows only what differs from it.
    Several clients: every cell says what its client did."""
    by_key: dict[tuple[str, str, str], list[CellResult]] = {}
    for r in result.results:
        by_key.setdefault((r.cell.fault.name, r.cell.provider.name, r.client), []).append(r)
    one_client = len({c for _, c in columns}) == 1
    # No outer border, one space between columns: a whole table in 80 columns.
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )
    table.add_column("fault", no_wrap=True)
    if one_client:
        table.add_column("expected", style="dim", overflow="fold")
    for provider, client in columns:
        heading = short_name(provider) if one_client else client.replace("+", "\n+")
        table.add_column(heading, no_wrap=one_client, overflow="fold")
    for fault in FAULT_CASES:
        present = [rs for k, rs in by_key.items() if k[0] == fault.name]
        if not present:
            continue
        # The expected words are those its client is held to (the resume column's, say).
        row = [fault.name, present[0][0].cell.fault.detail] if one_client else [fault.name]
        for provider, client in columns:
            cells = by_key.get((fault.name, provider, client), [])
            if not cells:
                row.append("[dim]-[/]")
            else:
                row.append(_marks(cells, "\n") if one_client else _cell_text(cells))
        table.add_row(*row)
    return table


def _differences(result: MatrixResult) -> list[str]:
    """A one-client table's notes: what the client did where it is not the expected
    column's words, once per provider, fault and words."""
    seen = dict.fromkeys(
        (r.cell.provider.name, r.cell.fault.name, r.judgement.label)
        for r in result.results
        if r.judgement.label != r.cell.fault.detail
    )
    return [f"{short_name(p)} {fault}: {escape(label)}" for p, fault, label in seen]


def _legend(result: MatrixResult, *, stacked: bool) -> str:
    """What the marks mean, those the tables can show; ``stacked``: the two groups are on
    two lines of a cell."""
    sizes = _sizes(result.results)
    tools = sorted({r.cell.tool for r in result.results})
    parts = []
    if False in tools:
        parts.append(f"text {'/'.join(sizes)}")
    if True in tools:
        parts.append(f"with a cut tool call {'/'.join(sizes)}")
    order = ", below: " if stacked else ", then "
    sdk = " (an SDK: did not notice, or lost a complete answer)"
    legend = f"marks: {order.join(parts)}. ✓ as expected  ✗ not"
    legend += sdk if any(not r.counts for r in result.results) else ""
    if any(r.status is Status.LIMIT for r in result.results):
        legend += "  ~ no client can tell on this wire"
    if any(_resumed(r) for r in result.results):
        legend += (
            f"\n{RESUMED} resumed: the broken stream read again from the response the "
            "provider kept (background: true); the full text, generated once"
        )
    return legend


def _sizes(results: Sequence[CellResult]) -> list[str]:
    return list(dict.fromkeys(r.cell.size.name for r in results))


def render(console: Console, result: MatrixResult) -> None:
    """The tables, the legend, the footnotes, any railings failures, the summary."""
    columns = _columns(result)
    where = (
        f"through the fault proxy to {result.upstream}"
        if result.upstream
        else "embedded server behind the fault proxy"
    )
    clients = list(dict.fromkeys(c for _, c in columns))
    providers = list(dict.fromkeys(p for p, _ in columns))
    one_client = len(clients) == 1
    if one_client:
        console.print(_table(result, columns, f"railings matrix: {clients[0]}, {where}"))
        console.print(
            "[dim]"
            + escape("columns: " + ", ".join(f"{short_name(p)} {p}" for p in providers))
            + "[/]"
        )
        differences = _differences(result)
        if differences:
            console.print("[dim]where a client did otherwise than expected:[/]")
        for line in differences[:20]:
            console.print(f"  {line}")
        if len(differences) > 20:
            console.print(f"  ... and {len(differences) - 20} more")
    else:
        for provider in providers:
            console.print(
                _table(
                    result,
                    [c for c in columns if c[0] == provider],
                    f"railings matrix: {provider}, {where}",
                )
            )
            console.print()
    console.print(f"[dim]{_legend(result, stacked=one_client)}[/]")
    faults = {r.cell.fault.name for r in result.results}
    for names, note in FOOTNOTES.items():
        if faults.intersection(names):
            console.print(f"[dim]{escape(note)}[/]")
    for r in result.failed[:20]:
        console.print(
            f"[bold red]FAIL[/] {escape(_where(r))}: {escape('; '.join(r.judgement.problems))}"
        )
    if len(result.failed) > 20:
        console.print(f"[bold red]... and {len(result.failed) - 20} more failed cells[/]")
    for line in summary_lines(result):
        console.print(line)


def _where(r: CellResult) -> str:
    tool = " +cut tool call" if r.cell.tool else ""
    return (
        f"{r.client} {r.cell.provider.name} {r.cell.fault.name} {r.cell.size.name}{tool} ({r.spec})"
    )


def summary_lines(result: MatrixResult) -> list[str]:
    """One line for the verdict (railings cells), one per other client (informative)."""
    lines = []
    by_client: dict[str, list[CellResult]] = {}
    for r in result.results:
        by_client.setdefault(r.client, []).append(r)
    for client, results in by_client.items():
        counts = {s: sum(1 for r in results if r.status is s) for s in Status}
        limit = f", {counts[Status.LIMIT]} at the wire's limit" if counts[Status.LIMIT] else ""
        if results[0].counts:
            tools = [r for r in results if r.cell.tool]
            ran_cut = sum(1 for r in tools if any("EXECUTED" in p for p in r.judgement.problems))
            verdict = (
                "[bold green]PASS[/]"
                if not counts[Status.FAIL]
                else f"[bold red]FAIL ({counts[Status.FAIL]} cells)[/]"
            )
            cut = (
                f" · cut tool calls executed: {ran_cut} of {len(tools)} tool cells" if tools else ""
            )
            resumed = sum(1 for r in results if _resumed(r))
            by_resuming = f" ({resumed} resumed)" if resumed else ""
            lines.append(
                f"{verdict} {client}: {len(results)} cells, {counts[Status.PASS]} as "
                f"expected{by_resuming}{limit}, {counts[Status.FAIL]} failed{cut} · "
                f"{result.seconds:.1f} s"
            )
        else:
            detectable = [r for r in results if _detectable(r)]
            missed = sum(1 for r in detectable if r.judgement.label.startswith("UNDETECTED"))
            lost = sum(1 for r in results if r.lost)
            extra = f", threw a complete answer away in {lost}" if lost else ""
            lines.append(
                f"[dim]info[/] {client}: did not notice {missed} of {len(detectable)} "
                f"detectable faults{extra}{limit} (informative: never the exit code)"
            )
    return lines


def _detectable(r: CellResult) -> bool:
    """A fault a client can notice on this wire (what "did not notice" counts over)."""
    expect = r.cell.fault.expect
    if expect is Expect.LIMIT:
        return r.cell.provider.numbered
    return expect not in (Expect.FULL, Expect.COUNTEREXAMPLE)


def to_json(result: MatrixResult, *, options: dict[str, Any] | None = None) -> str:
    """One JSON object: the expectation table, every cell, the summary and the exit code."""
    doc = {
        "version": 1,
        "upstream": result.upstream,
        "options": options or {},
        "expectations": [_expectation(f) for f in FAULT_CASES],
        "cells": [r.to_json() for r in result.results],
        "summary": _summary_json(result),
        "seconds": round(result.seconds, 3),
        "exit_code": result.exit_code,
    }
    return json.dumps(doc, ensure_ascii=False)


def _expectation(case: FaultCase) -> dict[str, Any]:
    """One row of the expectation table, and of its resume column where it differs."""
    row = case.resuming
    resumed = (
        None
        if row is None
        else {"expect": row.expect.value, "detail": row.detail, "error": row.error}
    )
    return {
        "fault": case.name,
        "expect": case.expect.value,
        "detail": case.detail,
        "error": case.error,
        "resumed": resumed,
    }


def _summary_json(result: MatrixResult) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in result.results:
        entry = out.setdefault(
            r.client, {"kind": r.kind, "cells": 0, "pass": 0, "fail": 0, "limit": 0}
        )
        entry["cells"] += 1
        entry[r.status.value] += 1
    return out
