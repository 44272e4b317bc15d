"""The shared life cycle of the scripted server and the fault proxy.

A :class:`Service` is an ``asyncio.start_server`` listener plus the set of its
live connection tasks. It can run in the caller's event loop
(``await service.start()`` / ``await service.aclose()``, or ``async with``) or,
the main API for tests and the CLI, in a background thread with its own loop
(``with service:``). Closing cancels every live connection (an ``idle`` fault
may be sleeping in one) and closes every socket, so pytest's
warnings-as-errors sees no unclosed transport.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Self

from railings.errors import ConfigurationError
from railings.testing.http import MAX_HEAD, close_writer

__all__ = ["Service"]

_START_TIMEOUT = 10.0


class Service(abc.ABC):
    """Base class: subclasses implement :meth:`handle` for one connection."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- what a subclass provides -------------------------------------------------
    @abc.abstractmethod
    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer one connection."""

    # -- addresses -----------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://host:port`` once started (the port is the one the OS chose)."""
        if self._server is None:
            raise ConfigurationError(f"{type(self).__name__} is not running")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    # -- async life cycle ------------------------------------------------------------
    async def start(self) -> None:
        """Listen on ``host``:``port`` in the running loop; ``port`` becomes the one bound.
        Starting twice raises :class:`~railings.errors.ConfigurationError`."""
        if self._server is not None:
            raise ConfigurationError(f"{type(self).__name__} already started")
        self._server = await asyncio.start_server(
            self._on_connection, self.host, self.port, limit=MAX_HEAD
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def aclose(self) -> None:
        """Stop listening, cancel every live connection and wait for them; idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await server.wait_closed()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self.handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the peer went away: nothing left to answer
        except asyncio.CancelledError:
            # The server is closing. This task is the connection's top level: ending it
            # quietly keeps asyncio's start_server callback (3.11) from logging the
            # cancellation as an unhandled error.
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)
            if not writer.transport.is_closing():
                await close_writer(writer)
            else:
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

    def serve_forever(self, ready: Callable[[Self], None] | None = None) -> None:
        """Run in the calling thread until Ctrl-C (what ``railings serve`` / ``proxy`` call).

        ``ready`` is called once listening, e.g. to print :attr:`url`.
        """

        async def main() -> None:
            async with self:
                if ready is not None:
                    ready(self)
                await asyncio.Event().wait()

        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(main())

    # -- background-thread life cycle ------------------------------------------------
    def start_in_thread(self) -> Self:
        """Run in a daemon thread with its own event loop; returns once listening."""
        if self._thread is not None:
            raise ConfigurationError(f"{type(self).__name__} already running in a thread")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=self._run_loop,
            args=(loop,),
            name=f"railings-{type(self).__name__}",
            daemon=True,
        )
        self._loop, self._thread = loop, thread
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(_START_TIMEOUT)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop the background thread started by :meth:`start_in_thread` (idempotent)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            if loop.is_running():
                asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(_START_TIMEOUT)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(_START_TIMEOUT)
            self._loop = self._thread = None

    @staticmethod
    def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def __enter__(self) -> Self:
        return self.start_in_thread()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
