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
then exactly that (for a :class:`~railings.errors.ResumeFailed`, what the request that
read the kept response again was told). The testing switch zeroes every wait, for test
suites: a ``Retrier(zero_waits=True)``, or, for retriers that do not say, the switch of
the default client context (``set_testing(True)`` or ``with no_waits():``, kept here
under their old names; see :mod:`.context`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from railings.errors import (
    ConfigurationError,
    MalformedStream,
    Overloaded,
    ProviderError,
    RailingsError,
    RateLimited,
    ResumeFailed,
    ServerError,
    StreamInterrupted,
    TransportError,
)
from railings.transport.context import DEFAULT_CONTEXT, no_waits, set_testing

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

    ``attempt`` is the number of the attempt running now (1-based). ``zero_waits``
    is the testing switch (None: the default client context's); ``clock`` is read
    for the deadline, and only for it.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        rng: random.Random | None = None,
        zero_waits: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy
        self.attempt = 1
        self._rng = rng
        self._zero_waits = zero_waits
        self._clock = clock
        self._started = clock()

    def next_wait(self, error: RailingsError) -> float | None:
        """Seconds to wait before the next attempt, or None: do not retry ``error``."""
        if not self.policy.retries(error):
            return None
        return self._wait(error)

    def resume_wait(self, error: RailingsError) -> float | None:
        """Seconds to wait before reading a kept response again after ``error``, or None:
        the attempts or the deadline are spent, or the provider asked for a longer wait
        than ``max_retry_after``. Any break may be resumed (nothing is generated twice),
        so only conditions 2 to 4 apply."""
        return self._wait(error)

    def _wait(self, error: RailingsError) -> float | None:
        """Conditions 2 to 4, and the wait: the provider's, else the backoff's."""
        policy = self.policy
        if self.attempt >= policy.attempts:
            return None
        retry_after = _retry_after(error)
        if retry_after is not None:
            if retry_after > policy.max_retry_after:
                return None
            wait = max(0.0, retry_after)
        else:
            wait = backoff(policy, self.attempt, self._rng)
        zero = DEFAULT_CONTEXT.zero_waits if self._zero_waits is None else self._zero_waits
        if zero:
            wait = 0.0
        if policy.deadline is not None:
            elapsed = self._clock() - self._started
            if elapsed + wait > policy.deadline:
                return None
        return wait

    def advance(self) -> int:
        """Start the next attempt; returns its number."""
        self.attempt += 1
        return self.attempt


def _retry_after(error: RailingsError) -> float | None:
    """How long the provider said to wait: on ``error``, or, when reading a kept response
    again failed, on the answer to that request (the :class:`ResumeFailed`'s cause)."""
    if isinstance(error, ResumeFailed):
        cause = error.__cause__
        return cause.retry_after if isinstance(cause, ProviderError) else None
    return error.retry_after if isinstance(error, ProviderError) else None
