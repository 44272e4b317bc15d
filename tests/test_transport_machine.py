"""The attempt machine alone: every outcome -> its decision, with no socket and no clock.

Each test feeds :class:`AttemptMachine` the outcomes a client would report and
checks the answers: the retry budget, the provider's retry-after, the full-jitter
bounds, the HTTP/2 -> HTTP/1.1 replay and the ``stream_options`` resend (each
once), a Partial never resent, an Empty resent. The deadline reads a fake clock.
"""

from __future__ import annotations

import random

import httpx2
import pytest

from _server import openai_text
from railings.errors import (
    AuthenticationError,
    BadRequest,
    ConfigurationError,
    ConnectError,
    PoolTimeout,
    RateLimited,
    ServerError,
    StreamInterrupted,
    TransportError,
)
from railings.transport.machine import (
    AttemptMachine,
    Complete,
    Empty,
    Finish,
    Partial,
    Raise,
    ReplayOverHTTP1,
    ResendWithoutUsage,
    Retry,
)
from railings.transport.retry import RetryPolicy
from railings.turn.model import Outcome, Turn
from railings.turn.reader import StreamReader


def turn_of(chunks: list[bytes]) -> Turn:
    reader = StreamReader("openai")
    for chunk in chunks:
        reader.feed(chunk)
    reader.close()
    return reader.turn()


COMPLETE = turn_of(openai_text(["done"]))
PARTIAL = turn_of(openai_text(["half"], finish=None, done=False))
EMPTY = StreamInterrupted("stream interrupted", empty=True)
GOAWAY = TransportError("connection failed: <ConnectionTerminated error_code:1>")
# As the boundary maps it: the h2 failure is the foreign exception under railings' error.
GOAWAY.__cause__ = httpx2.RemoteProtocolError("<ConnectionTerminated error_code:1>")
NO_OPTIONS = BadRequest("HTTP 400: Unrecognized request argument: stream_options", status=400)


def machine(**kwargs: object) -> AttemptMachine:
    kwargs.setdefault("rng", random.Random(7))
    return AttemptMachine(RetryPolicy(), **kwargs)  # type: ignore[arg-type]


def test_fixtures_have_the_outcomes_they_are_named_for() -> None:
    assert COMPLETE.outcome is Outcome.COMPLETE and PARTIAL.outcome is Outcome.PARTIAL


def test_complete_finishes_with_the_turn() -> None:
    m = machine()
    decision = m.decide(Complete(turn=COMPLETE))
    assert decision == Finish(turn=COMPLETE) and m.result == decision
    assert m.attempt == 1 and m.retries == []


def test_partial_is_the_result_and_never_resent() -> None:
    interruption = StreamInterrupted("stream interrupted: reset", empty=False, turn=PARTIAL)
    m = machine()
    decision = m.decide(Partial(turn=PARTIAL, interruption=interruption))
    assert decision == Finish(turn=PARTIAL, interruption=interruption)
    assert m.retries == [] and m.attempt == 1


def test_partial_is_raised_when_configured_and_still_the_result() -> None:
    interruption = StreamInterrupted("stream interrupted", empty=False, turn=PARTIAL)
    m = machine(raise_on_partial=True)
    assert m.decide(Partial(turn=PARTIAL, interruption=interruption)) == Raise(error=interruption)
    assert m.result == Finish(turn=PARTIAL, interruption=interruption)


def test_a_partial_over_http2_reports_the_protocol_failure_but_is_not_replayed() -> None:
    interruption = StreamInterrupted("stream interrupted", empty=False, turn=PARTIAL)
    interruption.__cause__ = GOAWAY
    decision = machine().decide(Partial(turn=PARTIAL, interruption=interruption, over_http2=True))
    assert isinstance(decision, Finish) and decision.http2_failure == "connectionterminated"


def test_empty_is_resent_as_the_next_attempt() -> None:
    m = machine()
    decision = m.decide(Empty(error=EMPTY))
    assert isinstance(decision, Retry)
    assert decision.attempt == 2 and decision.attempts == 4 and decision.reason == EMPTY.message
    assert m.attempt == 1  # until the next attempt begins
    m.begin()
    assert m.attempt == 2
    (record,) = m.retries
    assert record.attempt == 1 and record.error is EMPTY and not record.replay
    assert record.wait == decision.wait


