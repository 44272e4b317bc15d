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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "accelerated: asserts what an acceleration does (railings.accelerations); "
        "runs only while the accelerations are on, and is reported skipped otherwise",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Read through the public switch, as RAILINGS_ACCELERATE set it for this run.
    from railings import accelerations

    if accelerations.enabled():
        return
    off = pytest.mark.skip(reason="accelerations are off (RAILINGS_ACCELERATE=0)")
    for item in items:
        if item.get_closest_marker("accelerated") is not None:
            item.add_marker(off)
