"""Every Gemini, Bedrock and Ollama capture replays to its manifest facts, detected or
named, and the report is byte-identical whatever the chunk size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import CORPUS
from railings.replay import replay, to_json
from railings.turn.model import Termination, UsageSource

FOLDERS = ("gemini", "bedrock", "ollama")


def rows() -> list[tuple[str, dict[str, str]]]:
    out = []
    for folder in FOLDERS:
        lines = (CORPUS / folder / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
        header = lines[0].split("\t")
        for line in lines[1:]:
            row = dict(zip(header, line.split("\t"), strict=True))
            out.append((folder, row))
    return out


ROWS = rows()


def _none(value: str) -> str | None:
    return None if value in ("none", "-", "") else value


@pytest.mark.parametrize(("folder", "row"), ROWS, ids=[r["file"] for _, r in ROWS])
def test_each_capture_replays_to_its_manifest_facts(folder: str, row: dict[str, str]) -> None:
    body = (CORPUS / folder / row["file"]).read_bytes()
    for provider in ("auto", folder):
        result = replay(body, provider=provider)
        turn = result.turn
        assert turn.provider == folder, (provider, row["file"])
        proven = _none(row["terminator"]) is not None
        assert (turn.termination is Termination.CLEAN) == proven, row["file"]
        assert turn.stop_reason_wire == _none(row["final_stop_reason"]), row["file"]
        assert len(turn.tool_calls) == int(row["tool_calls"]), row["file"]
        names = _none(row["tool_call_names"])
        assert [c.name for c in turn.tool_calls] == (names.split(";") if names else [])
        tokens = _none(row["output_tokens"])
        reported = turn.usage.output_source is UsageSource.REPORTED
        got = turn.usage.output_tokens if reported else None
        assert got == (None if tokens is None else int(tokens)), row["file"]
        errors = _none(row["errors"])
        assert (turn.error.provider_type if turn.error else None) == errors or (
            errors is None and turn.error is None
        ), row["file"]


@pytest.mark.parametrize(("folder", "row"), ROWS, ids=[r["file"] for _, r in ROWS])
def test_the_report_is_the_same_whatever_the_chunk_size(folder: str, row: dict[str, str]) -> None:
    body = (CORPUS / folder / row["file"]).read_bytes()
    whole = json.dumps(to_json(replay(body)))
    for size in (1, 7, 64, 1000):
        assert json.dumps(to_json(replay(body, chunk_size=size))) == whole, size
        named = replay(body, provider=folder, chunk_size=size)
        assert json.dumps(to_json(named)) == whole, size


def test_every_folder_is_read() -> None:
    assert {folder for folder, _ in ROWS} == set(FOLDERS)
    assert all(Path(CORPUS / f / r["file"]).is_file() for f, r in ROWS)
