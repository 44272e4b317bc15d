"""The next request railings builds after every capture is the one recorded before.

The reference is tests/corpus/next_request_recorded.json, written by
tools/record_next_request.py from the code before the turn became a tuple of
parts: what goes back to each provider (thinking with its signatures, provider-run
blocks in order, Responses output items, calls and their results) must not move.
"""

from __future__ import annotations

import json

import pytest

from tools.record_next_request import ENCODERS, OUT, bodies
from tools.record_replay import captures

RECORDED: dict[str, dict[str, str]] = json.loads(OUT.read_text(encoding="utf-8"))

# The captures of the wires whose requests were recorded before the turn became parts
# (real/ and responses/); the Gemini, Bedrock and Ollama encoders have their own tests.
CASES = [
    (path, provider) for path, provider in captures() if path.startswith(("real/", "responses/"))
]


def test_every_capture_has_a_recorded_request() -> None:
    assert set(RECORDED) == {path for path, _ in CASES}
    assert all(set(v) == set(ENCODERS) for v in RECORDED.values())


@pytest.mark.parametrize(("path", "provider"), CASES, ids=lambda v: str(v))
def test_next_request_is_byte_identical(path: str, provider: str) -> None:
    assert bodies(path, provider) == RECORDED[path]
