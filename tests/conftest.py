"""Shared test helpers: where the shared corpus lives."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "corpus"
REAL = CORPUS / "real"


def manifest() -> list[dict[str, str]]:
    with (REAL / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def capture(name: str) -> bytes:
    return (REAL / name).read_bytes()


@pytest.fixture(scope="session")
def corpus_manifest() -> list[dict[str, str]]:
    return manifest()
