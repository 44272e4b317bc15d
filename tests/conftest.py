"""Test helpers: where the repository's corpus of captured streams lives (``tests/corpus``)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "corpus"
REAL = CORPUS / "real"
RESPONSES = CORPUS / "responses"


def manifest() -> list[dict[str, str]]:
    with (REAL / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def capture(name: str) -> bytes:
    return (REAL / name).read_bytes()


# A manifest's ``provider`` column -> the wire's name in railings.
WIRES = {
    "openai-chat": "openai",
    "anthropic-messages": "anthropic",
    "openai-responses": "openai-responses",
    "gemini": "gemini",
    "bedrock": "bedrock",
    "ollama": "ollama",
}


def captures() -> list[tuple[str, str]]:
    """Every response body of the corpus, as (its path under ``tests/corpus``, its wire),
    read from the folders' MANIFEST.tsv (the event-stream frame vectors are not bodies)."""
    found = []
    for listing in sorted(CORPUS.glob("*/MANIFEST.tsv")):
        with listing.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                if row.get("provider") in WIRES:
                    path = (listing.parent / row["file"]).relative_to(CORPUS).as_posix()
                    found.append((path, WIRES[row["provider"]]))
    return found


@pytest.fixture(scope="session")
def corpus_manifest() -> list[dict[str, str]]:
    return manifest()
