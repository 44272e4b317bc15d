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


@pytest.fixture(scope="session")
def corpus_manifest() -> list[dict[str, str]]:
    return manifest()
