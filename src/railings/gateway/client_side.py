"""The client side of the gateway's ASGI app: reading a request, answering, noticing a
client that left. No upstream and no judging here."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = [
    "MAX_REQUEST_BODY",
    "Receive",
    "Scope",
    "Send",
    "TooLarge",
    "answer",
    "model_of",
    "read_body",
    "watch_disconnect",
]

MAX_REQUEST_BODY = 64 * 1024 * 1024

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class TooLarge(Exception):
    """A request body past :data:`MAX_REQUEST_BODY`."""


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None when the client disconnected before it ended."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST_BODY:
            raise TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def watch_disconnect(receive: Receive, gone: asyncio.Event) -> None:
    """Set ``gone`` when the client disconnects (run as a task once the body is read)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


async def answer(
    send: Send,
    status: int,
    body: bytes,
    content_type: str,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """A whole answer of the gateway's own, with its length."""
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": body})


def model_of(body: bytes) -> str | None:
    """The ``model`` a request body names (for the journal, the span and the log)."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else None
