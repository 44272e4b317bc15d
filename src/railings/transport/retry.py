"""Retries, stamina-style: what is retried is named, bounded twice, and jittered by a formula.

The policy decides *whether and when*; the client decides *what may be retried
at all*: only an attempt that delivered no content (an **Empty** interruption or
an error before any content) is ever resent. Content already shown is billed,
and resending would bill it twice and lose the half turn.

An error is retried when all of these hold:

1. it is an instance of a class in ``on`` (or ``on(error)`` is true), and its
   ``retryable`` flag is set (the flag is per instance: a Partial interruption,
   ``x-should-retry: false`` or a 400 clear it);
2. fewer than ``attempts`` attempts have run (the first attempt counts);
3. the wait ends before ``deadline`` seconds after the first attempt started;
4. a ``retry-after`` the provider sent is no longer than ``max_retry_after``.

The wait before retry *n* (n = 1 for the first retry) is **full jitter**::

    backoff(n) = min(cap, initial * multiplier ** (n - 1))
    wait(n)    = uniform(0, backoff(n))

unless the provider said how long to wait (``retry-after-ms``, ``retry-after``):
then exactly that. ``set_testing(True)`` (or ``with no_waits():``) zeroes every
wait, for test suites.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from railings.errors import (
    ConfigurationError,
    MalformedStream,
    Overloaded,
    ProviderError,
    RailingsError,
    RateLimited,
    ServerError,
    StreamInterrupted,
    TransportError,
)

__all__ = [
    "DEFAULT_ON",
    "Retrier",
    "RetryPolicy",
    "backoff",
    "no_waits",
    "set_testing",
]

DEFAULT_ON: tuple[type[RailingsError], ...] = (
    StreamInterrupted,  # Empty only: a Partial interruption is not retryable
    TransportError,
    RateLimited,
    Overloaded,
    ServerError,
    MalformedStream,  # a stream that broke before any content: resend is free
)

On = tuple[type[RailingsError], ...] | Callable[[RailingsError], bool]

_TESTING = False


def set_testing(on: bool) -> None:
    """Zero every retry wait in this process (for test suites)."""
    global _TESTING
    _TESTING = on


@contextmanager
def no_waits() -> Iterator[None]:
    """``with no_waits():`` zeroes retry waits inside the block (for tests)."""
    before = _TESTING
    set_testing(True)
    try:
        yield
    finally:
        set_testing(before)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently to retry. See the module docstring for the rules."""

    attempts: int = 4
    deadline: float | None = 300.0
    initial: float = 0.5
    multiplier: float = 2.0
    cap: float = 8.0
    max_retry_after: float = 60.0
    on: On = DEFAULT_ON

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigurationError("attempts must be at least 1 (the first attempt counts)")
        if self.initial < 0 or self.cap < 0 or self.multiplier < 1:
            raise ConfigurationError("initial and cap must be >= 0 and multiplier >= 1")

    def retries(self, error: RailingsError) -> bool:
        """Whether ``error`` is of a kind this policy retries (condition 1)."""
        if not error.retryable:
            return False
        if isinstance(self.on, tuple):
            return isinstance(error, self.on)
        return bool(self.on(error))


def backoff(policy: RetryPolicy, n: int, rng: random.Random | None = None) -> float:
    """The full-jitter wait before retry ``n`` (1-based)."""
    ceiling = min(policy.cap, policy.initial * policy.multiplier ** (n - 1))
    return (rng or random).uniform(0.0, ceiling)


class Retrier:
    """Counts the attempts of one turn and decides each wait.

    ``attempt`` is the number of the attempt running now (1-based).
    """

    def __init__(self, policy: RetryPolicy, *, rng: random.Random | None = None) -> None:
        self.policy = policy
        self.attempt = 1
        self._rng = rng
        self._started = time.monotonic()

    def next_wait(self, error: RailingsError) -> float | None:
        """Seconds to wait before the next attempt, or None: do not retry ``error``."""
        policy = self.policy
        if not policy.retries(error) or self.attempt >= policy.attempts:
            return None
        retry_after = error.retry_after if isinstance(error, ProviderError) else None
        if retry_after is not None:
            if retry_after > policy.max_retry_after:
                return None
            wait = max(0.0, retry_after)
        else:
            wait = backoff(policy, self.attempt, self._rng)
        if _TESTING:
            wait = 0.0
        if policy.deadline is not None:
            elapsed = time.monotonic() - self._started
            if elapsed + wait > policy.deadline:
                return None
        return wait

    def advance(self) -> int:
        """Start the next attempt; returns its number."""
        self.attempt += 1
        return self.attempt
