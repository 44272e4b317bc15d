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
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from types import TracebackType

from railings.errors import RailingsError, StreamInterrupted, StreamNotRead
from railings.events import StreamEvent
from railings.turn.model import Outcome, Turn
from railings.turn.verdict import CallVerdict, judge

__all__ = ["RetryRecord", "TurnStream"]


@dataclass(frozen=True, slots=True)
class RetryRecord:
    """Attempt ``attempt`` failed with ``error``; the next one started after ``wait`` s.
    ``replay`` marks the free HTTP/1.1 replay of the HTTP/2 fallback."""

    attempt: int
    error: RailingsError
    wait: float
    replay: bool = False


class TurnStream:
    """An async iterator of :data:`~railings.events.StreamEvent`, and then the turn.

    Iterate it once. ``turn`` (or ``await result()``) gives the assembled turn:
    COMPLETE, or PARTIAL with ``interrupted`` true (unless the client was told to
    raise :class:`~railings.errors.StreamInterrupted` instead). Use ``async with``
    or :meth:`aclose` to abandon a stream early and release its connection.
    """

    def __init__(self, run: Callable[[TurnStream], AsyncGenerator[StreamEvent, None]]) -> None:
        self._events = run(self)
        self._turn: Turn | None = None
        self.interruption: StreamInterrupted | None = None
        self.attempts = 0
        self.retries: list[RetryRecord] = []
        self.http_version: str | None = None

    # -- iteration ---------------------------------------------------------------------

    def __aiter__(self) -> TurnStream:
        return self

    async def __anext__(self) -> StreamEvent:
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

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- the result --------------------------------------------------------------------

    def _finish(self, turn: Turn, interruption: StreamInterrupted | None = None) -> None:
        self._turn = turn
        self.interruption = interruption

    @property
    def done(self) -> bool:
        """True once the stream has ended and :attr:`turn` can be read."""
        return self._turn is not None

    @property
    def turn(self) -> Turn:
        """The turn; only once the stream has been read to its end (else
        :class:`~railings.errors.StreamNotRead`)."""
        if self._turn is None:
            raise StreamNotRead
        return self._turn

    @property
    def interrupted(self) -> bool:
        """True when the turn ended without its proof (a PARTIAL turn returned as-is)."""
        return self.turn.outcome is not Outcome.COMPLETE

    @property
    def verdicts(self) -> tuple[CallVerdict, ...]:
        """The verdict of every local tool call (an interrupted turn executes none)."""
        return judge(self.turn)
