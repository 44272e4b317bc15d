"""Every real capture in tests/corpus/real replays to the facts its manifest lists."""

from __future__ import annotations

import csv
import hashlib
import random
import re
from pathlib import Path

import pytest

from conftest import REAL, RESPONSES, manifest
from railings import UsageSource, replay, to_json
from railings.wire.sse import SSEDecoder

ROWS = manifest()


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_capture_replays_to_manifest_facts(row: dict[str, str]) -> None:
    body = (REAL / row["file"]).read_bytes()
    result = replay(body)
    turn = result.turn
    expected_provider = {"openai-chat": "openai", "anthropic-messages": "anthropic"}[
        row["provider"]
    ]
    assert turn.provider == expected_provider

    # Termination: a capture without its proof is never reported complete.
    proof_on_wire = row["terminator"] != "none"
    if not proof_on_wire:
        assert turn.termination.value == "abrupt"
    if row["errors"] != "-":
        assert turn.error is not None and turn.error.kind.value == "provider_error"
    elif proof_on_wire:
        assert turn.termination.value == "clean" and turn.outcome.value == "complete"

    # The wire stop reason of choice 0.
    final = row["final_stop_reason"]
    if final == "none":
        assert turn.stop_reason_wire is None
    else:
        assert turn.stop_reason_wire == final.split(",")[0].split(":")[-1]

    # Tool calls: count, names and argument completeness. Anthropic entries are kind:name.
    count = len(turn.tool_calls) + len(turn.server_tool_calls)
    assert count == int(row["tool_calls"])
    if expected_provider == "openai":
        assert [c.name for c in turn.tool_calls] == (
            [] if not count else row["tool_call_names"].split(";")
        )
    elif count:
        got = [f"tool_use:{c.name}" for c in turn.tool_calls]
        got += [f"{c.kind}:{c.name}" for c in turn.server_tool_calls]
        assert sorted(got) == sorted(row["tool_call_names"].split(";"))
    states = [s for s in row["tool_args_json"].split(";") if s not in ("-", "block_not_stopped")]
    parsed = [(c.arguments, c.raw_arguments, c.closed) for c in turn.tool_calls]
    parsed += [(c.input, c.raw_input, True) for c in turn.server_tool_calls]
    for (arguments, raw, closed), state in zip(parsed, states, strict=True):
        if state == "complete":
            assert arguments is not None
        elif state == "INCOMPLETE":
            assert arguments is None
            assert not closed and "block_not_stopped" in row["tool_args_json"]
        else:
            assert state.startswith("empty")
            assert raw == "{}" and arguments == {}

    # Output tokens: the last reported (cumulative in Anthropic message_delta); a capture
    # that reported none has its output estimated or unknown, and says so.
    usage = turn.usage
    if row["output_tokens"]:
        assert usage.output_source is UsageSource.REPORTED
        assert usage.output_tokens == int(row["output_tokens"])
    else:
        assert usage.output_source is not UsageSource.REPORTED


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_sse_event_count_matches_manifest(row: dict[str, str]) -> None:
    body = (REAL / row["file"]).read_bytes()
    decoder = SSEDecoder()
    events = decoder.feed(body) + decoder.close()
    assert len(events) == int(row["sse_events"])


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_replay_is_chunk_invariant(row: dict[str, str]) -> None:
    body = (REAL / row["file"]).read_bytes()
    whole = to_json(replay(body))
    assert to_json(replay(body, chunk_size=1)) == whole
    rng = random.Random(row["sha256"])
    for size in (2, 3, 7, rng.randint(4, 64), 4096):
        assert to_json(replay(body, chunk_size=size)) == whole


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_truncated_capture_is_never_clean(row: dict[str, str]) -> None:
    """Cut anywhere before the proof, a capture is reported interrupted, never complete."""
    body = (REAL / row["file"]).read_bytes()
    marker = b"data: [DONE]" if row["provider"] == "openai-chat" else b"event: message_stop"
    end = body.rfind(marker)
    if end < 0:
        end = len(body)
    rng = random.Random(row["file"])
    for cut in sorted(
        {0, 1, end // 2, end - 1, *(rng.randrange(0, max(end, 1)) for _ in range(20))}
    ):
        turn = replay(body[:cut]).turn
        assert turn.termination.value == "abrupt", cut
        assert all(v.verdict.value == "reject" for v in replay(body[:cut]).verdicts)


def _rows(directory: Path) -> list[dict[str, str]]:
    with (directory / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def test_every_capture_is_the_recorded_file_and_listed_once() -> None:
    # Provenance: each file is the one whose source, size and hash its manifest records,
    # and no capture sits in the corpus without a manifest row saying where it came from.
    for directory in (REAL, RESPONSES):
        rows = _rows(directory)
        listed = [row["file"] for row in rows]
        assert len(listed) == len(set(listed)), directory
        on_disk = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*.sse"))
        assert sorted(listed) == on_disk, directory
        for row in rows:
            body = (directory / row["file"]).read_bytes()
            assert len(body) == int(row["bytes"]), row["file"]
            assert hashlib.sha256(body).hexdigest() == row["sha256"], row["file"]
            assert row["source_repo"] and row["source_path"], row["file"]
            assert re.fullmatch(r"[0-9a-f]{40}", row["source_commit"]), row["file"]
