"""The reads of one :class:`~railings.turn.attempt.Attempt`, for the client and the gateway.

Everything that decides (the proof, the bounds, the held events, which clock ran
out, Empty or Partial) is the sans-IO attempt's. What is left here is what their I/O
needs, in one place for both shells: the attempt's clocks made from the configured
:class:`~.config.Timeouts` and the socket's read timeout behind them
(:func:`clocks`, :func:`backstop`), each read bounded by :meth:`Attempt.read_timeout` on
one lazy timer (:func:`bounded_read`, :class:`~.gaps.GapWatch`), and what a read that
raised means for the attempt (:func:`stopped`: a clock, or the cut
:func:`~.errors_map.stream_cut` maps).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable

from railings.transport.config import Timeouts
from railings.transport.errors_map import BOUNDARY, stream_cut
from railings.transport.gaps import GapWatch, Silence
from railings.turn.attempt import Attempt, Clocks

__all__ = ["STOPS", "backstop", "bounded_read", "clocks", "stopped"]

# What a read of the body may raise besides its end: a clock ran out, or the body broke.
STOPS: tuple[type[BaseException], ...] = (Silence, *BOUNDARY)


def backstop(timeouts: Timeouts) -> float | None:
    """The socket read timeout while the body streams: the longer of the two gaps."""
    if timeouts.first_byte is None or timeouts.idle is None:
        return None
    return max(timeouts.first_byte, timeouts.idle)


def clocks(timeouts: Timeouts, deadline: float | None) -> Clocks:
    """The attempt's clocks: before the first content a model may think in silence for
    ``first_byte`` (for a byte and for the first event alike); once content flows, the
    ``idle`` gap and the ``content_idle`` content clock; ``deadline`` (a loop time)
    bounds both."""
    return Clocks(
        first_byte=timeouts.first_byte,
        idle=timeouts.idle,
        first_content=timeouts.first_byte,
        content_idle=timeouts.content_idle,
        deadline=deadline,
        total=timeouts.total,
    )


def bounded_read(
    watch: GapWatch, chunks: AsyncIterator[bytes], attempt: Attempt, now: float
) -> Awaitable[bytes]:
    """The next chunk of ``chunks``, waited for on ``watch`` at most as long as the
    attempt's clocks allow a read that starts at ``now`` (:class:`Silence` past that;
    ``StopAsyncIteration`` at the end). Returns the read itself: no coroutine layer of
    its own per chunk."""
    wait = attempt.read_timeout(now)
    return watch.read(chunks, None, None if wait is None else now + wait)


def stopped(attempt: Attempt, exc: BaseException, timeouts: Timeouts, now: float) -> None:
    """A read raised ``exc`` (one of :data:`STOPS`) at ``now``: a clock ran out, or the
    body broke off; the socket's read timeout is only a backstop behind the clocks."""
    if isinstance(exc, Silence):
        attempt.timed_out(now)
    else:
        attempt.broke(stream_cut(exc, idle_seconds=backstop(timeouts)))
