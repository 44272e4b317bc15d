"""The upstream sockets on asyncio itself: httpcore2's network backend, without anyio.

httpx2 reads each body chunk through httpcore2's network backend, by default anyio's.
Per read, that backend enters an ``anyio.fail_after`` scope (a context manager around
a cancel scope, which looks up the task and its state) and an exception-mapping
context manager, and anyio's stream checks its own state before it waits for data.
Measured through the gateway: a third of the CPU of one relayed event. With a
thousand streams open each read is one event, so that is per event.

:class:`AsyncioBackend` is the same interface (``httpcore2.AsyncNetworkBackend``, the
documented extension point: httpcore2 parses HTTP/1.1 with h11 and HTTP/2 with h2 on
any backend) on a plain :class:`asyncio.Protocol`: a read takes what the loop already
received, or waits for the next ``data_received``. The read timeout is one lazy timer
per connection (like :class:`~railings.transport.gaps.GapWatch`): each read moves a
deadline, the timer compares when it fires. TLS is the loop's own (``loop.start_tls``:
uvloop's is in C, anyio's is Python over a memory BIO); bytes received before the
handshake are refused (:meth:`AsyncioStream.start_tls`). Errors are httpcore2's own
(``ConnectError``, ``ReadError``, ``ReadTimeout`` ...), so httpx2 maps them as it maps
anyio's.

It is an opt-in (``app(..., network="asyncio")``, ``railings gateway --network
asyncio``), never the default: the upstream connection is the security boundary, and
the default there is the stock backend. httpx2 takes no backend, so using this one
means replacing its transport's private pool (:func:`railings.gateway.upstream.
asyncio_transport`), which is done only on the httpx2 / httpcore2 versions the tests
verified. ``tests/test_gateway_tls.py`` and ``tests/test_gateway_network.py`` run the
same cases through both backends and require the same bytes and the same exception.
"""

from __future__ import annotations

import asyncio
import collections
import math
import ssl
from collections.abc import Iterable
from typing import Any, cast

import httpcore2
from httpcore2 import (
    ConnectError,
    ConnectTimeout,
    ReadError,
    ReadTimeout,
    WriteError,
    WriteTimeout,
)

__all__ = ["AsyncioBackend", "AsyncioStream"]

_HIGH = 256 * 1024  # buffered bytes past which the socket stops being read
# What httpcore2 asks of a stream -> what the asyncio transport calls it.
_EXTRA_INFO = {
    "ssl_object": "ssl_object",
    "client_addr": "sockname",
    "server_addr": "peername",
    "socket": "socket",
}
_SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


