"""The sync facade: the async client, driven from a private event loop thread.

No logic lives here. :class:`ProviderClient` owns one event loop running in a
daemon thread and one :class:`AsyncProviderClient` on it. Retries, timeouts,
the fallback and the banner are the async client's, unchanged.

Events cross the threads in batches, not one per hop: a hop (a coroutine handed
to the loop, and the wait for its result) costs more than an event. Once a
:class:`SyncTurnStream` is first read, a task on the loop (:class:`_Pump`)
iterates the async stream and collects its events; each ``next()`` that finds
its batch used up takes everything collected so far in one hop. The task stops
reading while one batch (:data:`_AHEAD` events) waits unread, so a slow
consumer holds the stream back as it would in the async client (and the idle
gap is timed only while a read waits, as there).

Letting go. A consumer that breaks out and closes the stream (``close()``,
leaving ``with``), or drops it unclosed (a ``break`` out of ``for event in
client.stream_turn(...)``), stops the task at once: a flag the task checks
before each event, set from the consumer's thread (the loop may be busy reading
events already buffered, and would run a close only after them); then the
response is closed on the loop. So the reader never runs more than one batch
past what the consumer took, and reads at most the event in flight once the
consumer let go.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Coroutine, Iterable, Iterator
from typing import Any, TypeVar

import httpx2

from railings.events import StreamEvent
from railings.messages import Message, ToolSpec
from railings.transport.client import AsyncProviderClient, TransportFactory
from railings.transport.config import ClientConfig
from railings.transport.context import ClientContext
from railings.transport.stream import StreamFacts, TurnStream
from railings.turn.model import Turn

__all__ = ["ProviderClient", "SyncTurnStream"]

T = TypeVar("T")


class _LoopThread:
    """An event loop in a daemon thread; :meth:`run` blocks on one coroutine."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="railings-transport", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except (KeyboardInterrupt, SystemExit):
            future.cancel()
            raise

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.run(_cancel_tasks())  # the pumps of streams never read to their end nor closed
        self.run(self.loop.shutdown_asyncgens())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


async def _cancel_tasks() -> None:
    """Cancel every other task on the running loop and wait until they have ended."""
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks)


# How many events the pump collects before it waits for the consumer to take them: one
# batch, large enough that the hop's own cost is small beside the events it carries.
_AHEAD = 512


class _Pump:
    """Reads one :class:`TurnStream` on the loop, ahead of the thread that consumes it.

    Lives on the loop: every method runs there. :meth:`take` returns the events
    collected since the last call (waiting for at least one), an empty list once
    the stream ended, and raises what ended it, after the events before it.
    """

    def __init__(self, stream: TurnStream) -> None:
        self._stream = stream
        self._events: list[StreamEvent] = []
        self._error: BaseException | None = None
        self._ended = False
        self.stopped = False  # the consumer let go: read nothing more (set from its thread)
        self._loop = asyncio.get_running_loop()
        self._ready = asyncio.Event()  # events or the end are there to take
        self._room = asyncio.Event()  # fewer than _AHEAD events wait
        self._room.set()
        self._closing: asyncio.Task[None] | None = None
        self._task = self._loop.create_task(self._run())

    async def _run(self) -> None:
        try:
            async for event in self._stream:
                if self.stopped:
                    break
                self._events.append(event)
                self._ready.set()
                if len(self._events) >= _AHEAD:
                    self._room.clear()
                    await self._room.wait()
                    if self.stopped:
                        break
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # handed to the consumer, after the events before it
            self._error = exc
        finally:
            self._ended = True
            self._ready.set()

    def stop(self) -> None:
        """From any thread: read no further event, and close the response (module docstring)."""
        self.stopped = True
        with contextlib.suppress(RuntimeError):  # the loop already closed: nothing reads
            self._loop.call_soon_threadsafe(self._release)

    def _release(self) -> None:
        if self._closing is None:
            self._closing = self._loop.create_task(self._close())

    async def take(self) -> list[StreamEvent]:
        """The next batch (at least one event), or [] at the end; raises the stream's error."""
        while not self._events and not self._ended:
            self._ready.clear()
            await self._ready.wait()
        batch, self._events = self._events, []
        self._room.set()
        if not batch and self._error is not None:
            error, self._error = self._error, None
            raise error
        return batch

    async def close(self) -> None:
        """Stop reading, and release the stream's connection."""
        self.stopped = True
        self._release()
        assert self._closing is not None
        await self._closing

    async def _close(self) -> None:
        if not self._task.done():  # waiting for room or for bytes (past the flag it ended)
            self._task.cancel()
            await asyncio.wait([self._task])  # its cancellation, not ours: nothing raised
        await self._stream.aclose()


