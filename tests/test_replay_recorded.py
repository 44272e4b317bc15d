"""`railings replay --json` gives, on every capture, the report recorded before.

The reference is tests/corpus/replay_recorded.json, written by
tools/record_replay.py. A change to the core that alters any report fails
here; re-record only when the change of a report is intended.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import CORPUS
from tools.record_replay import OUT, cases, replay

RECORDED: dict[str, str] = json.loads(OUT.read_text(encoding="utf-8"))


def test_every_capture_has_a_recorded_report() -> None:
    keys = {f"{path} {' '.join(args)}".strip() for path, args in cases()}
    assert keys == set(RECORDED)
    assert len(keys) >= 3 * 2 * 52


@pytest.mark.parametrize(("path", "args"), cases(), ids=lambda v: str(v))
def test_report_is_byte_identical(path: str, args: tuple[str, ...]) -> None:
    assert (CORPUS / path).is_file()
    assert replay(path, args) == RECORDED[f"{path} {' '.join(args)}".strip()]