class _Protocol(asyncio.Protocol):
    """The bytes the loop received for one connection, and who waits for them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.chunks: collections.deque[bytes] = collections.deque()
        self.size = 0
        self.eof = False
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.paused = False
        self.write_waiter: asyncio.Future[None] | None = None
        self.write_paused = False
        # The lazy read timer: the handle fires at ``at`` and compares with ``until``.
        self.handle: asyncio.TimerHandle | None = None
        self.at = 0.0
        self.until = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports have asyncio.Transport's methods without being subclasses.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        waiter = self.waiter  # _release, inlined: this runs for every chunk received
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self.size > _HIGH and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        self.eof = True
        _release(self.waiter)
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        if exc is not None and self.error is None:
            self.error = exc
        _release(self.waiter)
        _release(self.write_waiter)
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        _release(self.write_waiter)

    def watch(self, timeout: float) -> None:
        """The current read may wait until ``timeout`` seconds from now."""
        until = self.until = self.loop.time() + timeout
        if self.handle is None or until < self.at:
            self._schedule(until)

    def _schedule(self, at: float) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.at = at
        self.handle = self.loop.call_at(at, self._check)

    def _check(self) -> None:
        self.handle = None
        waiter = self.waiter
        if waiter is None or waiter.done():
            return  # between reads: the next read schedules again
        if self.loop.time() + 1e-3 >= self.until:  # call_at may run a hair early
            waiter.set_exception(ReadTimeout("timed out"))
        else:
            self._schedule(self.until)


def _release(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


class AsyncioStream(httpcore2.AsyncNetworkStream):
    """One upstream connection (see the module docstring)."""

    def __init__(self, protocol: _Protocol, transport: asyncio.Transport) -> None:
        self._protocol = protocol
        self._transport = transport

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """The next bytes received (at most ``max_bytes``); ``b""`` at the end."""
        p = self._protocol
        if not p.chunks:
            if not p.eof:
                if self._transport.is_closing():
                    raise ReadError("the connection is closed")
                if timeout is not None:
                    p.watch(timeout)
                else:
                    p.until = math.inf  # no limit: a timer left by an earlier read never fires
                p.waiter = p.loop.create_future()
                try:
                    await p.waiter
                finally:
                    p.waiter = None
            if not p.chunks:
                if p.error is not None:
                    raise ReadError(str(p.error) or type(p.error).__name__)
                return b""
        data = p.chunks.popleft()
        if len(data) > max_bytes:
            p.chunks.appendleft(data[max_bytes:])
            data = data[:max_bytes]
        p.size -= len(data)
        if p.paused and p.size <= _HIGH // 4:
            p.paused = False
            self._transport.resume_reading()
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send ``buffer``; waits only while the transport's buffer is full."""
        if not buffer:
            return
        p = self._protocol
        if (p.eof and p.error is not None) or self._transport.is_closing():
            raise WriteError("the connection is closed")
        self._transport.write(buffer)
        if not p.write_paused:
            return
        p.write_waiter = p.loop.create_future()
        try:
            await asyncio.wait_for(p.write_waiter, timeout)
        except TimeoutError:
            raise WriteTimeout("timed out") from None
        finally:
            p.write_waiter = None
        if p.error is not None:
            raise WriteError(str(p.error) or type(p.error).__name__)

    async def aclose(self) -> None:
        """Close the connection at once, as anyio's backend does: ``close()`` would wait
        to send what is buffered, forever when the peer stopped reading (after a
        ``WriteTimeout``, say), and keep the socket open meanwhile."""
        self._transport.abort()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        """The same connection with TLS on it (the loop's own TLS).

        Bytes that arrived before the handshake were never inside TLS: anyone on the
        path may have written them (the STARTTLS injection class, CVE-2011-0411). The
        loop's ``start_tls`` keeps this protocol, whose buffer would hand them up as the
        first bytes read after a valid handshake, so they are refused instead, as
        anyio's backend refuses them (its TLS reads them as a broken handshake). The
        check and ``loop.start_tls`` run in one step of the loop: anything received
        after it goes to TLS."""
        p = self._protocol
        if p.chunks or p.eof:
            self._transport.abort()
            raise ConnectError("bytes arrived before the TLS handshake")
        try:
            transport = await asyncio.wait_for(
                p.loop.start_tls(self._transport, p, ssl_context, server_hostname=server_hostname),
                timeout,
            )
        except TimeoutError:
            self._transport.abort()
            raise ConnectTimeout("timed out") from None
        except (OSError, ssl.SSLError, ConnectionError) as exc:
            self._transport.abort()
            raise ConnectError(str(exc)) from exc
        if transport is None:
            raise ConnectError("the connection closed during the TLS handshake")
        p.transport = transport
        return AsyncioStream(p, transport)

    def get_extra_info(self, info: str) -> Any:
        """What httpcore2 asks of a stream: the TLS object, the addresses, the socket,
        and whether an idle connection has something to read (the peer closed it)."""
        transport = self._transport
        if info == "is_readable":
            p = self._protocol
            return bool(p.chunks) or p.eof or transport.is_closing()
        name = _EXTRA_INFO.get(info)
        return None if name is None else transport.get_extra_info(name)


class AsyncioBackend(httpcore2.AsyncNetworkBackend):
    """httpcore2's network backend on the running asyncio loop (module docstring)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        """A TCP connection to ``host:port`` (TCP_NODELAY on, as asyncio sets it)."""
        loop = asyncio.get_running_loop()
        protocol = _Protocol(loop)
        try:
            transport, _ = await asyncio.wait_for(
                loop.create_connection(
                    lambda: protocol,
                    host,
                    port,
                    local_addr=(local_address, 0) if local_address else None,
                ),
                timeout,
            )
        except TimeoutError:
            raise ConnectTimeout("timed out") from None
        except OSError as exc:
            raise ConnectError(str(exc)) from exc
        sock = transport.get_extra_info("socket")  # asyncio's TransportSocket
        try:
            for option in socket_options or ():
                sock.setsockopt(*option)
        except OSError as exc:
            transport.abort()
            raise ConnectError(str(exc)) from exc
        return AsyncioStream(protocol, transport)

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep``."""
        await asyncio.sleep(seconds)