def test_the_retry_budget_counts_the_first_attempt() -> None:
    m = AttemptMachine(RetryPolicy(attempts=3), zero_waits=True)
    answers = []
    for _ in range(3):
        m.begin()
        answers.append(type(m.decide(Empty(error=EMPTY))))
    assert answers == [Retry, Retry, Raise] and m.attempt == 3 and len(m.retries) == 2


def test_a_final_error_is_raised_at_once() -> None:
    for error in (
        AuthenticationError("HTTP 401", status=401),
        StreamInterrupted("cut after content", empty=False),
        ServerError("HTTP 500", status=500, retryable=False),  # x-should-retry: false
    ):
        m = machine()
        assert m.decide(Empty(error=error)) == Raise(error=error)
        assert m.retries == []


def test_a_local_error_is_raised_even_when_it_looks_like_http2() -> None:
    for error in (ConfigurationError("bad url: http2 preface"), PoolTimeout("pool full")):
        assert machine().decide(Empty(error=error, over_http2=True)) == Raise(error=error)


def test_retry_after_is_honoured_exactly() -> None:
    limited = RateLimited("HTTP 429", status=429, retry_after=2.5)
    decision = machine().decide(Empty(error=limited))
    assert isinstance(decision, Retry) and decision.wait == 2.5


def test_retry_after_longer_than_allowed_is_not_waited_for() -> None:
    limited = RateLimited("HTTP 429", status=429, retry_after=61)
    assert machine().decide(Empty(error=limited)) == Raise(error=limited)


@pytest.mark.parametrize("seed", range(20))
def test_backoff_stays_within_the_full_jitter_bounds(seed: int) -> None:
    policy = RetryPolicy(attempts=6, initial=0.5, multiplier=2.0, cap=3.0, deadline=None)
    m = AttemptMachine(policy, rng=random.Random(seed))
    for n in range(1, 6):
        m.begin()
        decision = m.decide(Empty(error=ServerError("HTTP 502", status=502)))
        assert isinstance(decision, Retry)
        assert 0.0 <= decision.wait <= min(3.0, 0.5 * 2.0 ** (n - 1))


def test_the_testing_switch_zeroes_even_a_retry_after() -> None:
    limited = RateLimited("HTTP 429", status=429, retry_after=30)
    decision = machine(zero_waits=True).decide(Empty(error=limited))
    assert isinstance(decision, Retry) and decision.wait == 0.0


def test_the_deadline_reads_the_clock_it_is_given() -> None:
    now = [100.0]
    m = AttemptMachine(
        RetryPolicy(deadline=10.0, initial=0.0, cap=0.0), clock=lambda: now[0], zero_waits=False
    )
    assert isinstance(m.decide(Empty(error=ConnectError("refused"))), Retry)
    m.begin()
    now[0] = 109.0
    limited = RateLimited("HTTP 429", status=429, retry_after=2.0)  # 109 + 2 > 100 + 10
    assert m.decide(Empty(error=limited)) == Raise(error=limited)


def test_http2_failure_is_replayed_over_http11_once_and_free() -> None:
    m = machine()
    first = m.decide(Empty(error=GOAWAY, over_http2=True))
    assert first == ReplayOverHTTP1(http2_failure="connectionterminated")
    m.begin()
    assert m.attempt == 1  # the replay is not an attempt
    second = m.decide(Empty(error=GOAWAY, over_http2=True))
    assert isinstance(second, Retry) and second.http2_failure == "connectionterminated"
    assert [r.replay for r in m.retries] == [True, False]


def test_no_replay_when_the_attempt_cannot_have_been_http2() -> None:
    decision = machine().decide(Empty(error=GOAWAY, over_http2=False))
    assert isinstance(decision, Retry) and decision.http2_failure is None


def test_a_refused_stream_options_is_resent_without_it_once() -> None:
    m = machine(drop_usage=True)
    assert m.decide(Empty(error=NO_OPTIONS)) == ResendWithoutUsage()
    m.begin()
    assert m.attempt == 1 and m.retries[0].replay
    assert m.decide(Empty(error=NO_OPTIONS)) == Raise(error=NO_OPTIONS)


def test_stream_options_kept_when_the_config_asked_for_them() -> None:
    assert machine(drop_usage=False).decide(Empty(error=NO_OPTIONS)) == Raise(error=NO_OPTIONS)


def test_http_version_is_what_the_client_reported() -> None:
    m = machine()
    assert m.http_version is None
    m.responded("HTTP/2")
    assert m.http_version == "HTTP/2"
