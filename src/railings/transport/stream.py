"""``TurnStream``: one turn, iterated live, then read as a verdict-ready :class:`Turn`.

::

    stream = client.stream_turn(messages, tools=tools)
    async for event in stream:          # normalized events, as they arrive
        ...
    turn = stream.turn                  # COMPLETE, or PARTIAL marked interrupted
    verdicts = stream.verdicts          # what may execute

    turn = await client.stream_turn(messages).result()   # the same, without the events

Events of an attempt that is resent (an **Empty** interruption) are never seen:
they are held back until the attempt delivers content or its proof, so a caller
never has to take back what it showed.

The stream only reads: its events come from the generator it is given, and
what it says about the attempts (their number, the retries, the HTTP version,
the turn at the end) from the :class:`Attempts` record that the attempt loop
keeps (:class:`~railings.transport.machine.AttemptMachine`). Nothing outside
writes into a stream.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Protocol

from railings.errors import RailingsError, StreamInterrupted, StreamNotRead
from railings.events import StreamEvent
from railings.turn.model import Outcome, Turn
from railings.turn.verdict import CallVerdict, judge

__all__ = ["Attempts", "Ending", "RetryRecord", "StreamFacts", "TurnStream"]


@dataclass(frozen=True, slots=True)
class RetryRecord:
    """Attempt ``attempt`` failed with ``error``; the next one started after ``wait`` s.
    ``replay`` marks the free HTTP/1.1 replay of the HTTP/2 fallback; ``resume``: the
    next one read the kept response again (nothing generated twice)."""

    attempt: int
    error: RailingsError
    wait: float
    replay: bool = False
    resume: bool = False


class Ending(Protocol):
    """How a turn ended: its ``turn``, and the ``interruption`` of a Partial one."""

    @property
    def turn(self) -> Turn:
        """The turn as it ended."""

    @property
    def interruption(self) -> StreamInterrupted | None:
        """Why a Partial turn stopped; None for a complete one."""


class Attempts(Protocol):
    """What a stream reads about its attempts while they run and once they ended."""

    @property
    def attempt(self) -> int:
        """The number of the attempt running or last run (1-based)."""

    @property
    def retries(self) -> list[RetryRecord]:
        """Each failed attempt that was retried or replayed, in order."""

    @property
    def http_version(self) -> str | None:
        """The HTTP version of the latest response; None before one."""

    @property
    def result(self) -> Ending | None:
        """How the turn ended; None until it did."""


class StreamFacts:
    """What a stream says about its attempts and, once it ended, its turn: read from the
    :class:`Attempts` record the attempt loop keeps (for the async stream and the sync
    facade's alike)."""

    _attempts: Attempts

    @property
    def retries(self) -> list[RetryRecord]:
        """Each failed attempt that was retried or replayed, in order."""
        return self._attempts.retries

    @property
    def http_version(self) -> str | None:
        """The HTTP version of the latest response (``HTTP/1.1``, ``HTTP/2``); None before one."""
        return self._attempts.http_version

    @property
    def done(self) -> bool:
        """True once the stream has ended and :attr:`turn` can be read."""
        return self._attempts.result is not None

    @property
    def turn(self) -> Turn:
        """The turn; only once the stream has been read to its end (else
        :class:`~railings.errors.StreamNotRead`)."""
        result = self._attempts.result
        if result is None:
            raise StreamNotRead
        return result.turn

    @property
    def interruption(self) -> StreamInterrupted | None:
        """Why a PARTIAL turn was interrupted, with the bytes received (raised instead when
        the config says ``raise_on_partial``); None otherwise."""
        result = self._attempts.result
        return None if result is None else result.interruption

    @property
    def interrupted(self) -> bool:
        """True when the turn ended without its proof (a PARTIAL turn returned as-is)."""
        return self.turn.outcome is not Outcome.COMPLETE

    @property
    def verdicts(self) -> tuple[CallVerdict, ...]:
        """The verdict of every local tool call (an interrupted turn executes none)."""
        return judge(self.turn)


class TurnStream(StreamFacts):
    """An async iterator of :data:`~railings.events.StreamEvent`, and then the turn.

    Iterate it once. ``turn`` (or ``await result()``) gives the assembled turn:
    COMPLETE, or PARTIAL with ``interrupted`` true (unless the client was told to
    raise :class:`~railings.errors.StreamInterrupted` instead). Use ``async with``
    or :meth:`aclose` to abandon a stream early and release its connection.
    """

    def __init__(
        self,
        attempts: Attempts,
        run: Callable[[TurnStream], AsyncGenerator[StreamEvent, None]],
    ) -> None:
        self._attempts = attempts
        self._started = False
        self._events = run(self)

    # -- iteration ---------------------------------------------------------------------

    def __aiter__(self) -> TurnStream:
        return self

    async def __anext__(self) -> StreamEvent:
        self._started = True
        return await self._events.__anext__()

    async def result(self) -> Turn:
        """Read what is left of the stream and return the turn."""
        async for _ in self:
            pass
        return self.turn

    async def aclose(self) -> None:
        """Abandon the stream: stop reading and release its connection (nothing happens
        if it already ended)."""
        await self._events.aclose()

    async def __aenter__(self) -> TurnStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def attempts(self) -> int:
        """The number of the attempt running or last run (1-based; 0 before the stream starts)."""
        return self._attempts.attempt if self._started else 0
