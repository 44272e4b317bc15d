"""Retry policy, full-jitter formula, the testing switch, and the retry banner."""

from __future__ import annotations

import asyncio
import random
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from railings.errors import (
    AuthenticationError,
    ConnectError,
    Overloaded,
    RateLimited,
    StreamInterrupted,
)
from railings.transport import (
    BannerState,
    RetryBanner,
    RetryPolicy,
    backoff,
    no_waits,
    set_testing,
)
from railings.transport.banner import countdown
from railings.transport.retry import Retrier


@given(st.integers(min_value=1, max_value=40), st.integers(min_value=0, max_value=2**32))
def test_full_jitter_stays_under_the_capped_exponential(n: int, seed: int) -> None:
    policy = RetryPolicy(initial=0.5, multiplier=2.0, cap=8.0)
    wait = backoff(policy, n, random.Random(seed))
    assert 0.0 <= wait <= min(8.0, 0.5 * 2.0 ** (n - 1))


def test_full_jitter_spreads_over_the_whole_range() -> None:
    rng = random.Random(1)
    waits = [backoff(RetryPolicy(initial=1.0, cap=100.0), 3, rng) for _ in range(2000)]
    assert min(waits) < 0.2 and max(waits) > 3.8  # uniform(0, 4)


def test_attempts_bound_the_retries() -> None:
    retrier = Retrier(RetryPolicy(attempts=3), rng=random.Random(0))
    error = StreamInterrupted("cut", empty=True)
    assert retrier.next_wait(error) is not None
    retrier.advance()
    assert retrier.next_wait(error) is not None
    retrier.advance()
    assert retrier.attempt == 3 and retrier.next_wait(error) is None


def test_only_named_and_retryable_errors_are_retried() -> None:
    retrier = Retrier(RetryPolicy())
    assert retrier.next_wait(StreamInterrupted("partial", empty=False)) is None
    assert retrier.next_wait(AuthenticationError("no", status=401)) is None
    assert retrier.next_wait(ConnectError("refused")) is not None
    only_overload = Retrier(RetryPolicy(on=(Overloaded,)))
    assert only_overload.next_wait(ConnectError("refused")) is None
    assert only_overload.next_wait(Overloaded("busy", status=529)) is not None
    predicate = Retrier(RetryPolicy(on=lambda e: "busy" in e.message))
    assert predicate.next_wait(Overloaded("busy", status=529)) is not None
    assert predicate.next_wait(Overloaded("gone", status=529)) is None


def test_retry_after_is_honoured_exactly_and_bounded() -> None:
    retrier = Retrier(RetryPolicy(max_retry_after=10))
    assert retrier.next_wait(RateLimited("slow", status=429, retry_after=2.5)) == 2.5
    assert retrier.next_wait(RateLimited("slow", status=429, retry_after=11)) is None


def test_deadline_bounds_the_retries() -> None:
    retrier = Retrier(RetryPolicy(deadline=1.0, initial=0, cap=0))
    assert retrier.next_wait(ConnectError("x")) == 0.0
    assert retrier.next_wait(RateLimited("x", status=429, retry_after=5)) is None


def test_testing_switch_zeroes_waits() -> None:
    error = RateLimited("slow", status=429, retry_after=30)
    with no_waits():
        assert Retrier(RetryPolicy()).next_wait(error) == 0.0
    assert Retrier(RetryPolicy()).next_wait(error) == 30.0
    set_testing(True)
    try:
        assert Retrier(RetryPolicy()).next_wait(ConnectError("x")) == 0.0
    finally:
        set_testing(False)


def test_bad_policies_are_refused() -> None:
    from railings.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        RetryPolicy(attempts=0)
    with pytest.raises(ConfigurationError):
        RetryPolicy(multiplier=0.5)


# -- the banner ---------------------------------------------------------------------------


def test_countdown_publishes_every_second_then_clears() -> None:
    banner = RetryBanner()
    states: list[BannerState | None] = []
    banner.subscribe(states.append)
    started = time.monotonic()
    asyncio.run(
        countdown(1.2, attempt=2, attempts=5, reason="overloaded", background=False, banner=banner)
    )
    assert time.monotonic() - started >= 1.15  # the countdown waited; how long past it is load
    shown = [s for s in states if s is not None]
    assert [s.seconds for s in shown] == [2, 1, 0]
    assert all((s.attempt, s.attempts, s.reason) == (2, 5, "overloaded") for s in shown)
    assert str(shown[0]) == "retry 2/5 in 2 s: overloaded"
    assert states[-1] is None and banner.state is None


def test_background_work_never_touches_the_banner() -> None:
    banner = RetryBanner()
    states: list[BannerState | None] = []
    banner.subscribe(states.append)
    asyncio.run(countdown(0.01, attempt=2, attempts=3, reason="x", background=True, banner=banner))
    assert states == [] and banner.state is None


def test_clear_leaves_a_newer_retry_alone() -> None:
    banner = RetryBanner()
    first, second = object(), object()
    banner.publish(BannerState(2, 3, 1, "a", 0.0), first)
    banner.publish(BannerState(2, 3, 4, "b", 0.0), second)
    banner.clear(first)
    assert banner.state is not None and banner.state.reason == "b"
    banner.clear(second)
    assert banner.state is None


def test_unsubscribe() -> None:
    banner = RetryBanner()
    seen: list[BannerState | None] = []
    unsubscribe = banner.subscribe(seen.append)
    unsubscribe()
    unsubscribe()
    banner.publish(BannerState(1, 1, 0, "x", 0.0), object())
    assert seen == []
