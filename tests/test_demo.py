"""``railings demo`` (``make demo``): railings beside the plain SDKs, counted, in 80 columns."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from railings.matrix import CLIENTS, grid
from railings.matrix.compare import render_comparison, tally
from test_matrix import RunsCutCalls, TrustsWhateverArrived, run

RAILINGS = Path(sys.executable).parent / "railings"


def test_the_demo_counts_what_each_side_handed_over_in_80_columns(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    done = subprocess.run(
        [str(RAILINGS), "demo"], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    header = lines[0].split()
    assert header == ["fault", "railings", "openai", "chat", "openai", "resp.", "anthropic"]
    # The summary counts what the table shows: the ✗ SAID DONE marks of the SDK columns.
    counted = re.search(
        r"^Marks of a broken stream handed over as finished: plain SDKs (\d+), railings (\d+)\.$",
        done.stdout,
        re.M,
    )
    assert counted, done.stdout
    rows = [line for line in lines[2:] if "✓" in line or "✗" in line]
    assert int(counted[1]) == sum(line.count("SAID DONE") for line in rows) > 0
    assert int(counted[2]) == 0
    assert "A mark covers a text stream and a stream with a tool call cut by" in done.stdout
    cut = re.search(
        r"^Tool calls cut by the output limit that ran: railings (\d+) of (\d+) streams\.$",
        done.stdout,
        re.M,
    )
    assert cut and cut[1] == "0" and int(cut[2]) > 0
    # The rows a newcomer must see: a forged clean end taken for an answer by the plain SDK.
    [dropped] = [line for line in lines if line.startswith("drop_terminator")]
    assert dropped.split()[1:3] == ["✓", "marked"] and "SAID DONE" in dropped


def test_the_tally_counts_a_client_that_trusts_whatever_arrived() -> None:
    result = run(grid(["clean", "drop_terminator"], ["small"], ["openai"]), TrustsWhateverArrived())
    counts = tally(result)
    assert counts.taken_as_done["trusts-whatever-arrived"] == 2  # text and tool cells
    assert counts.sdk_taken_as_done() == 2  # not railings: counted with the others


def test_the_tally_counts_cut_calls_that_ran() -> None:
    result = run(grid(["clean"], ["small"], ["anthropic"], tools=[True]), RunsCutCalls())
    counts = tally(result)
    assert (counts.cut_calls_run, counts.tool_cells) == (1, 1)


def test_without_the_sdks_the_legend_explains_no_sdk_column() -> None:
    # Without the sdks extra only the railings column is there: no word of the SDK
    # columns is explained, and no SDK count is made.
    result = run(grid(["clean", "truncate"], ["small"], ["openai"]), CLIENTS["railings"]())
    console = Console(width=80, record=True, no_color=True)
    render_comparison(console, result)
    text = console.export_text()
    assert "SAID DONE" not in text and "LOST IT" not in text and "plain SDKs" not in text
    assert "A mark covers a text stream and a stream with a tool call cut" in text
