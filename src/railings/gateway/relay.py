"""Asking the upstream, and passing its answer on as it came: status, headers, body,
chunk by chunk.

Nothing is held: each chunk read is sent on. A client that leaves cancels the read
(:func:`~railings.gateway.client_side.until_gone`), which closes the upstream
response and its connection.
"""

from __future__ import annotations

import httpx2

from railings.gateway.client_side import Send, answer
from railings.gateway.record import TurnRecord
from railings.gateway.upstream import response_headers
from railings.redact import redact
from railings.transport.errors_map import BOUNDARY, map_exception

__all__ = ["UpstreamBroke", "open_upstream", "pass_through", "relay"]


class UpstreamBroke(Exception):
    """The upstream broke off a body already being relayed: the ASGI server aborts the
    client's connection (nothing railings can send would say "cut" in that body's format)."""


async def relay(
    response: httpx2.Response, send: Send, record: TurnRecord | None, *, no_retry: bool = False
) -> None:
    """Pass ``response`` on as it came. A body the upstream broke off is broken off for
    the client too (:class:`UpstreamBroke` aborts the connection): ending it normally
    would make a cut body look whole. ``no_retry``: the gateway already resent the
    request, so the answer says ``x-should-retry: false`` in place of the upstream's."""
    try:
        headers = response_headers(response.headers.raw, keep_length=True)
        if no_retry:
            headers = [(n, v) for n, v in headers if n.lower() != b"x-should-retry"]
            headers.append((b"x-should-retry", b"false"))
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


async def open_upstream(
    pool: httpx2.AsyncClient,
    method: str,
    url: str,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
) -> httpx2.Response:
    """Send one request upstream with the client's headers and none of httpx2's own
    defaults; the answer's body is left unread (a stream)."""
    request = pool.build_request(method, url, headers=headers, content=body)
    sent = {name.lower() for name, _ in headers}
    for default in (b"accept", b"accept-encoding", b"user-agent"):  # httpx2's own
        if default not in sent and default.decode() in request.headers:
            del request.headers[default.decode()]
    return await pool.send(request, stream=True)


async def pass_through(
    pool: httpx2.AsyncClient,
    method: str,
    url: str,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    send: Send,
) -> None:
    """A request the gateway does not judge: one attempt, its answer relayed as it came,
    or a plain-text 502 when the upstream cannot be reached."""
    try:
        response = await open_upstream(pool, method, url, headers, body)
    except BOUNDARY as exc:
        error = map_exception(exc)
        text = f"railings gateway: {redact(error.message)}\n".encode()
        # One attempt, not resent here: the client's own retry rules decide.
        retry = [(b"x-should-retry", b"true" if error.retryable else b"false")]
        await answer(send, 502, text, "text/plain; charset=utf-8", retry)
        return
    await relay(response, send, None)