async def _start(stream: TurnStream) -> tuple[_Pump, list[StreamEvent]]:
    pump = _Pump(stream)
    return pump, await pump.take()


class SyncTurnStream(StreamFacts):
    """The sync twin of :class:`TurnStream`: iterate the events, then read ``turn``."""

    def __init__(self, stream: TurnStream, runner: _LoopThread) -> None:
        self._stream = stream
        self._attempts = stream._attempts  # what it says of the turn is the stream's record
        self._runner = runner
        self._pump: _Pump | None = None
        self._batch: list[StreamEvent] = []
        self._next = 0  # the index of the next event of the batch to hand out
        self._ended = False

    def __iter__(self) -> Iterator[StreamEvent]:
        return self

    def __next__(self) -> StreamEvent:
        if self._next < len(self._batch):
            event = self._batch[self._next]
            self._next += 1
            return event
        if self._ended:
            raise StopIteration
        if self._pump is None:
            self._pump, batch = self._runner.run(_start(self._stream))
            # Dropped unclosed (a ``break`` out of ``for event in client.stream_turn(...)``):
            # the pump stops all the same.
            weakref.finalize(self, self._pump.stop).atexit = False
        else:
            batch = self._runner.run(self._pump.take())
        if not batch:
            self._ended = True
            raise StopIteration
        self._batch, self._next = batch, 1
        return batch[0]

    def result(self) -> Turn:
        """Read what is left of the stream and return the turn."""
        if self._pump is None:
            self._ended = True
            return self._runner.run(self._stream.result())
        for _ in self:
            pass
        return self.turn

    def close(self) -> None:
        """Abandon the stream early and release its connection."""
        self._ended = True
        self._batch, self._next = [], 0
        if self._pump is None:
            self._runner.run(self._stream.aclose())
        else:
            self._pump.stop()  # at once, from this thread: the loop may be busy reading
            self._runner.run(self._pump.close())

    def __enter__(self) -> SyncTurnStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def attempts(self) -> int:
        """The number of the attempt running or last run (1-based; 0 before the stream starts)."""
        return self._stream.attempts


class ProviderClient:
    """Blocking client with the async client's behaviour (``transport`` and ``context`` as
    there). Use ``with`` or :meth:`close`."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        transport: httpx2.AsyncBaseTransport | TransportFactory | None = None,
        context: ClientContext | None = None,
    ) -> None:
        self._runner = _LoopThread()
        self._client = AsyncProviderClient(config, transport=transport, context=context)

    @property
    def config(self) -> ClientConfig:
        """The configuration the client was built with."""
        return self._client.config

    @property
    def async_client(self) -> AsyncProviderClient:
        """The async client behind this one; use it only in coroutines given to
        :meth:`block_on` (it lives on this client's private event loop)."""
        return self._client

    def block_on(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on this client's event loop and block until it returns: how async
        code that holds this client (``Agent.run``) uses :attr:`async_client`."""
        return self._runner.run(coro)

    def on_own_loop(self) -> bool:
        """True when called from a coroutine running on this client's event loop."""
        try:
            return asyncio.get_running_loop() is self._runner.loop
        except RuntimeError:
            return False

    def stream_turn(
        self,
        messages: Iterable[Message],
        tools: Iterable[ToolSpec] = (),
        *,
        background: bool | None = None,
        resume: bool | None = None,
    ) -> SyncTurnStream:
        """:meth:`AsyncProviderClient.stream_turn`, read from this thread."""
        stream = self._client.stream_turn(messages, tools, background=background, resume=resume)
        return SyncTurnStream(stream, self._runner)

    def close(self) -> None:
        """Close the async client's connections, then stop the loop thread; safe to call twice."""
        if not self._runner.loop.is_closed():
            self._runner.run(self._client.aclose())
        self._runner.close()

    def __enter__(self) -> ProviderClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
