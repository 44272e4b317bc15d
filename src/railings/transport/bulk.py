"""HTTP/1.1 bodies read in bulk: every chunk already received, handed over at once.

A provider flushes one SSE event per HTTP chunk. httpcore2 reads the socket 64 KiB
at a time, but hands the body up one chunk per step, each through seven async
generator layers (httpcore2's connection, response stream and pool stream, httpx2's
response stream, bound stream, ``aiter_raw`` and ``aiter_bytes``) and then through the
client's own per-chunk work, which on loopback cost more than decoding the event
(docs/PERFORMANCE.md, "The read path"). When the client is busier than the socket,
one read holds dozens of chunks.

:class:`BulkTransport` is httpx2's own ``AsyncHTTPTransport``, except that each
HTTP/1.1 connection of its pool hands over, per step, every chunk that h11 has
already decoded from the bytes received: :func:`_receive_in_bulk` is httpcore2's
``_receive_response_body`` with one inner loop that keeps asking h11 for the next
event while it has one without reading the socket. Nothing waits for more bytes
(a lone chunk goes up at once, as before), the bytes and their order are the same,
and an error found after some chunks is raised only once those chunks went up. A
chunked body's chunks are decoded in bulk too (:mod:`.chunks`: every well-formed chunk
received in one h11 event, anything else decoded by h11's own reader). HTTP/2
connections are left as they are.

This reaches into httpcore2's private HTTP/1.1 connection (``_receive_response_body``,
``_receive_event``, ``_h11_state``) and the pool's stream (``_stream``,
``_connection``), because no public hook exists for it; ``tests/test_transport_read_path.py``
pins every name used. So it is an acceleration (:mod:`railings.accelerations`) gated to
the versions the suite verified (:mod:`.verified`): on any other, :func:`install` leaves
the connection as httpcore2 made it, and the client's default transport is httpx2's own
(:func:`.shards.pooled`). If a verified release lacks a name, :func:`install` leaves the
connection alone too (slower, never wrong) and that test fails.
"""

from __future__ import annotations

import types
from collections.abc import AsyncGenerator
from typing import Any

import h11
import httpcore2
import httpx2

from railings.transport import chunks, verified

__all__ = ["BulkTransport", "install"]


class BulkTransport(httpx2.AsyncHTTPTransport):
    """``httpx2.AsyncHTTPTransport`` whose HTTP/1.1 responses are read in bulk."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """httpx2's response, its connection set to read in bulk (:func:`install`)."""
        response = await super().handle_async_request(request)
        install(response)
        return response


def install(response: httpx2.Response) -> bool:
    """Make the HTTP/1.1 connection that carries ``response`` (as this module's
    transport returns it) read its bodies in bulk; False: not such a connection, or
    httpx2, httpcore2 and h11 are not the versions verified (:mod:`.verified`)."""
    if not verified.MATCHES:
        return False
    pool_stream = getattr(response.stream, "_httpcore_stream", None)
    connection_stream = getattr(pool_stream, "_stream", None)
    connection = getattr(connection_stream, "_connection", None)
    if type(connection) is not httpcore2.AsyncHTTP11Connection:
        return False
    if not all(hasattr(connection, name) for name in _NEEDED):
        return False
    if "_receive_response_body" not in vars(connection):
        # Bound on the instance: only this transport's connections read in bulk.
        connection._receive_response_body = types.MethodType(_receive_in_bulk, connection)  # type: ignore[method-assign]
    return True


# What _receive_in_bulk uses of httpcore2's HTTP/1.1 connection.
_NEEDED = ("_receive_response_body", "_receive_event", "_h11_state")


async def _receive_in_bulk(self: Any, request: httpcore2.Request) -> AsyncGenerator[bytes]:
    """httpcore2's ``AsyncHTTP11Connection._receive_response_body``, handing over per
    step every ``Data`` event h11 can give without a read of the socket."""
    timeouts = request.extensions.get("timeout", {})
    timeout = timeouts.get("read", None)  # read once, at the body's start, as httpcore2 does
    state: h11.Connection = self._h11_state
    chunks.wrap(state)  # a chunked body: every chunk received decoded in one event
    next_event, data = state.next_event, h11.Data  # the inner loop runs once per event
    while True:
        event = await self._receive_event(timeout=timeout)
        if type(event) is data:
            parts = [event.data]
            failure: httpcore2.RemoteProtocolError | None = None
            try:
                event = next_event()
                while type(event) is data:
                    parts.append(event.data)
                    event = next_event()
            except h11.RemoteProtocolError as exc:  # as httpcore2's _receive_event maps it
                failure = httpcore2.RemoteProtocolError(exc)
                failure.__cause__ = exc
            yield bytes(parts[0]) if len(parts) == 1 else b"".join(parts)
            if failure is not None:
                raise failure  # after the chunks that came before it
        if isinstance(event, h11.EndOfMessage) or event is h11.PAUSED:
            break
