"""The one sans-IO attempt: hold until content, the clocks as deadlines, the bounds, the ending.

Every shell (the client, the guard, the gateway, ``replay``) asks this object; these
tests drive it with no socket and a clock the test chooses."""

from __future__ import annotations

import json

import pytest

from railings.errors import IdleTimeout, StreamInterrupted, TotalTimeout, TurnTooLarge
from railings.events import TextDelta
from railings.limits import TurnLimits
from railings.turn.attempt import Attempt, Clocks
from railings.turn.ending import Complete, Cut, Empty, Partial


def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n".encode()


ROLE = chunk({"role": "assistant"})
HELLO = chunk({"content": "Hello"})
STOP = chunk({}, "stop")
DONE = b"data: [DONE]\n\n"
KEEPALIVE = b": keep-alive\n\n"


def openai(**kwargs: object) -> Attempt:
    return Attempt("openai", **kwargs)  # type: ignore[arg-type]


def test_events_before_content_are_held_and_leave_with_the_first_content() -> None:
    attempt = openai()
    held = attempt.feed(ROLE, 0.0)
    assert (held.events, held.release, held.done) == ([], 0, False)
    assert attempt.holding and not attempt.released
    step = attempt.feed(HELLO, 0.0)
    assert len(step.events) == 2 and isinstance(step.events[1], TextDelta)
    assert step.release == len(ROLE) + len(HELLO)
    assert attempt.released and not attempt.holding
    assert attempt.feed(STOP + DONE, 0.0).done
    result = attempt.close()
    assert isinstance(result, Complete) and result.turn.text == "Hello"


def test_a_stream_that_stops_before_content_is_empty_and_showed_nothing() -> None:
    attempt = openai()
    assert attempt.feed(ROLE, 0.0).events == []
    result = attempt.close()
    assert isinstance(result, Empty)
    assert isinstance(result.error, StreamInterrupted) and result.error.empty
    assert not attempt.released


def test_a_stream_that_stops_after_content_is_partial_and_never_empty() -> None:
    attempt = openai()
    attempt.feed(ROLE + HELLO, 0.0)
    attempt.broke(Cut("the connection broke"))
    result = attempt.close()
    assert isinstance(result, Partial) and result.turn.text == "Hello"
    assert not result.interruption.empty


def test_a_proven_answer_without_content_releases_its_events_with_the_proof() -> None:
    attempt = openai()
    step = attempt.feed(ROLE + STOP + DONE, 0.0)
    assert step.done and step.events and step.release == len(ROLE + STOP + DONE)
    assert isinstance(attempt.close(), Complete)


def test_a_preamble_past_its_bound_is_released_and_the_attempt_is_committed() -> None:
    attempt = openai(max_preamble=len(ROLE) + 1)
    assert attempt.feed(ROLE, 0.0).release == 0
    step = attempt.feed(ROLE, 0.0)
    assert step.release == 2 * len(ROLE) and attempt.released
    assert isinstance(attempt.close(), Empty)  # nothing billable: the shell must not resend


def test_the_gap_bounds_a_read_from_when_it_starts() -> None:
    attempt = openai(clocks=Clocks(first_byte=30.0, idle=2.0))
    assert attempt.read_timeout(0.0) == 30.0
    attempt.feed(ROLE + HELLO, 1.0)
    assert attempt.read_timeout(5.0) == 2.0  # measured from the read, not the last byte
    attempt.timed_out(7.0)
    result = attempt.close()
    assert isinstance(result, Partial)
    assert isinstance(result.interruption, IdleTimeout)
    assert result.interruption.idle_seconds == 2.0


def test_keepalives_do_not_move_the_content_clock() -> None:
    attempt = openai(clocks=Clocks(idle=10.0, content_idle=5.0))
    attempt.feed(ROLE + HELLO, 1.0)
    for now in (2.0, 3.0, 4.0, 5.0):
        assert not attempt.feed(KEEPALIVE, now).done
        assert not attempt.overdue(now)
    assert attempt.read_timeout(5.0) == pytest.approx(1.0)  # due at 1 + 5, not 5 + 10
    assert attempt.overdue(6.5)
    attempt.timed_out(6.5)
    assert not attempt.reads_on
    result = attempt.close()
    assert isinstance(result, Partial) and isinstance(result.interruption, IdleTimeout)
    assert "keep-alive" in result.interruption.message or "content" in result.interruption.message


