"""`railings replay --json` gives, on every capture, the report recorded before.

The reference is tests/corpus/replay_recorded.json, written by
tools/record_replay.py. A change to the core that alters any report fails
here; re-record only when the change of a report is intended.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.conftest import CORPUS
from tools.record_replay import OUT, cases, replay

RECORDED: dict[str, str] = json.loads(OUT.read_text(encoding="utf-8"))


# The 312 reports recorded before Gemini, Bedrock and Ollama were read (every capture of
# real/ and responses/): their digest, so that recording the new formats' reports could
# only add keys. A change to any old report fails here, whatever the file now says.
# Re-recorded once on purpose: with ``--max-tokens 16``, billed output past the limit now
# truncates the turn whatever its stop reason (docs/verdicts.md, usage at the cap).
OLD_FOLDERS = ("real/", "responses/")
OLD_REPORTS = 312
OLD_DIGEST = "0d71296b45aa6cdb92ae666e84084d58d5429980be6af2031a05f3de8356c798"


def test_the_reports_recorded_before_the_new_formats_are_unchanged() -> None:
    old = {k: v for k, v in RECORDED.items() if k.startswith(OLD_FOLDERS)}
    assert len(old) == OLD_REPORTS
    canonical = json.dumps(old, sort_keys=True, ensure_ascii=False).encode()
    assert hashlib.sha256(canonical).hexdigest() == OLD_DIGEST


def test_every_capture_has_a_recorded_report() -> None:
    keys = {f"{path} {' '.join(args)}".strip() for path, args in cases()}
    assert keys == set(RECORDED)
    assert len(keys) >= 3 * 2 * 52


@pytest.mark.parametrize(("path", "args"), cases(), ids=lambda v: str(v))
def test_report_is_byte_identical(path: str, args: tuple[str, ...]) -> None:
    assert (CORPUS / path).is_file()
    assert replay(path, args) == RECORDED[f"{path} {' '.join(args)}".strip()]
