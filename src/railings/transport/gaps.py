"""Timing the silences of a stream with one lazy timer, not one timer per chunk.

``asyncio.timeout`` around each read costs a timer handle per chunk, a cost of the
order of parsing the chunk. :class:`GapWatch` keeps a single handle per
attempt. Each read only records until when it may wait; the handle, when it
fires, compares that instant with the clock and either cancels the waiting read
or sleeps again until the recorded instant. A stream that keeps flowing costs
one float per chunk and a wake-up per gap.

The read is cancelled only while the task is suspended in it (``waiting``), so
a cancellation can never land in the caller's code between two chunks.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator

__all__ = ["GapWatch", "Silence"]


class Silence(Exception):
    """No byte arrived before the instant the read was allowed to wait until."""

    def __init__(self, deadline_passed: bool) -> None:
        super().__init__("deadline" if deadline_passed else "gap")
        self.deadline_passed = deadline_passed


class GapWatch:
    """One per attempt: ``await watch.read(chunks, gap, deadline)`` instead of ``anext``."""

    __slots__ = (
        "_at",
        "_deadline_hit",
        "_fired",
        "_handle",
        "_loop",
        "_task",
        "_until",
        "_waiting",
    )

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[object] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._at = 0.0  # when the handle fires
        self._until = 0.0  # until when the current read may wait
        self._deadline_hit = False
        self._waiting = False
        self._fired = False

    async def read(
        self, chunks: AsyncIterator[bytes], gap: float | None, deadline: float | None
    ) -> bytes:
        """The next chunk; :class:`Silence` when ``gap`` s pass without one or the
        ``deadline`` (a loop time) passes first. ``StopAsyncIteration`` at the end."""
        if gap is None and deadline is None:
            return await chunks.__anext__()
        until = math.inf if gap is None else self._loop.time() + gap
        self._deadline_hit = False
        if deadline is not None and deadline <= until:
            until, self._deadline_hit = deadline, True
        self._until = until
        # The task that waits now: a sync facade drives each step in a task of its own.
        self._task = asyncio.current_task()
        if self._handle is None or until < self._at:
            self._schedule(until)
        self._waiting = True
        try:
            return await chunks.__anext__()
        except asyncio.CancelledError:
            if not self._fired:
                raise
            self._fired = False
            if self._task is not None:
                self._task.uncancel()
            raise Silence(self._deadline_hit) from None
        finally:
            self._waiting = False

    def close(self) -> None:
        """Cancel the pending timer; call once the attempt stops reading."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule(self, at: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._at = at
        self._handle = self._loop.call_at(at, self._check)

    def _check(self) -> None:
        self._handle = None
        if not self._waiting:
            return  # between reads: the next read schedules again
        # call_at may run a hair early (the loop's clock resolution): allow for it.
        if self._loop.time() + 1e-3 >= self._until:
            if self._task is not None:
                self._fired = True
                self._task.cancel()
        else:
            self._schedule(self._until)
