"""`railings matrix`: the railings client passes, a broken client fails, the SDKs are measured.

The rule is only worth something if it can fail: two deliberately broken clients
(one trusts whatever text arrived, one repairs and runs cut calls) must fail the
cells that catch them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

import railings as railings_package
from railings.dispatch import ToolRegistry
from railings.matrix import (
    CLIENTS,
    FAULT_CASES,
    PROVIDERS,
    QUICK_FAULTS,
    Cell,
    CellResult,
    Client,
    MatrixResult,
    Observation,
    RailingsClient,
    Status,
    Target,
    Upstream,
    grid,
    run_matrix,
)
from railings.matrix.cells import SIZES, Shape, payload
from railings.matrix.clients import Spy
from railings.testing import FAULTS, Fault, Script, ScriptedServer
from railings.transport import DEFAULT_BASE_URLS
from railings.turn.model import Outcome, Termination, Turn


def run(cells: Sequence[Cell], *clients: Client) -> MatrixResult:
    return asyncio.run(run_matrix(cells, list(clients)))


def by_fault(result: MatrixResult, fault: str) -> list[CellResult]:
    return [r for r in result.results if r.cell.fault.name == fault]


# -- the grid and its expectation table ----------------------------------------------------


def test_every_fault_class_of_the_proxy_is_in_the_matrix() -> None:
    shape = Shape(mid=5, drip=1)
    covered = {Fault.parse(case.spec(shape)).name for case in FAULT_CASES}
    assert covered == set(FAULTS)


def test_providers_are_the_transports() -> None:
    """Issue 7 item 7: the matrix must include the Responses API. Adding it is one line in
    railings.matrix.cells.PROVIDERS, once ClientConfig (and the server and proxy) speak it;
    this test fails the day the transport does and the line is still missing."""
    assert set(PROVIDERS) <= set(DEFAULT_BASE_URLS)
    assert ("openai-responses" in DEFAULT_BASE_URLS) == ("openai-responses" in PROVIDERS)


def test_the_tool_payload_is_cut_in_the_middle_of_the_second_call() -> None:
    for size in SIZES.values():
        plan = payload(size, True).plan
        sibling, cut = plan.calls
        assert plan.truncated and plan.stop_reason == "max_tokens"
        assert sibling.complete and json.loads(sibling.arguments) == {"command": "ls -la"}
        assert not cut.complete and 0.4 < len(cut.arguments) / size.chars < 0.6


def test_a_mid_stream_fault_lands_in_the_middle_of_the_payload() -> None:
    """The shape arithmetic puts truncate's cut in the middle of the text, or of the cut
    call's arguments, on every wire."""
    result = run(grid(["truncate"], ["small", "medium"]), RailingsClient())
    for r in result.results:
        plan = payload(r.cell.size, r.cell.tool).plan
        if r.cell.tool and r.cell.provider.whole_calls:
            continue  # Gemini, Ollama: the cut call is never sent (test_matrix_native.py)
        if r.cell.tool:
            full, got = len(plan.calls[1].arguments), len(r.observation.calls[1][1])
        else:
            full, got = len(plan.text), len(r.observation.text)
        assert 0.3 < got / full < 0.7, (r.cell.key, got, full)


# -- the railings client -------------------------------------------------------------------


def test_railings_passes_every_cell_of_the_quick_matrix() -> None:
    cells = grid(QUICK_FAULTS, ["small"])
    result = run(cells, RailingsClient())
    assert len(result.results) == len(QUICK_FAULTS) * len(PROVIDERS) * 2
    assert result.failed == [] and result.exit_code == 0, [
        (r.cell.key, r.judgement.problems) for r in result.failed
    ]
    for r in result.results:
        assert r.status is Status.PASS
        if r.cell.tool:  # the spy saw the complete sibling at most, never the cut call
            assert set(r.observation.executed or ()) <= {"ls -la"}
    resent = by_fault(result, "truncate_empty")
    assert all(r.proxy.requests == 2 and r.observation.attempts == 2 for r in resent)
    counter = by_fault(result, "close_after_terminator")
    assert all(
        r.observation.outcome == "complete" and "after the terminator" in r.proxy.actions[0]
        for r in counter
    )


def test_limit_cells_are_reported_not_failed() -> None:
    """Chat Completions and Messages number nothing: a swapped or repeated delta is the
    wire's limit, reported as such, never a failure."""
    result = run(
        grid(["reorder", "duplicate"], ["small"], ["openai", "anthropic"], tools=[False]),
        RailingsClient(),
    )
    assert {r.status for r in result.results} == {Status.LIMIT} and result.exit_code == 0


# -- the rule can fail ---------------------------------------------------------------------


class TrustsWhateverArrived(RailingsClient):
    """Ignores the proof: whatever text arrived is the answer (a stop taken for an end)."""

    name = "trusts-whatever-arrived"

    def accept(self, turn: Turn) -> Turn:
        return dataclasses.replace(
            turn, outcome=Outcome.COMPLETE, termination=Termination.CLEAN, error=None
        )


