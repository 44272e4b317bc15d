"""The HTTP side of an attempt: which answers are streams, error bodies and waits, bounded.

How an attempt's body ends is judged by the sans-IO :mod:`railings.turn.attempt`;
these helpers, with no state of their own, are what the client, the guard and the
gateway need around it: whether an answer is an event stream to judge, an error body
read at most 64 KiB, and an await bounded by a deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Sequence
from typing import TypeVar

import httpx2

from railings.transport.errors_map import BOUNDARY

__all__ = ["body_chunks", "is_event_stream", "read_bounded", "within"]

T = TypeVar("T")
_ERROR_BODY_LIMIT = 64 * 1024


async def within(awaitable: Awaitable[T], deadline: float | None) -> T:
    """The result of ``awaitable``; TimeoutError once the loop clock (``loop.time()``)
    passes ``deadline``. None: no deadline."""
    if deadline is None:
        return await awaitable
    async with asyncio.timeout_at(deadline):
        return await awaitable


def is_event_stream(
    response: httpx2.Response, content_types: Sequence[str] = ("text/event-stream",)
) -> bool:
    """A 2xx answer of one of ``content_types`` (by default ``text/event-stream``): the
    only kind that is read as a stream (the client, the guard and the gateway all ask
    this; the client passes its wire's: Bedrock's ``application/vnd.amazon.eventstream``,
    Ollama's ``application/x-ndjson``)."""
    kind = response.headers.get("content-type", "").lower().partition(";")[0].strip()
    return 200 <= response.status_code < 300 and kind in content_types


async def read_bounded(response: httpx2.Response) -> bytes:
    """At most 64 KiB of an error body; a body that breaks off keeps what arrived."""
    parts: list[bytes] = []
    size = 0
    chunks: AsyncIterator[bytes] = response.aiter_bytes()
    try:
        async for chunk in chunks:
            parts.append(chunk)
            size += len(chunk)
            if size >= _ERROR_BODY_LIMIT:
                break
    except BOUNDARY:
        pass
    finally:
        await response.aclose()
    return b"".join(parts)[:_ERROR_BODY_LIMIT]


def body_chunks(response: httpx2.Response) -> AsyncGenerator[bytes, None]:
    """The body's chunks as the reader wants them: decoded when the server compressed
    it (``aiter_bytes``: gzip, deflate, br, zstd); otherwise the raw stream, which is
    the same bytes one generator layer (and one decoder call per chunk) sooner. A body
    already in memory (a mock transport's ``Response(content=...)``) is read from there."""
    coding = response.headers.get("content-encoding", "").strip().lower()
    if coding in ("", "identity") and not response.is_stream_consumed:
        return response.aiter_raw()
    return response.aiter_bytes()
