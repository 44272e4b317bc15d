"""The matrix on Gemini, Bedrock and Ollama: the official clients as columns, the framing
fault cases on the wires they apply to, and what each client does (measured)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from railings.matrix import CLIENTS, FAULT_CASES, PROVIDERS, Status, grid, run_matrix
from railings.matrix.cells import payload
from railings.matrix.judge import Reference
from railings.matrix.observation import Client
from railings.matrix.run import MatrixResult
from railings.providers.base import Framing

NATIVE = ["gemini", "bedrock", "ollama"]


def run(faults: Sequence[str], providers: Sequence[str], *names: str) -> MatrixResult:
    clients: list[Client] = [CLIENTS[n]() for n in names]
    return asyncio.run(run_matrix(grid(faults, ["small"], providers), clients))


def test_the_official_clients_are_columns_of_their_wire() -> None:
    assert CLIENTS["google-genai"]().providers == {"gemini"}
    assert CLIENTS["boto3"]().providers == {"bedrock"}
    assert CLIENTS["ollama"]().providers == {"ollama"}
    assert set(NATIVE) <= set(PROVIDERS)
    assert PROVIDERS["bedrock"].framing is Framing.EVENTSTREAM
    assert PROVIDERS["gemini"].whole_calls and PROVIDERS["ollama"].whole_calls
    assert not PROVIDERS["bedrock"].whole_calls


def test_framing_cases_run_only_on_their_framings() -> None:
    names = {c.name for c in FAULT_CASES if c.framings is not None}
    assert names == {"cut_mid_event", "corrupt_crc", "drop_proof_only"}
    cells = grid(sorted(names), ["small"], tools=(False,))
    assert {(c.fault.name, c.provider.name) for c in cells} == {
        ("cut_mid_event", "bedrock"),
        ("cut_mid_event", "ollama"),
        ("corrupt_crc", "bedrock"),
        ("drop_proof_only", "bedrock"),
    }


def test_a_cut_call_is_left_out_of_the_reference_where_calls_arrive_whole() -> None:
    """Where calls arrive whole the cut one is never sent, and the sibling of a truncated
    turn proves nothing about its end: a correct dispatch runs no call at all."""
    plan = payload(next(iter(grid(["clean"], ["small"]))).size, True).plan
    whole = Reference.from_plan(plan, whole_calls=True)
    assert [(c.name, c.complete) for c in whole.calls] == [("shell", False)]
    assert whole.complete_commands == []
    assert [c.complete for c in Reference.from_plan(plan).calls] == [True, False]


def test_every_official_client_reads_the_clean_stream_whole() -> None:
    result = run(["clean", "drip"], NATIVE, "google-genai", "boto3", "ollama")
    assert len(result.results) == 2 * 3 * 2
    assert all(r.status is Status.PASS for r in result.results), [
        (r.client, r.cell.key, r.judgement.problems) for r in result.results
    ]


def test_boto3_on_the_frame_faults() -> None:
    """Measured: boto3 raises on a bad CRC, but ends quietly on half a frame and on a
    stream without messageStop (its metadata still came)."""
    result = run(["corrupt_crc", "cut_mid_event", "drop_proof_only"], ["bedrock"], "boto3")
    seen = {(r.cell.fault.name, r.cell.tool): r for r in result.results}
    for tool in (False, True):
        crc = seen["corrupt_crc", tool]
        assert crc.status is Status.PASS and crc.observation.raised is not None
        assert crc.observation.raised.endswith("ChecksumMismatch")
        for quiet in ("cut_mid_event", "drop_proof_only"):
            r = seen[quiet, tool]
            assert r.status is Status.FAIL and r.observation.returned, (quiet, tool)
            assert r.observation.stop_reason is None  # no messageStop reached it


def test_ollama_and_google_genai_accept_a_stream_without_its_proof() -> None:
    result = run(["drop_terminator"], ["gemini", "ollama"], "google-genai", "ollama")
    assert len(result.results) == 4
    for r in result.results:
        assert r.observation.returned and r.status is Status.FAIL, r.cell.key
        assert r.judgement.label.startswith("UNDETECTED")
