"""Attacks on the sans-IO Attempt's clocks and holding, run on the plain and the
accelerated reader alike."""

from __future__ import annotations

import pytest

from railings import accelerations
from railings.turn.attempt import Attempt, Clocks
from railings.turn.ending import Empty

ROLE = (
    b'data: {"id":"a","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":""}}]}\n\n'
)
# A usage report of nothing billed: no output, so it is no content (the Empty table).
NOTHING_BILLED = (
    b'data: {"id":"a","object":"chat.completion.chunk","choices":[],'
    b'"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}}\n\n'
)


@pytest.mark.parametrize("accelerated", [True, False], ids=["accelerated", "plain"])
def test_attack_reports_of_nothing_billed_do_not_hold_off_the_content_clock(
    accelerated: bool,
) -> None:
    with accelerations.override(accelerated):
        attempt = Attempt("openai", now=0.0, clocks=Clocks(first_content=10.0))
        attempt.feed(ROLE, 0.0)
        for second in range(1, 60, 3):
            attempt.feed(NOTHING_BILLED, float(second))
        assert not attempt.content
        # A minute with nothing billable: the first-content clock ran out long ago.
        assert attempt.overdue(60.0)
        attempt.timed_out(60.0)
        assert isinstance(attempt.close(), Empty)
