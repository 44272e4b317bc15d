"""One connection pool split into shards, so that a pool of 1,000 costs what one of 32 does.

httpcore2's pool runs one pass over all its connections each time a request
arrives and each time a response closes, and in that pass it probes every idle
connection's socket (a ``poll``) to see whether the server closed it. With N
connections that is O(N) per request, O(N^2) for a burst: measured on loopback,
at 100 concurrent streams the probes were most of a turn's own cost, and at 1,000
the passes took more CPU than the streams' events.

:class:`ShardedTransport` keeps ``ceil(max_connections / SHARD)`` ordinary httpx2
transports (each its own pool of at most ``SHARD`` connections) and sends each
request to the shard with the fewest responses open, the first such one on a tie:
one request at a time always lands on the first shard and reuses its connection,
a burst spreads evenly, and a request waits for a connection only when every shard
is full -- the same bound as one pool of ``max_connections``. Each shard keeps its
share of the idle connections (``max_keepalive_connections`` split the same way).
Public httpx2 API only: each shard is an ``AsyncBaseTransport``; the count is
released when the response's stream is closed, as the pool releases a connection.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable

import httpx2

from railings.transport.bulk import BulkTransport

__all__ = ["SHARD", "ShardedTransport", "pooled"]

SHARD = 32  # connections per shard: the pass over a shard stays short


class ShardedTransport(httpx2.AsyncBaseTransport):
    """``make(limits)`` builds each shard's transport; ``limits`` is split among them."""

    def __init__(
        self, make: Callable[[httpx2.Limits], httpx2.AsyncBaseTransport], limits: httpx2.Limits
    ) -> None:
        size = limits.max_connections
        count = 1 if size is None else -(-size // SHARD)  # no bound: one pool, as given
        keep = limits.max_keepalive_connections
        per = httpx2.Limits(
            max_connections=None if size is None else -(-size // count),
            max_keepalive_connections=None if keep is None else -(-keep // count),
            keepalive_expiry=limits.keepalive_expiry,
        )
        self._make = make
        self._per = per
        # Built on first use: a client that never runs two turns at once has one pool.
        self.shards: list[httpx2.AsyncBaseTransport | None] = [None] * count
        self.open = [0] * count  # responses open (or being opened) per shard

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through the shard with the fewest responses open."""
        load = self.open
        index = load.index(min(load))
        shard = self.shards[index]
        if shard is None:
            shard = self.shards[index] = self._make(self._per)
        load[index] += 1
        try:
            response = await shard.handle_async_request(request)
        except BaseException:
            load[index] -= 1
            raise
        response.stream = _Counted(response.stream, self, index)
        return response

    def release(self, index: int) -> None:
        """A response of shard ``index`` was closed."""
        self.open[index] -= 1

    async def aclose(self) -> None:
        """Close every shard built so far, and with them their connections."""
        shards, self.shards = self.shards, [None] * len(self.shards)
        for shard in shards:
            if shard is not None:
                await shard.aclose()


class _Counted(httpx2.AsyncByteStream):
    """A response stream that gives its shard's count back once, when closed."""

    __slots__ = ("_index", "_inner", "_owner")

    def __init__(self, inner: object, owner: ShardedTransport, index: int) -> None:
        assert isinstance(inner, httpx2.AsyncByteStream)
        self._inner: httpx2.AsyncByteStream | None = inner
        self._owner = owner
        self._index = index

    def __aiter__(self) -> AsyncIterator[bytes]:
        assert self._inner is not None
        return self._inner.__aiter__()  # no layer of its own between the body and the reader

    async def aclose(self) -> None:
        inner, self._inner = self._inner, None
        if inner is None:
            return
        try:
            await inner.aclose()
        finally:
            self._owner.release(self._index)


def pooled(http2: bool, verify: ssl.SSLContext | bool, size: int) -> httpx2.AsyncBaseTransport:
    """The client's default transport: httpx2's, with a pool of ``size`` connections (the
    official SDKs' 1,000), 100 of them kept alive when idle, split into shards of
    :data:`SHARD`, each reading its HTTP/1.1 bodies in bulk (:mod:`.bulk`)."""
    context = httpx2.create_ssl_context(verify=verify)  # one for all the shards

    def shard(limits: httpx2.Limits) -> httpx2.AsyncBaseTransport:
        return BulkTransport(http2=http2, verify=context, limits=limits)

    limits = httpx2.Limits(max_connections=size, max_keepalive_connections=min(100, size))
    return ShardedTransport(shard, limits)
