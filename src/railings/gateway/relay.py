"""Passing an upstream answer on as it came: status, headers, body, chunk by chunk.

Nothing is held: each chunk read is sent on. A client that leaves cancels the read
(:func:`~railings.gateway.client_side.until_gone`), which closes the upstream
response and its connection.
"""

from __future__ import annotations

import httpx2

from railings.gateway.client_side import Send
from railings.gateway.record import TurnRecord
from railings.gateway.upstream import response_headers
from railings.redact import redact
from railings.transport.errors_map import BOUNDARY, map_exception

__all__ = ["UpstreamBroke", "relay"]


class UpstreamBroke(Exception):
    """The upstream broke off a body already being relayed: the ASGI server aborts the
    client's connection (nothing railings can send would say "cut" in that body's format)."""


async def relay(response: httpx2.Response, send: Send, record: TurnRecord | None) -> None:
    """Pass ``response`` on as it came. A body the upstream broke off is broken off for
    the client too (:class:`UpstreamBroke` aborts the connection): ending it normally
    would make a cut body look whole."""
    try:
        headers = response_headers(response.headers.raw, keep_length=True)
        await send(
            {"type": "http.response.start", "status": response.status_code, "headers": headers}
        )
        try:
            async for chunk in response.aiter_raw():
                if record is not None:
                    record.sent_first_byte()
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except BOUNDARY as exc:
            raise UpstreamBroke(redact(map_exception(exc).message)) from None
        await send({"type": "http.response.body", "body": b""})
    finally:
        await response.aclose()
