"""What an attempt's ending means: the typed error or interruption for each way it ends.

The client (:mod:`.client`) reads the stream; these functions, with no state of
their own, turn how it ended into the outcome the attempt machine
(:mod:`.machine`) decides on -- each error or interruption built once, complete
-- and bound the waits and error bodies around it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import TypeVar

import httpx2

from railings.classify import (
    INTERRUPTED_MESSAGE,
    class_for_provider_type,
    classify_text,
    interrupted_message,
)
from railings.errors import (
    LocalError,
    MalformedStream,
    ProviderError,
    RailingsError,
    StreamInterrupted,
    TurnTooLarge,
)
from railings.redact import redact
from railings.transport.errors_map import BOUNDARY, Cut
from railings.transport.machine import AttemptOutcome, Complete, Empty, Partial
from railings.turn.model import ErrorKind, Outcome, Turn, TurnError

__all__ = [
    "Failure",
    "empty_error",
    "interrupted",
    "is_event_stream",
    "outcome",
    "read_bounded",
    "too_large",
    "within",
]

# What stopped an attempt's reading: a railings error, a cut to build once the turn is
# known, or None (the body ended).
Failure = RailingsError | Cut | None

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


def _event_error(error: TurnError) -> ProviderError:
    """The typed error for a provider error event (the turn's abrupt end)."""
    ptype, message = error.provider_type, error.message
    cls = class_for_provider_type(ptype)
    if cls is ProviderError:
        by_text = classify_text(message)
        if by_text is not None and issubclass(by_text, ProviderError):
            cls = by_text
    return cls(f"provider error event: {message}", provider_type=ptype)


def outcome(
    turn: Turn, failure: Failure, received: bytes, *, over_http2: bool = False
) -> AttemptOutcome:
    """What an attempt that got an event stream amounts to, for the attempt machine.

    ``turn`` is what the reader assembled, ``failure`` what stopped the reading
    (None: the body ended), ``received`` the bytes kept. Each error is built here,
    once, with everything it carries.
    """
    if isinstance(failure, LocalError):
        return Empty(error=failure)  # misuse mid-stream (a railings bug): raised, never kept
    if isinstance(failure, TurnTooLarge) and turn.error is not None:
        # Resending would be answered the same way: the turn says so too.
        turn = dataclasses.replace(turn, error=dataclasses.replace(turn.error, retryable=False))
        failure = too_large(failure, turn)
    if turn.outcome is Outcome.COMPLETE:
        return Complete(turn=turn)
    if turn.outcome is Outcome.PARTIAL:
        turn, interruption = interrupted(turn, failure, received)
        return Partial(turn=turn, interruption=interruption, over_http2=over_http2)
    return Empty(error=empty_error(turn, failure, received), over_http2=over_http2)


def too_large(error: TurnTooLarge, turn: Turn) -> TurnTooLarge:
    """``error`` again, now with the ``turn`` it ended."""
    out = TurnTooLarge(
        error.message, bound=error.bound, limit=error.limit, max_tokens=error.max_tokens, turn=turn
    )
    out.__cause__ = error.__cause__
    return out


def empty_error(turn: Turn, failure: Failure, received: bytes) -> RailingsError:
    """Why an attempt that delivered no content failed."""
    if isinstance(failure, Cut):
        return failure.error(empty=True, received=received, turn=turn)
    if failure is not None:
        return failure
    error = turn.error
    if error is not None and error.kind is ErrorKind.PROVIDER_ERROR:
        return _event_error(error)
    if error is not None and error.kind is ErrorKind.MALFORMED_STREAM:
        return MalformedStream(error.message, retryable=True)
    return StreamInterrupted(INTERRUPTED_MESSAGE, empty=True, received=received, turn=turn)


def interrupted(turn: Turn, failure: Failure, received: bytes) -> tuple[Turn, StreamInterrupted]:
    """A PARTIAL turn and the interruption that explains it (never retried).

    When something stopped the reading, the turn's error says so in the
    interruption's words; the interruption carries that turn.
    """
    if isinstance(failure, Cut):
        message = redact(failure.message)
        turn = _with_message(turn, message)
        return turn, failure.error(empty=False, received=received, turn=turn)
    cause: RailingsError | None = failure
    error = turn.error
    if failure is None and error is not None and error.kind is ErrorKind.PROVIDER_ERROR:
        cause = _event_error(error)
    if cause is not None:
        message = interrupted_message(cause.message)
    else:
        message = interrupted_message(error.message) if error else INTERRUPTED_MESSAGE
    if failure is not None:
        turn = _with_message(turn, redact(message))
    interruption = StreamInterrupted(message, empty=False, received=received, turn=turn)
    if cause is not None:
        interruption.__cause__ = cause  # what ``raise ... from cause`` would record
    return turn, interruption


def _with_message(turn: Turn, message: str) -> Turn:
    """``turn`` with its error's message replaced (the interruption's words)."""
    if turn.error is None:
        return turn
    return dataclasses.replace(turn, error=dataclasses.replace(turn.error, message=message))
