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


def runs(kinds: list[str]) -> str:
    """A sequence as the corpus's expectation tables write it: a kind repeated in a row is
    ``kind*N``, a pair repeated in a row ``(a b)*N``."""
    out: list[str] = []
    i = 0
    while i < len(kinds):
        for width in (1, 2):
            unit = kinds[i : i + width]
            n = 1
            while len(unit) == width and kinds[i + n * width : i + (n + 1) * width] == unit:
                n += 1
            if n > 1:
                out.append(f"{unit[0]}*{n}" if width == 1 else f"({' '.join(unit)})*{n}")
                i += n * width
                break
        else:
            out.append(kinds[i])
            i += 1
    return " ".join(out)


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
