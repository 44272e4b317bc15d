"""What an attempt's ending means: the typed error or interruption for each way it ends.

The client's attempt loop (:mod:`.client`) reads the stream; these functions,
with no state of their own, turn how it ended into the railings error it raises
or the interruption it returns with a Partial turn, and bound the waits and
error bodies around it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import httpx2

from railings.classify import (
    INTERRUPTED_MESSAGE,
    class_for_provider_type,
    classify_text,
    interrupted_message,
)
from railings.errors import MalformedStream, ProviderError, RailingsError, StreamInterrupted
from railings.transport.errors_map import BOUNDARY
from railings.turn.model import ErrorKind, Turn

__all__ = ["empty_error", "interrupted", "is_event_stream", "read_bounded", "within"]

T = TypeVar("T")
_ERROR_BODY_LIMIT = 64 * 1024


async def within(awaitable: Awaitable[T], deadline: float | None) -> T:
    """The result of ``awaitable``; TimeoutError once the loop clock (``loop.time()``)
    passes ``deadline``. None: no deadline."""
    if deadline is None:
        return await awaitable
    async with asyncio.timeout_at(deadline):
        return await awaitable


def is_event_stream(response: httpx2.Response) -> bool:
    """A 2xx ``text/event-stream`` answer: the only kind that is read as a stream (the
    client, the guard and the gateway all ask this)."""
    kind = response.headers.get("content-type", "").lower()
    return 200 <= response.status_code < 300 and kind.startswith("text/event-stream")


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


def _event_error(turn: Turn) -> ProviderError:
    """The typed error for a provider error event (the turn's abrupt end)."""
    assert turn.error is not None
    ptype, message = turn.error.provider_type, turn.error.message
    cls = class_for_provider_type(ptype)
    if cls is ProviderError:
        by_text = classify_text(message)
        if by_text is not None and issubclass(by_text, ProviderError):
            cls = by_text
    return cls(f"provider error event: {message}", provider_type=ptype)


def empty_error(turn: Turn, failure: RailingsError | None, received: bytes) -> RailingsError:
    """Why an attempt that delivered no content failed."""
    if isinstance(failure, StreamInterrupted):
        failure.turn, failure.received = turn, received
        return failure
    if failure is not None:
        return failure
    assert turn.error is not None
    if turn.error.kind is ErrorKind.PROVIDER_ERROR:
        return _event_error(turn)
    if turn.error.kind is ErrorKind.MALFORMED_STREAM:
        return MalformedStream(turn.error.message, retryable=True)
    return StreamInterrupted(INTERRUPTED_MESSAGE, empty=True, received=received, turn=turn)


def interrupted(
    turn: Turn, failure: RailingsError | None, received: bytes
) -> tuple[Turn, StreamInterrupted]:
    """A PARTIAL turn and the interruption that explains it (never retried)."""
    assert turn.error is not None
    cause: RailingsError | None = failure
    if isinstance(failure, StreamInterrupted):
        interruption = failure
        interruption.turn, interruption.received = turn, received
        interruption.empty, interruption.retryable = False, False
    else:
        if failure is None and turn.error.kind is ErrorKind.PROVIDER_ERROR:
            cause = _event_error(turn)
        detail = cause.message if cause is not None else turn.error.message
        message = interrupted_message(detail)
        interruption = StreamInterrupted(message, empty=False, received=received, turn=turn)
        interruption.__cause__ = cause
    if failure is not None:
        turn = dataclasses.replace(
            turn, error=dataclasses.replace(turn.error, message=interruption.message)
        )
        interruption.turn = turn
    return turn, interruption
