"""`railings matrix --client railings+resume`: the resume column, and that it can fail.

A client that asks the provider to keep each response reads a broken stream again instead
of ending the turn Partial; the fault proxy breaks each stream read again as it broke the
first. The column passes on the Responses cells, and the judge fails a client that does
not resume, one that generated the response again, and resume points the fault could not
have left.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import railings as railings_package
from railings.cli import build_parser
from railings.matrix import (
    ATTEMPTS,
    CLIENTS,
    FAULT_CASES,
    PROVIDERS,
    QUICK_FAULTS,
    SIZES,
    Cell,
    Expect,
    Observation,
    RailingsClient,
    Reference,
    ResumingClient,
    Status,
    Target,
    Upstream,
    grid,
    run_matrix,
)
from railings.matrix.cells import payload
from railings.matrix.judge import ProxyFacts, judge_railings
from railings.providers import SPECS
from railings.testing import Script, ScriptedServer
from test_matrix import by_fault, run

RESPONSES = "openai-responses"
CASES = {case.name: case for case in FAULT_CASES}


def test_the_column_runs_on_the_wires_whose_provider_keeps_responses_and_only_when_asked() -> None:
    keeps = {s.name for s in SPECS if s.resumption is not None}
    assert ResumingClient.providers == keeps == {RESPONSES}
    assert CLIENTS["railings+resume"] is ResumingClient and ResumingClient.resumes
    assert not RailingsClient.resumes
    assert build_parser().parse_args(["matrix"]).client == ["railings"]  # the default


def test_every_fault_that_breaks_a_stream_mid_content_has_a_resume_row() -> None:
    breaks = {c.name for c in FAULT_CASES if c.expect in (Expect.PARTIAL, Expect.LIMIT)}
    rows = {c.name: c.resuming for c in FAULT_CASES if c.resuming is not None}
    # The provider's error event is final: a failed response read again fails again.
    assert set(rows) == (breaks - {"error_event"}) | {"truncate_empty"}
    assert {n for n, r in rows.items() if r.expect is Expect.STALLED} == {
        "drop_terminator",
        "drop_proof_only",
    }
    assert CASES["error_event"].when_resumed() is CASES["error_event"]


# -- the column passes ------------------------------------------------------------------------


def test_railings_resumes_every_responses_cell_of_the_quick_matrix() -> None:
    cells = grid(QUICK_FAULTS, ["small"], [RESPONSES])
    result = run(cells, ResumingClient())
    assert len(result.results) == len(QUICK_FAULTS) * 2
    assert result.failed == [] and result.exit_code == 0, [
        (r.cell.key, r.judgement.problems) for r in result.failed
    ]
    assert {r.status for r in result.results} == {Status.PASS}
    for r in result.results:
        obs = r.observation
        assert obs.generations == 1, r.cell.key  # nothing generated twice, whatever broke
        assert r.proxy.requests == obs.attempts  # each attempt one request on the wire
        if r.cell.fault.expect is Expect.RESUMED:
            assert obs.outcome == "complete" and obs.resumed, r.cell.key
            assert obs.attempts == len(obs.resumed) + 1
    assert all(r.observation.resumed == [0] for r in by_fault(result, "truncate_empty"))
    for r in by_fault(result, "truncate"):  # a cut after K events gains K each time
        mid = payload(r.cell.size, r.cell.tool).shape(r.cell.provider).mid
        assert r.observation.resumed == [mid - 1]
    for r in by_fault(result, "drop_terminator"):  # the proof is dropped from every stream
        point = r.observation.resumed[0]
        assert r.observation.resumed == [point] * (ATTEMPTS - 1)
        assert r.observation.outcome == "partial" and r.observation.attempts == ATTEMPTS
    for r in by_fault(result, "error_event"):  # final: never read again
        assert r.observation.resumed == [] and r.observation.attempts == 1


def test_against_an_endpoint_the_attempts_may_run_out_and_the_turn_stays_partial() -> None:
    """A scripted server stands in for a real endpoint: the fault's place is a guess (event
    6) and the stream is longer than the attempts reach. The reference is the endpoint's
    streams spliced by event number."""
    script = Script.from_dict({"chunk_size": 24, "turns": [{"text": {"$filler": 1000}}]})
    with ScriptedServer(script) as server:
        cells = grid(["truncate_empty", "truncate", "corrupt"], ["small"], [RESPONSES], [False])
        result = asyncio.run(
            run_matrix(cells, [ResumingClient()], upstream=Upstream(server.url, "scripted"))
        )
    assert result.exit_code == 0, [r.judgement.problems for r in result.results]
    empty, cut, corrupt = result.results
    assert empty.observation.outcome == "complete" and len(empty.observation.text) == 1000
    assert cut.observation.outcome == "partial" and cut.observation.resumed == [5, 11, 17]
    assert corrupt.observation.resumed == [4, 9, 14]
    assert cut.judgement.label == "Partial: resumed 3x, attempts spent"


# -- the rule can fail ------------------------------------------------------------------------


class DoesNotResume(ResumingClient):
    """Held to the resume column, but streams as the plain client: asks to keep nothing."""

    name = "does-not-resume"

    async def run(self, target: Target) -> Observation:
        return await RailingsClient().run(target)


def test_a_client_that_does_not_resume_fails_the_column() -> None:
    result = run(
        grid(["clean", "truncate", "drop_terminator"], ["small"], [RESPONSES]), DoesNotResume()
    )
    assert all(r.status is Status.PASS for r in by_fault(result, "clean"))
    broken = [r for r in result.results if r.cell.fault.name != "clean"]
    assert broken and all(r.status is Status.FAIL for r in broken)
    assert all(any("never resumed" in p for p in r.judgement.problems) for r in broken)
    assert result.exit_code == 1


def _judged(**changes: object) -> list[str]:
    """The problems the judge finds in a resumed truncate cell whose observation differs
    from a correct one by ``changes``."""
    cell = Cell(CASES["truncate"].when_resumed(), SIZES["small"], PROVIDERS[RESPONSES], False)
    load = payload(cell.size, cell.tool)
    shape = load.shape(cell.provider)
    right = Observation(
        returned=True,
        text=load.plan.text,
        outcome="complete",
        interrupted=False,
        truncated=False,
        attempts=2,
        retried=[["StreamInterrupted", "RemoteError"]],
        resumed=[shape.mid - 1],
        generations=1,
        executed=[],
    )
    facts = ProxyFacts(2, (f"cut after {shape.mid} events (clean end)",) * 2)
    obs = dataclasses.replace(right, **changes)  # type: ignore[arg-type]
    return judge_railings(cell, obs, Reference.from_plan(load.plan), facts, shape=shape).problems


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({}, None),
        ({"generations": 2}, "generated 2 times"),
        ({"attempts": 3}, "3 attempts for 1 resume(s): a resend"),
        ({"resumed": [3]}, "resumed after events [3]: each attempt gains"),
        ({"text": "Réponse"}, "not the full text"),
        ({"outcome": "partial", "interrupted": True}, "the stream fits the attempts"),
    ],
)
def test_the_judge_holds_a_resumed_cell_to_one_generation_and_the_faults_points(
    changes: dict[str, object], problem: str | None
) -> None:
    problems = _judged(**changes)
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


# -- the command line -----------------------------------------------------------------------


SRC = str(Path(railings_package.__file__).parents[1])


def railings(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "COLUMNS": "80", "PYTHONPATH": SRC},
    )


def test_the_table_marks_a_resumed_cell_and_the_legend_says_so() -> None:
    done = railings("matrix", "--client", "railings+resume", "--quick")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert rows["truncate"].split()[-1] == "↻" and "resumed: full text" in rows["truncate"]
    assert rows["drop_terminator"].split()[-1] == "✓"
    assert "Partial: resumed in vain" in rows["drop_terminator"]
    assert "↻ resumed: the broken stream read again" in done.stdout
    assert "PASS railings+resume: 16 cells, 16 as expected (6 resumed), 0 failed" in done.stdout
    table = done.stdout.split("\ncolumns: ")[0]
    assert max(len(line) for line in table.splitlines()) <= 80


def test_json_says_what_was_resumed_and_generated() -> None:
    done = railings("matrix", "--json", "--client", "railings+resume", "--faults", "truncate")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    cells = report["cells"]
    assert len(cells) == len(SIZES) * 2 and {c["provider"] for c in cells} == {RESPONSES}
    for cell in cells:
        assert cell["expect"] == "resumed" and cell["status"] == "pass"
        assert cell["observation"]["resumed"] and cell["observation"]["generations"] == 1
    [row] = [e for e in report["expectations"] if e["fault"] == "truncate"]
    assert row["expect"] == "partial" and row["resumed"]["expect"] == "resumed"


def test_no_cell_to_run_for_the_column_is_a_usage_error() -> None:
    done = railings("matrix", "--client", "railings+resume", "--providers", "openai")
    assert done.returncode == 2 and done.stdout == ""
    assert "railings+resume speaks openai-responses" in done.stderr