def test_a_client_that_ignores_the_proof_fails_drop_terminator() -> None:
    result = run(grid(["clean", "drop_terminator"], ["small"]), TrustsWhateverArrived())
    assert all(r.status is Status.PASS for r in by_fault(result, "clean"))
    dropped = by_fault(result, "drop_terminator")
    assert dropped and all(r.status is Status.FAIL for r in dropped)
    assert all(any("expected a Partial" in p for p in r.judgement.problems) for r in dropped)
    assert result.exit_code == 1


class RunsCutCalls(RailingsClient):
    """Closes a cut call's JSON and runs it: half a command reaches the tool."""

    name = "runs-cut-calls"

    async def run(self, target: Target) -> Observation:
        observation = await super().run(target)
        spy = Spy()
        with spy:
            tool = ToolRegistry([spy.tool])["shell"]
            for _, raw in observation.calls:
                fixed = raw if raw.endswith("}") else raw + '"}'
                await tool.function(**json.loads(fixed))
        observation.executed = spy.executed
        return observation


def test_a_client_that_runs_cut_calls_fails_every_tool_cell() -> None:
    result = run(grid(["clean"], ["small"], ["anthropic"], tools=[True]), RunsCutCalls())
    (cell,) = result.results
    assert cell.status is Status.FAIL
    assert any("EXECUTED a cut" in p for p in cell.judgement.problems)


# -- the official SDKs, measured --------------------------------------------------------------


def test_plain_openai_sdk_does_not_notice_a_dropped_terminator() -> None:
    cells = grid(["clean", "drop_terminator"], ["small"], ["openai"])
    result = run(cells, CLIENTS["openai-sdk"](), CLIENTS["openai-sdk+guard"]())
    plain = {
        (r.cell.fault.name, r.cell.tool): r for r in result.results if r.client == "openai-sdk"
    }
    guarded = [r for r in result.results if r.client == "openai-sdk+guard"]
    for tool in (False, True):
        assert plain["clean", tool].judgement.label == "full text"
        dropped = plain["drop_terminator", tool]
        assert dropped.status is Status.FAIL and dropped.observation.returned
        assert dropped.judgement.label.startswith("UNDETECTED")
    assert all(r.status is Status.PASS for r in guarded)
    assert {r.judgement.label for r in guarded if r.cell.fault.name == "drop_terminator"} == {
        "APIConnectionError"
    }
    assert result.exit_code == 0  # SDK cells are informative


# -- against a real endpoint (here: a scripted server standing in for one) ---------------------


def test_upstream_mode_compares_with_what_the_endpoint_sent() -> None:
    script = Script.from_dict({"chunk_size": 24, "turns": [{"text": {"$filler": 1000}}]})
    with ScriptedServer(script) as server:
        url = server.url
        # Bedrock signs with SigV4 without a key: its region and credentials are not set here.
        wires = [p for p in PROVIDERS if p != "bedrock"]
        cells = grid(["clean", "truncate", "close_after_terminator"], ["small"], wires, [False])
        result = asyncio.run(
            run_matrix(cells, [RailingsClient()], upstream=Upstream(url, "scripted"))
        )
    assert result.exit_code == 0 and result.upstream == url
    clean = by_fault(result, "clean")
    assert all(len(r.observation.text) == 1000 for r in clean)


# -- the command line -----------------------------------------------------------------------


SRC = str(Path(railings_package.__file__).parents[1])


def railings(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True,
        text=True,
        timeout=120,
        # the code under test, not whichever railings the interpreter would find
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "PYTHONPATH": SRC},
    )


def test_json_quick_from_a_subprocess() -> None:
    done = railings("matrix", "--json", "--quick")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["exit_code"] == 0
    assert report["summary"]["railings"]["fail"] == 0
    assert len(report["cells"]) == len(QUICK_FAULTS) * len(PROVIDERS) * 2
    assert {c["fault"] for c in report["cells"]} == set(QUICK_FAULTS)
    assert {e["fault"] for e in report["expectations"]} == {f.name for f in FAULT_CASES}


def test_table_and_summary_from_a_subprocess() -> None:
    done = railings(
        "matrix", "--quick", "--faults", "clean,drop_terminator", "--providers", "anthropic"
    )
    assert done.returncode == 0, done.stderr
    assert "drop_terminator" in done.stdout and "PASS railings" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--faults", "nope"],
        ["--sizes", "huge"],
        ["--client", "curl"],
        ["--providers", "vertex"],
        ["--jobs", "0"],
        ["--model", "m"],
        ["--upstream", "ftp://example.com", "--model", "m"],
        ["--upstream", "https://api.openai.com"],
        ["--client", "openai-sdk", "--providers", "anthropic"],
    ],
)
def test_bad_flags_exit_2_with_one_line(args: list[str]) -> None:
    done = railings("matrix", *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("railings matrix: ")
    assert done.stderr.rstrip().endswith("; see 'railings matrix --help'")
