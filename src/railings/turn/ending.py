"""How an attempt ended, sans-IO: Complete, Partial or Empty, each error built once.

An attempt that got an event stream ends in one of three ways, decided here and
nowhere else (:class:`~railings.turn.attempt.Attempt` calls :func:`outcome` when it
closes; the client's attempt machine, the guard, the gateway and ``replay`` read the
result):

* **Complete**: the provider's proof arrived; the turn is the result.
* **Partial**: content arrived, the proof did not. Kept as-is, marked with the
  interruption that explains it, never resent (it is billed).
* **Empty**: nothing billable arrived (the Empty table, :mod:`railings.turn.billable`):
  the error that stopped it, which the attempt machine may resend.

What stopped the reading is a :data:`Failure`: a railings error (a bound, a total
timeout), a :class:`Cut` (the stream broke off or went silent, whose interruption
depends on whether the attempt was Empty, so it is built once the turn is known), or
None (the body ended).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from railings.classify import (
    CONTENT_IDLE_MESSAGE,
    IDLE_MESSAGE,
    INTERRUPTED_MESSAGE,
    class_for_provider_type,
    classify_text,
    interrupted_message,
)
from railings.errors import (
    IdleTimeout,
    LocalError,
    MalformedStream,
    ProviderError,
    RailingsError,
    StreamInterrupted,
    TurnTooLarge,
)
from railings.redact import redact
from railings.turn.model import ErrorKind, Outcome, Turn, TurnError

if TYPE_CHECKING:
    from railings.turn.resume import ResumePoint

__all__ = [
    "AttemptOutcome",
    "Complete",
    "Cut",
    "Empty",
    "Failure",
    "Partial",
    "empty_error",
    "idle_cut",
    "interrupted",
    "outcome",
    "too_large",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Complete:
    """The termination proof arrived: ``turn`` is the result."""

    turn: Turn


@dataclass(frozen=True, slots=True, kw_only=True)
class Partial:
    """Content arrived, the proof did not: ``turn`` as assembled, and why it stopped.
    ``over_http2``: the response came over HTTP/2 (its failure may be the protocol's);
    ``resume``: the provider keeps the response, and this is where to read it again."""

    turn: Turn
    interruption: StreamInterrupted
    over_http2: bool = False
    resume: ResumePoint | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Empty:
    """Nothing reached the caller: an error before the response, an error status, or a
    stream that ended before any content. ``over_http2``: the attempt may have run over
    HTTP/2 (it was offered, and no response said otherwise); ``resume``: as for
    :class:`Partial` (a kept response is resumed, never generated twice)."""

    error: RailingsError
    over_http2: bool = False
    resume: ResumePoint | None = None


AttemptOutcome = Complete | Partial | Empty


@dataclass(frozen=True, slots=True)
class Cut:
    """How a streaming body broke off, before the turn is known: the interruption it
    becomes is built once, complete, by :meth:`error` (an :class:`IdleTimeout` when
    ``idle_seconds`` is set), chained to ``cause``."""

    message: str
    idle_seconds: float | None = None
    cause: BaseException | None = None

    def error(
        self, *, empty: bool, received: bytes = b"", turn: object | None = None
    ) -> StreamInterrupted:
        """The interruption, with the bytes ``received`` and the ``turn`` assembled."""
        error: StreamInterrupted
        if self.idle_seconds is not None:
            error = IdleTimeout(
                self.message,
                empty=empty,
                idle_seconds=self.idle_seconds,
                received=received,
                turn=turn,
            )
        else:
            error = StreamInterrupted(self.message, empty=empty, received=received, turn=turn)
        if self.cause is not None:
            error.__cause__ = self.cause  # what ``raise ... from cause`` would record
        return error


# What stopped an attempt's reading: a railings error, a cut to build once the turn is
# known, or None (the body ended).
Failure = RailingsError | Cut | None


def idle_cut(seconds: float, *, content: bool = False) -> Cut:
    """The stream went silent for ``seconds`` (the idle gap, or the wait for first content);
    ``content``: bytes kept arriving, but only keep-alives (the content clock ran out)."""
    message = (CONTENT_IDLE_MESSAGE if content else IDLE_MESSAGE).format(seconds=seconds)
    return Cut(message, idle_seconds=seconds)


def outcome(
    turn: Turn, failure: Failure, received: bytes, *, over_http2: bool = False
) -> AttemptOutcome:
    """What an attempt that got an event stream amounts to.

    ``turn`` is what the reader assembled, ``failure`` what stopped the reading
    (None: the body ended), ``received`` the bytes kept. Each error is built here,
    once, with everything it carries.
    """
    if isinstance(failure, LocalError):
        return Empty(error=failure)  # misuse mid-stream (a railings bug): raised, never kept
    if isinstance(failure, TurnTooLarge) and turn.error is not None:
        # Resending would be answered the same way: the turn says so too.
        turn = dataclasses.replace(turn, error=dataclasses.replace(turn.error, retryable=False))
        failure = too_large(failure, turn)
    if turn.outcome is Outcome.COMPLETE:
        return Complete(turn=turn)
    if turn.outcome is Outcome.PARTIAL:
        turn, interruption = interrupted(turn, failure, received)
        return Partial(turn=turn, interruption=interruption, over_http2=over_http2)
    return Empty(error=empty_error(turn, failure, received), over_http2=over_http2)


def too_large(error: TurnTooLarge, turn: Turn) -> TurnTooLarge:
    """``error`` again, now with the ``turn`` it ended."""
    out = TurnTooLarge(
        error.message, bound=error.bound, limit=error.limit, max_tokens=error.max_tokens, turn=turn
    )
    out.__cause__ = error.__cause__
    return out


def _event_error(error: TurnError) -> ProviderError:
    """The typed error for a provider error event (the turn's abrupt end)."""
    ptype, message = error.provider_type, error.message
    cls = class_for_provider_type(ptype)
    if cls is ProviderError:
        by_text = classify_text(message)
        if by_text is not None and issubclass(by_text, ProviderError):
            cls = by_text
    return cls(f"provider error event: {message}", provider_type=ptype)


def empty_error(turn: Turn, failure: Failure, received: bytes) -> RailingsError:
    """Why an attempt that delivered nothing billable failed."""
    if isinstance(failure, Cut):
        return failure.error(empty=True, received=received, turn=turn)
    if failure is not None:
        return failure
    error = turn.error
    if error is not None and error.kind is ErrorKind.PROVIDER_ERROR:
        return _event_error(error)
    if error is not None and error.kind is ErrorKind.MALFORMED_STREAM:
        return MalformedStream(error.message, retryable=True)
    return StreamInterrupted(INTERRUPTED_MESSAGE, empty=True, received=received, turn=turn)


def interrupted(turn: Turn, failure: Failure, received: bytes) -> tuple[Turn, StreamInterrupted]:
    """A PARTIAL turn and the interruption that explains it (never retried).

    When something stopped the reading, the turn's error says so in the
    interruption's words; the interruption carries that turn.
    """
    if isinstance(failure, Cut):
        message = redact(failure.message)
        turn = _with_message(turn, message)
        return turn, failure.error(empty=False, received=received, turn=turn)
    cause: RailingsError | None = failure
    error = turn.error
    if failure is None and error is not None and error.kind is ErrorKind.PROVIDER_ERROR:
        cause = _event_error(error)
    if cause is not None:
        message = interrupted_message(cause.message)
    else:
        message = interrupted_message(error.message) if error else INTERRUPTED_MESSAGE
    if failure is not None:
        turn = _with_message(turn, redact(message))
    interruption = StreamInterrupted(message, empty=False, received=received, turn=turn)
    if cause is not None:
        interruption.__cause__ = cause  # what ``raise ... from cause`` would record
    return turn, interruption


def _with_message(turn: Turn, message: str) -> Turn:
    """``turn`` with its error's message replaced (the interruption's words)."""
    if turn.error is None:
        return turn
    return dataclasses.replace(turn, error=dataclasses.replace(turn.error, message=message))
