"""The drivers: one :class:`~railings.continuation.plan.Continuation` carried out over a
client, async (:func:`continue_turn`) or blocking (:func:`continue_turn_sync`).

They do what the plan's I/O requires and nothing else: send the plan's conversation with
the client's ``stream_turn``, hand each event to the plan and pass on what it returns,
ask again once when the plan says a refusal calls for it, and give the plan the turn at
the end. Retries, the clocks and the proof are the client's, as for any turn. The
clients are described by what is used of them (:class:`AsyncTurns`, :class:`Turns`):
:class:`railings.transport.AsyncProviderClient` and
:class:`railings.transport.ProviderClient`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterable, Iterator, Sequence
from typing import Protocol, TypeVar

from railings.continuation.plan import Continuation, Continued, Strategy
from railings.conversation import Message, ToolSpec
from railings.errors import RailingsError, StreamNotRead
from railings.events import StreamEvent
from railings.turn.model import Turn

__all__ = [
    "AsyncTurns",
    "ContinuationStream",
    "SyncContinuationStream",
    "Turns",
    "continue_turn",
    "continue_turn_sync",
]


class _Config(Protocol):
    @property
    def provider(self) -> str:
        """The wire the client speaks."""


class _Told(Protocol):
    @property
    def turn(self) -> Turn: ...

    @property
    def attempts(self) -> int: ...


class _AsyncStream(_Told, Protocol):
    def __aiter__(self) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...


class _Stream(_Told, Protocol):
    def __iter__(self) -> Iterator[StreamEvent]: ...

    def close(self) -> None: ...


_S = TypeVar("_S", bound=_Told, covariant=True)


class _Client(Protocol[_S]):
    @property
    def config(self) -> _Config:
        """The client's configuration: its ``provider`` picks the default strategy."""

    def stream_turn(self, messages: Iterable[Message], tools: Iterable[ToolSpec] = ..., /) -> _S:
        """One turn for ``messages``, streamed."""


class AsyncTurns(_Client[_AsyncStream], Protocol):
    """What :func:`continue_turn` uses of a client (``AsyncProviderClient``)."""


class Turns(_Client[_Stream], Protocol):
    """What :func:`continue_turn_sync` uses of a client (``ProviderClient``)."""


class _Ended:
    """What both streams say once the continuation ended."""

    _plan: Continuation
    _attempts: int

    @property
    def continued(self) -> Continued:
        """The joined turn and how it was made; only once the stream was read to its end
        (else :class:`~railings.errors.StreamNotRead`)."""
        if self._plan.result is None:
            raise StreamNotRead
        return self._plan.result

    @property
    def turn(self) -> Turn:
        """The joined turn (``continued.turn``)."""
        return self.continued.turn

    @property
    def attempts(self) -> int:
        """The client's attempts at the last request (an Empty one is resent)."""
        return self._attempts


class ContinuationStream(_Ended):
    """The continuation's events, as they arrive and with its repeat of the partial text
    removed; then :attr:`continued`. Iterate it once, or ``await result()``."""

    def __init__(self, client: AsyncTurns, plan: Continuation, tools: Sequence[ToolSpec]) -> None:
        self._plan = plan
        self._attempts = 0
        self._events = self._run(client, tools)

    def __aiter__(self) -> ContinuationStream:
        return self

    async def __anext__(self) -> StreamEvent:
        return await self._events.__anext__()

    async def result(self) -> Continued:
        """Read what is left, and return the joined turn."""
        async for _ in self:
            pass
        return self.continued

    async def aclose(self) -> None:
        """Abandon the continuation and release its connection."""
        await self._events.aclose()

    async def _run(
        self, client: AsyncTurns, tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamEvent, None]:
        plan = self._plan
        while True:
            stream = client.stream_turn(plan.messages(), tools)
            try:
                async for event in stream:
                    for out in plan.feed(event):
                        yield out
                break
            except RailingsError as exc:
                if not plan.refused(exc):
                    raise
            finally:
                self._attempts = stream.attempts
                await stream.aclose()
        for out in plan.finish(stream.turn):
            yield out


class SyncContinuationStream(_Ended):
    """The blocking twin of :class:`ContinuationStream`: iterate, or ``result()``."""

    def __init__(self, client: Turns, plan: Continuation, tools: Sequence[ToolSpec]) -> None:
        self._plan = plan
        self._attempts = 0
        self._events = self._run(client, tools)

    def __iter__(self) -> SyncContinuationStream:
        return self

    def __next__(self) -> StreamEvent:
        return next(self._events)

    def result(self) -> Continued:
        """Read what is left, and return the joined turn."""
        for _ in self:
            pass
        return self.continued

    def close(self) -> None:
        """Abandon the continuation and release its connection."""
        self._events.close()

    def _run(self, client: Turns, tools: Sequence[ToolSpec]) -> Generator[StreamEvent, None, None]:
        plan = self._plan
        while True:
            stream = client.stream_turn(plan.messages(), tools)
            try:
                for event in stream:
                    yield from plan.feed(event)
                break
            except RailingsError as exc:
                if not plan.refused(exc):
                    raise
            finally:
                self._attempts = stream.attempts
                stream.close()
        yield from plan.finish(stream.turn)


def continue_turn(
    client: AsyncTurns,
    messages: Sequence[Message],
    partial: Turn | Continued,
    tools: Iterable[ToolSpec] = (),
    *,
    strategy: Strategy | None = None,
) -> ContinuationStream:
    """Ask the model for the rest of ``partial``, the Partial text answer to ``messages``
    (the conversation it answered, without it), and join the two.

    Returns a stream: iterate it for the continuation's events (its repeat of the
    partial text removed), then read ``continued``; or ``await
    continue_turn(...).result()``. ``strategy``: ``"prefill"`` or ``"user"``; None is the
    wire's (:mod:`railings.continuation`). A prefill refused with HTTP 400 is asked
    again, once, by user message (``continued.fell_back``). ``partial`` may be a
    :class:`Continued` that was cut again. Raises
    :class:`~railings.errors.CannotContinue` at once for a turn that is complete, holds
    a tool call or has no text. Append ``Assistant.from_turn(continued.turn)`` to the
    history in place of the partial turn.
    """
    plan = Continuation(messages, partial, provider=client.config.provider, strategy=strategy)
    return ContinuationStream(client, plan, tuple(tools))


def continue_turn_sync(
    client: Turns,
    messages: Sequence[Message],
    partial: Turn | Continued,
    tools: Iterable[ToolSpec] = (),
    *,
    strategy: Strategy | None = None,
) -> SyncContinuationStream:
    """:func:`continue_turn` with a blocking ``ProviderClient``: iterate the stream, or
    call ``result()``."""
    plan = Continuation(messages, partial, provider=client.config.provider, strategy=strategy)
    return SyncContinuationStream(client, plan, tuple(tools))
