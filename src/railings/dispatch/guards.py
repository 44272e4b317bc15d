"""The loop guard and the circuit breaker: what stops an agent that is going nowhere.

The **loop guard** is a gate. It watches the calls that reach it and intercepts
the one that makes the same tool with the same arguments ``max_repeats`` times
in a row: the result would not change, and the model needs telling, not
obeying. Arguments compare in canonical form (keys sorted, no whitespace), so
``{"a": 1, "b": 2}`` repeats ``{"b":2,"a":1}``.

The **circuit breaker** watches outcomes and raises
:class:`~railings.errors.CircuitOpen` after ``max_failures`` consecutive
execution errors. It counts ``ERROR`` only; an executed call resets it; an
intervention (rejected, intercepted, denied) neither counts nor resets,
because an intervention is not an execution.

Both keep their count across turns: a loop usually spans turns. Neither ever
sees a call the truncation gate rejected (the dispatcher answers those before
the chain and before the breaker): the model never finished writing it, so it
is not one of its attempts.
"""

from __future__ import annotations

import json

from railings.dispatch.gates import ALLOW, Decision, Dispatch, Gate, Refuse
from railings.dispatch.notices import LOOP_NOTICE
from railings.dispatch.outcome import Invocation, OutcomeStatus, ToolOutcome
from railings.errors import CircuitOpen, ConfigurationError

__all__ = ["CircuitBreaker", "LoopGuard", "canonical_arguments"]


def canonical_arguments(arguments: object) -> str:
    """One spelling per argument value: sorted keys, no insignificant whitespace."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class LoopGuard(Gate):
    """Intercepts the ``max_repeats``-th identical call in a row (same tool, same arguments).

    An intercepted repetition keeps the streak going, so the model is stopped
    for as long as it repeats itself; any different call that reaches the guard
    starts a new streak.
    """

    def __init__(self, inner: Dispatch, *, max_repeats: int = 3) -> None:
        if max_repeats < 2:
            raise ConfigurationError(f"max_repeats must be at least 2, not {max_repeats}")
        super().__init__(inner)
        self.max_repeats = max_repeats
        self._last: tuple[str, str] | None = None
        self._streak = 0

    @property
    def streak(self) -> int:
        """How many times in a row the latest call has been made."""
        return self._streak

    def reset(self) -> None:
        """Forget the streak: the next call, whatever it repeats, starts a new one."""
        self._last, self._streak = None, 0

    async def decide(self, call: Invocation) -> Decision:
        """Allow the call, or intercept it once it is the ``max_repeats``-th identical call in
        a row (``INTERCEPTED``, with the loop notice)."""
        key = (call.name, canonical_arguments(call.arguments))
        if key == self._last:
            self._streak += 1
        else:
            self._last, self._streak = key, 1
        if self._streak < self.max_repeats:
            return ALLOW
        notice = LOOP_NOTICE.format(name=call.name, id=call.id or "-", count=self._streak)
        return Refuse(OutcomeStatus.INTERCEPTED, notice)


class CircuitBreaker:
    """Raises :class:`~railings.errors.CircuitOpen` after ``max_failures`` consecutive errors."""

    def __init__(self, *, max_failures: int = 5) -> None:
        if max_failures < 1:
            raise ConfigurationError(f"max_failures must be at least 1, not {max_failures}")
        self.max_failures = max_failures
        self._failures = 0

    @property
    def failures(self) -> int:
        """Consecutive execution errors so far."""
        return self._failures

    @property
    def open(self) -> bool:
        """True once the errors in a row have reached ``max_failures``."""
        return self._failures >= self.max_failures

    def reset(self) -> None:
        """Close the breaker: the count of errors in a row starts again at zero."""
        self._failures = 0

    def record(self, outcome: ToolOutcome) -> None:
        """Count one outcome; raise once the errors in a row reach ``max_failures``."""
        if outcome.status is OutcomeStatus.EXECUTED:
            self._failures = 0
        elif outcome.status is OutcomeStatus.ERROR:
            self._failures += 1
            if self.open:
                raise CircuitOpen(
                    f"circuit breaker open: {self._failures} consecutive tool execution "
                    f"errors; the last was {outcome.name!r}: {outcome.content}",
                    failures=self._failures,
                )
        # An intervention (rejected, intercepted, denied) neither counts nor resets.
