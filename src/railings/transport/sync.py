"""The sync facade: the async client, driven from a private event loop thread.

No logic lives here. :class:`ProviderClient` owns one event loop running in a
daemon thread and one :class:`AsyncProviderClient` on it; each step of a
:class:`SyncTurnStream` is a coroutine handed to that loop. Retries, timeouts,
the fallback and the banner are the async client's, unchanged.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterable, Iterator
from types import TracebackType
from typing import Any, TypeVar

import httpx2

from railings.errors import StreamInterrupted
from railings.events import StreamEvent
from railings.messages import Message, ToolSpec
from railings.transport.client import AsyncProviderClient, TransportFactory
from railings.transport.config import ClientConfig
from railings.transport.context import ClientContext
from railings.transport.stream import RetryRecord, TurnStream
from railings.turn.model import Turn
from railings.turn.verdict import CallVerdict

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
        self.run(self.loop.shutdown_asyncgens())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


async def _step(stream: TurnStream) -> tuple[bool, StreamEvent | None]:
    try:
        return True, await stream.__anext__()
    except StopAsyncIteration:
        return False, None


class SyncTurnStream:
    """The sync twin of :class:`TurnStream`: iterate the events, then read ``turn``."""

    def __init__(self, stream: TurnStream, runner: _LoopThread) -> None:
        self._stream = stream
        self._runner = runner

    def __iter__(self) -> Iterator[StreamEvent]:
        return self

    def __next__(self) -> StreamEvent:
        more, event = self._runner.run(_step(self._stream))
        if not more or event is None:
            raise StopIteration
        return event

    def result(self) -> Turn:
        """Read what is left of the stream and return the turn."""
        return self._runner.run(self._stream.result())

    def close(self) -> None:
        """Abandon the stream early and release its connection."""
        self._runner.run(self._stream.aclose())

    def __enter__(self) -> SyncTurnStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def turn(self) -> Turn:
        """The turn; only once the stream has been read to its end."""
        return self._stream.turn

    @property
    def done(self) -> bool:
        """True once the stream has been read to its end and the turn is there."""
        return self._stream.done

    @property
    def interrupted(self) -> bool:
        """True when the turn ended without its proof (a PARTIAL turn returned as-is)."""
        return self._stream.interrupted

    @property
    def interruption(self) -> StreamInterrupted | None:
        """Why a PARTIAL turn was interrupted, with the bytes received (raised instead when the
        config says ``raise_on_partial``); None otherwise."""
        return self._stream.interruption

    @property
    def verdicts(self) -> tuple[CallVerdict, ...]:
        """The verdict of every local tool call (an interrupted turn executes none)."""
        return self._stream.verdicts

    @property
    def attempts(self) -> int:
        """The number of the attempt running or last run (1-based; 0 before the stream starts)."""
        return self._stream.attempts

    @property
    def retries(self) -> list[RetryRecord]:
        """Each failed attempt that was retried or replayed, in order."""
        return self._stream.retries

    @property
    def http_version(self) -> str | None:
        """The HTTP version of the latest response (``HTTP/1.1``, ``HTTP/2``); None before one."""
        return self._stream.http_version


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
    ) -> SyncTurnStream:
        """Stream one assistant turn for ``messages``. ``background`` overrides the config:
        background work never updates the foreground retry banner."""
        stream = self._client.stream_turn(messages, tools, background=background)
        return SyncTurnStream(stream, self._runner)

    def close(self) -> None:
        """Close the async client's connections, then stop the loop thread; safe to call twice."""
        if not self._runner.loop.is_closed():
            self._runner.run(self._client.aclose())
        self._runner.close()

    def __enter__(self) -> ProviderClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