def test_content_moves_the_content_clock() -> None:
    attempt = openai(clocks=Clocks(content_idle=5.0))
    attempt.feed(ROLE + HELLO, 1.0)
    attempt.feed(HELLO, 4.0)
    assert attempt.read_timeout(4.0) == pytest.approx(5.0)
    assert not attempt.overdue(8.0)


def test_the_gap_alone_is_never_overdue_for_a_shell_that_sees_only_arrivals() -> None:
    # The guard's socket enforces the gap; overdue() answers for the other clocks only.
    attempt = openai(clocks=Clocks(first_byte=1.0, idle=1.0))
    attempt.feed(ROLE + HELLO, 0.0)
    assert not attempt.overdue(100.0)


def test_the_deadline_wins_a_tie_and_is_a_total_timeout() -> None:
    attempt = openai(clocks=Clocks(first_byte=5.0, first_content=5.0, deadline=5.0, total=5.0))
    assert attempt.read_timeout(0.0) == 5.0
    attempt.timed_out(5.0)
    result = attempt.close()
    assert isinstance(result, Empty) and isinstance(result.error, TotalTimeout)


def test_before_content_the_first_content_clock_names_the_silence() -> None:
    attempt = openai(clocks=Clocks(first_byte=30.0, first_content=30.0))
    attempt.feed(ROLE, 0.0)
    attempt.read_timeout(0.0)
    attempt.timed_out(30.0)
    result = attempt.close()
    assert isinstance(result, Empty) and isinstance(result.error, IdleTimeout)
    assert result.error.empty


def test_a_bound_ends_the_turn_where_it_is_passed_and_is_never_resent() -> None:
    attempt = openai(limits=TurnLimits(bytes=len(ROLE + HELLO) + 10))
    assert not attempt.feed(ROLE + HELLO, 0.0).done
    step = attempt.feed(HELLO * 3, 0.0)
    assert step.done and isinstance(attempt.failure, TurnTooLarge)
    result = attempt.close()
    assert isinstance(result, Partial)
    assert result.turn.error is not None and not result.turn.error.retryable


def test_a_bound_before_content_is_an_empty_attempt_with_the_bound_error() -> None:
    attempt = openai(limits=TurnLimits(bytes=len(ROLE)))
    assert attempt.feed(ROLE + KEEPALIVE, 0.0).done
    result = attempt.close()
    assert isinstance(result, Empty) and isinstance(result.error, TurnTooLarge)


def test_the_first_failure_stands() -> None:
    attempt = openai(clocks=Clocks(idle=1.0))
    attempt.feed(ROLE + HELLO, 0.0)
    attempt.broke(Cut("first"))
    attempt.timed_out(5.0)
    attempt.broke(Cut("second"))
    result = attempt.close()
    assert isinstance(result, Partial) and "first" in result.interruption.message


def test_kept_bytes_are_bounded_by_keep() -> None:
    attempt = openai(keep=10)
    attempt.feed(ROLE + HELLO, 0.0)
    attempt.broke(Cut("cut"))
    result = attempt.close()
    assert isinstance(result, Partial) and result.interruption.received == (ROLE + HELLO)[:10]


@pytest.mark.parametrize("size", [1, 7, 64, 10_000])
def test_the_ending_is_the_same_however_the_body_is_split(size: int) -> None:
    body = ROLE + HELLO + KEEPALIVE + HELLO + STOP + DONE
    for cut in range(len(body) + 1):
        attempt = openai()
        events = 0
        for at in range(0, cut, size):
            events += len(attempt.feed(body[at : min(at + size, cut)], 0.0).events)
        result = attempt.close()
        whole = openai()
        whole.feed(body[:cut], 0.0)
        expected = whole.close()
        assert type(result) is type(expected), cut
        if not isinstance(result, Empty):
            assert result.turn.text == expected.turn.text  # type: ignore[union-attr]
