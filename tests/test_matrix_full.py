"""The full `railings matrix`: every fault class, payload size and wire, with and without a cut
call, through the fault proxy into railings. Every cell passes, as docs/matrix.md shows.

The other matrix tests run the quick subset; this one runs what `railings matrix` runs
by default, and the resume column on the wire whose provider keeps responses, so a cell
that fails only at medium or large sizes, or only on one wire's framing (an NDJSON line
with invalid UTF-8 in the middle of a read, say), fails here.
"""

from __future__ import annotations

import asyncio

import pytest

from railings.matrix import (
    FAULT_CASES,
    PROVIDERS,
    Expect,
    RailingsClient,
    ResumingClient,
    Status,
    grid,
    run_matrix,
)


def test_the_wires_are_the_full_matrix_s() -> None:
    assert sum(len(grid(providers=[p])) for p in PROVIDERS) == len(grid())


# One wire per test, so that the suite's workers share the matrix.
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_railings_passes_every_cell_of_the_full_matrix(provider: str) -> None:
    cells = grid(providers=[provider])
    result = asyncio.run(run_matrix(cells, [RailingsClient()]))
    assert len(result.results) == len(cells) >= len(FAULT_CASES)
    assert result.failed == [] and result.exit_code == 0, [
        (r.cell.key, r.judgement.problems) for r in result.failed
    ]
    assert {r.status for r in result.results} <= {Status.PASS, Status.LIMIT}
    # A corrupt line after content on Ollama's NDJSON keeps what came: Partial, never resent.
    utf8 = [
        r
        for r in result.results
        if r.cell.fault.name == "corrupt_utf8" and r.cell.provider.name == "ollama"
    ]
    assert bool(utf8) == (provider == "ollama") and all(
        r.observation.outcome == "partial" for r in utf8
    ), [(r.cell.key, r.observation.outcome) for r in utf8]
    assert all(r.observation.attempts == 1 for r in utf8)


def test_railings_resumes_every_cell_of_the_full_matrix_on_the_wire_that_keeps_them() -> None:
    (provider,) = ResumingClient.providers
    cells = grid(providers=[provider])
    result = asyncio.run(run_matrix(cells, [ResumingClient()]))
    assert len(result.results) == len(cells)
    assert result.failed == [] and result.exit_code == 0, [
        (r.cell.key, r.judgement.problems) for r in result.failed
    ]
    assert {r.status for r in result.results} == {Status.PASS}
    assert all(r.observation.generations in (0, 1) for r in result.results)  # 0: 429 always
    # The fault sits in the middle of the stream: every size is read whole in two
    # attempts, three where the fault costs the event it breaks (or a reset lost some).
    resumed = [r for r in result.results if r.cell.fault.expect is Expect.RESUMED]
    assert {r.cell.fault.name for r in resumed} >= {"truncate", "reset", "corrupt", "reorder"}
    assert all(
        r.observation.outcome == "complete" and 2 <= (r.observation.attempts or 0) <= 3
        for r in resumed
    ), [(r.cell.key, r.observation.resumed) for r in resumed]
