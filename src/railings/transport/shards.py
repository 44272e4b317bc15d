"""One connection pool split into shards, so that a pool of 1,000 costs what one of 32 does.

httpcore2's pool runs one pass over all its connections each time a request
arrives and each time a response closes, and in that pass it probes every idle
connection's socket (a ``poll``) to see whether the server closed it. With N
connections that is O(N) per request, O(N^2) for a burst: with hundreds of
concurrent streams the passes cost more CPU than the streams' events
(docs/PERFORMANCE.md, "The read path").

:class:`ShardedTransport` keeps ``ceil(max_connections / SHARD)`` ordinary httpx2
transports (never more than ``max_keepalive_connections``, so each keeps at least
one connection alive) and sends each request to the shard with the fewest
responses open, the first such one on a tie: one request at a time always lands
on the first shard and reuses its connection, and a burst spreads evenly. The
limits are split exactly: the first ``max_connections % count`` shards hold one
connection more than the others, and so for the idle connections kept alive, so
the shards together hold ``max_connections`` connections and keep
``max_keepalive_connections``, as one pool would. Since the larger shards come
first and a tie goes to the first, a request lands on a shard with a free slot
whenever one has, and waits for a connection only when every shard is full: the
same bound as one pool. Public httpx2 API only: each shard is an
``AsyncBaseTransport``; the count is released when the response's stream is
closed, as the pool releases a connection.

Not over HTTP/2. An HTTP/2 connection multiplexes the streams of every request
to its origin, so a burst of 1,000 needs one connection, or a few (the server's
``max_concurrent_streams`` each), and one pool's pass over them is short; shards
would each open a connection of their own for the same origin (20 for a burst of
20, against 1). Routing to a shard that already holds a connection would keep
both, but would have to know which connections speak HTTP/2, which only the pool
knows (ALPN decides, per connection). So :func:`pooled` keeps one pool, as
httpx2 does, wherever HTTP/2 may be used: an ``https`` origin with HTTP/2 on
(httpcore2 negotiates HTTP/2 only through TLS, since HTTP/1.1 stays allowed).
A plain ``http`` origin, or HTTP/2 turned off -- in the config, or for good by
the HTTP/2 -> HTTP/1.1 fallback (:mod:`.fallback`), whose HTTP/1.1 client is
built anew -- gets the shards.

Shards and the bulk read path are accelerations (:mod:`railings.accelerations`): with the
switch off, :func:`pooled` returns httpx2's own ``AsyncHTTPTransport``, one pool of the
same limits. The bulk read path uses private names of httpx2, httpcore2 and h11, so it is
used only on the versions the suite verified (:mod:`.verified`); on others the shards
hold httpx2's own transports.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable

import httpx2

from railings import accelerations
from railings.transport import verified
from railings.transport.bulk import BulkTransport

__all__ = ["SHARD", "ShardedTransport", "pooled"]

SHARD = 32  # connections per shard: the pass over a shard stays short


class ShardedTransport(httpx2.AsyncBaseTransport):
    """``make(limits)`` builds each shard's transport; ``limits`` is split among them."""

    def __init__(
        self, make: Callable[[httpx2.Limits], httpx2.AsyncBaseTransport], limits: httpx2.Limits
    ) -> None:
        size = limits.max_connections
        keep = limits.max_keepalive_connections
        count = 1 if size is None else -(-size // SHARD)  # no bound: one pool, as given
        if keep:  # every shard keeps a connection alive (none kept: no bound on shards)
            count = min(count, keep)
        self.make = make  # builds each shard's transport from its limits
        # Each shard's limits: the totals split exactly (the module docstring).
        self.limits = [
            httpx2.Limits(
                max_connections=_share(size, count, index),
                max_keepalive_connections=_share(keep, count, index),
                keepalive_expiry=limits.keepalive_expiry,
            )
            for index in range(count)
        ]
        # Built on first use: a client that never runs two turns at once has one pool.
        self.shards: list[httpx2.AsyncBaseTransport | None] = [None] * count
        self.open = [0] * count  # responses open (or being opened) per shard

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through the shard with the fewest responses open."""
        load = self.open
        index = load.index(min(load))
        shard = self.shards[index]
        if shard is None:
            shard = self.shards[index] = self.make(self.limits[index])
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


def _share(total: int | None, count: int, index: int) -> int | None:
    """Shard ``index``'s share of ``total`` split among ``count``: the first
    ``total % count`` shards one more than the rest; None (no bound) stays None."""
    if total is None:
        return None
    return total // count + (index < total % count)


def pooled(
    http2: bool, verify: ssl.SSLContext | bool, size: int, *, tls: bool = True
) -> httpx2.AsyncBaseTransport:
    """The client's default transport: httpx2's, with a pool of ``size`` connections (the
    official SDKs' 1,000), 100 of them kept alive when idle. With the accelerations on
    (read here, when a client builds its transport), each reads its HTTP/1.1 bodies in
    bulk (:mod:`.bulk`, on the verified versions only), and the pool is split into shards
    of :data:`SHARD` unless HTTP/2 may be used (``http2`` on an origin spoken to over TLS,
    ``tls``: see the module docstring). Off: httpx2's ``AsyncHTTPTransport`` as it is."""
    context = httpx2.create_ssl_context(verify=verify)  # one for all the shards
    limits = httpx2.Limits(max_connections=size, max_keepalive_connections=min(100, size))
    if not accelerations.enabled():
        return httpx2.AsyncHTTPTransport(http2=http2, verify=context, limits=limits)
    kind = BulkTransport if verified.MATCHES else httpx2.AsyncHTTPTransport
    if http2 and tls:
        return kind(http2=True, verify=context, limits=limits)

    def shard(limits: httpx2.Limits) -> httpx2.AsyncBaseTransport:
        return kind(http2=http2, verify=context, limits=limits)

    return ShardedTransport(shard, limits)
