"""What the guard raises or attaches: its verdicts on a watched stream, as exceptions.

:class:`~.watch.StreamWatch` reads *that* a stream failed from its attempt
(:class:`~railings.turn.attempt.Attempt`); this module says it the way the SDKs
already understand. Where the stream ended without raising,
the guard raises an httpx2 exception of the class the SDK handles for that
failure (:class:`httpx2.RemoteProtocolError` for a missing proof or a bound,
:class:`httpx2.DecodingError` for a body it cannot read,
:class:`httpx2.ReadTimeout` for keep-alives only), whose ``__cause__`` is the
railings error. Where the inner stream raised, :func:`broken` gives the verdict
alone: the guard attaches it to that very exception.
"""

from __future__ import annotations

import zlib

import httpx2

from railings.classify import INTERRUPTED_MESSAGE, interrupted_message
from railings.errors import RailingsError, StreamInterrupted, TurnTooLarge
from railings.transport.errors_map import idle_error
from railings.turn.ending import too_large
from railings.turn.model import Outcome, Turn

__all__ = [
    "broken",
    "interrupted",
    "keepalives_only",
    "raised",
    "refused",
    "too_large_error",
    "undecodable",
]

# A read timeout is the idle gap when at least this share of the gap passed in silence
# (the socket's timer starts after the guard saw the last byte, so never later).
_ELAPSED = 0.9


def raised(
    cls: type[httpx2.HTTPError],
    detail: str,
    turn: Turn | None = None,
    reason: BaseException | None = None,
) -> httpx2.HTTPError:
    """An httpx2 ``cls`` error from :class:`StreamInterrupted` (itself from ``reason``),
    Empty when ``turn`` is."""
    message = interrupted_message(detail)
    empty = turn is not None and turn.outcome is Outcome.EMPTY
    cause = StreamInterrupted(message, empty=empty, turn=turn)
    cause.__cause__ = reason
    error = cls(message)
    error.__cause__ = cause
    return error


def refused(detail: str) -> httpx2.HTTPError:
    """A stream in a coding the guard cannot read, refused before its first byte."""
    return raised(httpx2.DecodingError, detail)


def interrupted(turn: Turn) -> httpx2.HTTPError:
    """The body ended without its proof: the turn is Empty or Partial."""
    detail = turn.error.message if turn.error is not None else INTERRUPTED_MESSAGE
    return raised(httpx2.RemoteProtocolError, detail, turn)


def keepalives_only(cause: RailingsError) -> httpx2.HTTPError:
    """Nothing but keep-alives until the content clock ran out: a read timeout from the
    attempt's verdict (an :class:`~railings.errors.IdleTimeout`)."""
    error = httpx2.ReadTimeout(cause.message)
    error.__cause__ = cause
    return error


def undecodable(exc: zlib.error, turn: Turn) -> httpx2.HTTPError:
    """The body does not decode as its ``Content-Encoding`` says."""
    message = f"the body does not decode as its content-encoding says: {exc}"
    return raised(httpx2.DecodingError, message, turn)


def too_large_error(exc: TurnTooLarge, turn: Turn) -> httpx2.HTTPError:
    """The turn passed a bound: the railings reason is ``exc``, now with its turn."""
    return raised(httpx2.RemoteProtocolError, exc.message, turn, too_large(exc, turn))


def broken(exc: Exception, turn: Turn, gap: float | None, silent: float) -> StreamInterrupted:
    """The verdict on a stream whose inner stream raised ``exc`` after ``silent`` seconds
    without a byte: an idle gap only when the read timeout in force (``gap``) really
    passed; any other error, raised at once or not, is named as it is."""
    empty = turn.outcome is Outcome.EMPTY
    if isinstance(exc, httpx2.ReadTimeout) and gap is not None and silent >= gap * _ELAPSED:
        return idle_error(gap, empty=empty, turn=turn)
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    message = f"{INTERRUPTED_MESSAGE}: the connection broke ({what})"
    return StreamInterrupted(message, empty=empty, turn=turn)
