"""The client's shell around one :class:`~railings.turn.attempt.Attempt`: its reads.

Everything that decides (the proof, the bounds, the held events, which clock ran
out, Empty or Partial) is the sans-IO attempt's. What is left here is what the
client's I/O needs: the attempt's clocks made from the configured
:class:`~.config.Timeouts`, and the socket's read timeout behind them. The client's
loop (:mod:`.client`) bounds each read by :meth:`Attempt.read_timeout` on one lazy
timer (:class:`~.gaps.GapWatch`) and maps an exception raised by the body to the cut
it means (:func:`~.errors_map.stream_cut`).
"""

from __future__ import annotations

from railings.transport.config import Timeouts
from railings.transport.errors_map import BOUNDARY
from railings.transport.gaps import Silence
from railings.turn.attempt import Clocks

__all__ = ["STOPS", "backstop", "clocks"]

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
