"""The attempt loop, sans-IO: each attempt's outcome in, what to do next out.

Theory of operation. The client (:mod:`.client`) sends a request, reads the
body and tells :class:`AttemptMachine` how the attempt ended, as one of three
outcomes; the machine answers with one decision, and the client carries it out.
No socket, clock or sleep is touched here (the retry deadline reads the clock
it is given), so every rule below is tested without a network, in microseconds,
like httpx's ``auth_flow`` generator or h11's state tables::

    outcome                                   decision
    ---------------------------------------   -----------------------------------------
    Partial or Empty with a resume point      Resume(point, wait)  (within the attempts)
    Complete(turn)                            Finish(turn)
    Partial(turn, interruption)               Finish(turn, interruption), or
                                              Raise(interruption) with raise_on_partial
    Empty(error), a local error               Raise(error)
    Empty(error), HTTP/2 failure, first time  ReplayOverHTTP1      (free: no attempt)
    Empty(BadRequest naming stream_options)   ResendWithoutUsage   (free, once)
    Empty(error), the retry policy allows     Retry(wait)          (the next attempt)
    Empty(error), otherwise                   Raise(error)

Rules, in the order they are applied:

0. An attempt whose response the provider keeps and whose stream broke carries a
   resume point (:mod:`railings.turn.resume` decides): it is **resumed**, the same
   generation read again from after its last whole event, while the policy's attempts
   and deadline allow (a resume counts as an attempt and waits as a retry would).
   Nothing is generated twice, so this holds for a Partial too. When they are spent,
   or the server refused, the rules below apply, and a resend of an Empty attempt
   first cancels the kept response (``Retry.cancel``, ``ReplayOverHTTP1.cancel``): it
   would be paid for twice. That holds too for a kept response with no point to resume
   from (its first event came without a number): the shell names it (``kept``).
1. A **Partial** is never resent: its content reached the caller and is billed.
   It is the turn's result (marked interrupted), or raised when configured.
2. A local error (:class:`~railings.errors.LocalError`: misuse, configuration)
   is raised at once: neither a replay nor a retry can cure it.
3. An HTTP/2 protocol failure (:func:`~.fallback.http2_failure` finds a marker
   in the error's chain) of an attempt that may have run over HTTP/2 is
   reported on the decision (``http2_failure``: the client's later requests go
   over HTTP/1.1), and the first one in a turn is replayed over HTTP/1.1.
4. A Chat Completions endpoint that refuses ``stream_options`` gets the request
   once more without it (only when the config left ``include_usage`` unset).
5. Otherwise the :class:`~.retry.Retrier` decides: a retry, with its wait, or
   the error raised.

Decisions after an Empty attempt add a :class:`~.stream.RetryRecord` to
:attr:`AttemptMachine.retries`, so a stream says what it went through.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from railings.errors import BadRequest, LocalError, RailingsError, StreamInterrupted
from railings.transport.fallback import http2_failure
from railings.transport.retry import Retrier, RetryPolicy
from railings.transport.stream import RetryRecord
from railings.turn.ending import AttemptOutcome, Complete, Empty, Partial
from railings.turn.model import Turn
from railings.turn.resume import ResumePoint

__all__ = [
    "AttemptMachine",
    "AttemptOutcome",
    "Complete",
    "Decision",
    "Empty",
    "Finish",
    "Partial",
    "Raise",
    "ReplayOverHTTP1",
    "ResendWithoutUsage",
    "Resume",
    "Retry",
]


# -- what the machine answers --------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Finish:
    """The turn is over: ``turn`` is its result (``interruption`` set for a Partial)."""

    turn: Turn
    interruption: StreamInterrupted | None = None
    http2_failure: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Retry:
    """Send the request again after ``wait`` seconds, as attempt ``attempt`` of
    ``attempts``; ``reason`` is what the retry banner shows."""

    wait: float
    attempt: int
    attempts: int
    reason: str
    http2_failure: str | None = None
    cancel: str | None = None  # the id of a kept response to cancel before the resend


@dataclass(frozen=True, slots=True, kw_only=True)
class Resume:
    """Read the kept response again from ``point`` after ``wait`` seconds, as attempt
    ``attempt`` of ``attempts``; ``reason`` is what broke the stream."""

    point: ResumePoint
    wait: float
    attempt: int
    attempts: int
    reason: str
    http2_failure: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayOverHTTP1:
    """Send the request again at once over HTTP/1.1 (free: not a retry attempt)."""

    http2_failure: str | None = None
    cancel: str | None = None  # the id of a kept response to cancel before the resend


@dataclass(frozen=True, slots=True, kw_only=True)
class ResendWithoutUsage:
    """Send the request again at once without ``stream_options`` (free, once per turn)."""

    http2_failure: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Raise:
    """Give up: raise ``error`` (for a Partial, the turn is still :attr:`AttemptMachine.result`)."""

    error: RailingsError
    http2_failure: str | None = None


Decision = Finish | Retry | Resume | ReplayOverHTTP1 | ResendWithoutUsage | Raise


class AttemptMachine:
    """One turn's attempts: feed each outcome to :meth:`decide`, do what it answers.

    ``drop_usage``: the request carries ``stream_options`` that the config did not ask
    for explicitly, so a refusal of it may be answered by :class:`ResendWithoutUsage`.
    ``zero_waits`` (the testing switch) and ``rng`` and ``clock`` go to the
    :class:`~.retry.Retrier`.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        raise_on_partial: bool = False,
        drop_usage: bool = False,
        zero_waits: bool = False,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._retrier = Retrier(policy, rng=rng, zero_waits=zero_waits, clock=clock)
        self._raise_on_partial = raise_on_partial
        self._drop_usage = drop_usage
        self._replayed = False
        self._advance = False
        self._kept: str | None = None  # the id of a response the provider keeps
        self.retries: list[RetryRecord] = []
        self.result: Finish | None = None
        self.http_version: str | None = None

    @property
    def attempt(self) -> int:
        """The number of the attempt running or last run (1-based; replays do not count)."""
        return self._retrier.attempt

    def begin(self) -> None:
        """An attempt starts now: after a :class:`Retry`, it is the next one."""
        if self._advance:
            self._advance = False
            self._retrier.advance()

    def responded(self, http_version: str) -> None:
        """The attempt running now got its response headers, over ``http_version``."""
        self.http_version = http_version

    def decide(self, outcome: AttemptOutcome, *, kept: str | None = None) -> Decision:
        """What to do after an attempt ended with ``outcome`` (the rules of the module
        docstring, in order). ``kept``: the id of the response the attempt asked the
        provider to keep, when it is known (a resend cancels it first)."""
        if kept is not None:
            self._kept = kept
        if not isinstance(outcome, Complete) and outcome.resume is not None:
            resumed = self._resume(outcome)
            if resumed is not None:
                return resumed
        match outcome:
            case Complete(turn=turn):
                self.result = Finish(turn=turn)
                return self.result
            case Partial(turn=turn, interruption=interruption, over_http2=over_http2):
                marker = http2_failure(interruption) if over_http2 else None
                self.result = Finish(turn=turn, interruption=interruption, http2_failure=marker)
                if self._raise_on_partial:
                    return Raise(error=interruption, http2_failure=marker)
                return self.result
            case Empty(error=error, over_http2=over_http2):
                return self._after_empty(error, over_http2)

    def _resume(self, outcome: Partial | Empty) -> Resume | None:
        point = outcome.resume
        assert point is not None
        self._kept = point.response_id
        error = outcome.interruption if isinstance(outcome, Partial) else outcome.error
        wait = self._retrier.resume_wait(error)
        if wait is None:
            return None
        attempt = self._retrier.attempt
        self.retries.append(RetryRecord(attempt, error, wait, resume=True))
        self._advance = True
        return Resume(
            point=point,
            wait=wait,
            attempt=attempt + 1,
            attempts=self._retrier.policy.attempts,
            reason=error.message,
        )

    def _after_empty(self, error: RailingsError, over_http2: bool) -> Decision:
        if isinstance(error, LocalError):
            return Raise(error=error)
        attempt = self._retrier.attempt
        marker = http2_failure(error) if over_http2 else None
        if marker is not None and not self._replayed:
            self._replayed = True
            self.retries.append(RetryRecord(attempt, error, 0.0, replay=True))
            cancel, self._kept = self._kept, None
            return ReplayOverHTTP1(http2_failure=marker, cancel=cancel)
        if self._drop_usage and isinstance(error, BadRequest) and "stream_options" in error.message:
            self._drop_usage = False
            self.retries.append(RetryRecord(attempt, error, 0.0, replay=True))
            return ResendWithoutUsage(http2_failure=marker)
        wait = self._retrier.next_wait(error)
        if wait is None:
            return Raise(error=error, http2_failure=marker)
        self.retries.append(RetryRecord(attempt, error, wait))
        self._advance = True
        cancel, self._kept = self._kept, None
        return Retry(
            wait=wait,
            attempt=attempt + 1,
            attempts=self._retrier.policy.attempts,
            reason=error.message,
            http2_failure=marker,
            cancel=cancel,
        )
