"""Resuming a kept response, sans-IO: where a broken stream may be read again, and how.

Theory of operation. A provider that keeps a response (OpenAI Responses with
``background: true``, :class:`~railings.providers.base.Resumption`) goes on generating
when the stream to the client breaks, and streams the same events again on request,
from after any event number. Resuming is therefore not a resend: nothing is generated
or billed twice, and the rule that a Partial turn is never resent still holds.

:func:`resume_point` is the one rule for *whether* an attempt may be resumed, and from
where. It may when all of these hold:

1. the request asked the provider to keep the response (the shell says so);
2. the stream broke: it was cut, went silent, ran out of time or carried bytes that
   are not the protocol. A provider error event (the response failed on the server)
   and a bound railings enforces (a turn or an event too large) are final: reading the
   same events again would end the same way;
3. the response's id and the number of an event read whole are known, and the id is a
   plain token (letters, digits, ``_``, ``-``, ``.``; not starting with ``.``): it goes
   into the URL of the next request, and a hostile server must not steer that request
   to another path (``..``) or host.

The point holds the *transcript*: the body's bytes up to the end of the last event the
reader read whole and accepted, exactly as they came, and ``after``, the number the
reader read last. Both come from reading the body again, event by event, with a reader
of the wire (:func:`_transcript`), never from numbers found in the bytes: an event may
carry a ``sequence_number`` inside a nested object, and a transcript cut at a forged
number would make the caller see events twice. A CR that ends the body ends a line, as
the reader took it (WHATWG), though the LF of a CRLF may never come. The next attempt
(:class:`~railings.turn.attempt.Attempt` given the point) reads the transcript first, so
its reader is the reader of one unbroken stream, and then the new body through a
:class:`Splice`, which drops the events the transcript already holds. What the caller
was already shown is not shown again (``shown``): an attempt that released its events
released every one it read. The reader's own rule that the numbers go 0, 1, 2 ... is
what keeps a hostile resumed stream from showing an event twice or leaving one out:
an event the splice lets through that does not follow the transcript ends the turn as
malformed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from railings.classify import FINAL_CLASSES
from railings.errors import (
    EventTooLarge,
    LocalError,
    ProviderError,
    RailingsError,
    ResumeFailed,
    TurnTooLarge,
)
from railings.providers import spec
from railings.turn.ending import Empty, Partial
from railings.turn.model import ErrorKind, Turn
from railings.turn.reader import StreamReader
from railings.wire.blocks import EventSplitter
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE

if TYPE_CHECKING:
    from railings.turn.ending import Failure

__all__ = ["ResumePoint", "Splice", "plain_id", "resume_point", "unresumed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumePoint:
    """Where a kept response's stream is read again: after event ``after`` of response
    ``response_id``. ``transcript`` is the body up to the end of that event; ``shown``:
    its events already reached the caller; ``resumed``: the events after which earlier
    attempts of this turn were resumed, oldest first (this one's ``after`` not yet)."""

    response_id: str
    after: int
    transcript: bytes
    shown: bool
    resumed: tuple[int, ...] = ()


def resume_point(
    turn: Turn,
    failure: Failure,
    body: bytes,
    *,
    sequence: int | None,
    shown: bool,
    resumed: tuple[int, ...] = (),
) -> ResumePoint | None:
    """The point an attempt of a kept response may be resumed from, or None (the rules
    of the module docstring). ``body`` is every byte the attempt read, ``sequence`` the
    number of the last event its reader read whole, ``failure`` what stopped it."""
    if turn.complete or sequence is None or not plain_id(turn.message_id):
        return None
    if isinstance(failure, LocalError | TurnTooLarge | EventTooLarge):
        return None
    error = turn.error
    if failure is None and error is not None and error.kind is ErrorKind.PROVIDER_ERROR:
        return None
    transcript, read = _transcript(turn.provider, body)
    if read != sequence:  # read again, the body ends elsewhere: no point to trust
        return None
    return ResumePoint(
        response_id=turn.message_id,
        after=sequence,
        transcript=transcript,
        shown=shown,
        resumed=resumed,
    )


_PLAIN_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,255}")


def plain_id(response_id: str) -> bool:
    """Is ``response_id`` a token that may go into a URL path as it is (rule 3)?"""
    return _PLAIN_ID.fullmatch(response_id) is not None


# Statuses that say the request may succeed later: anything else in 4xx is a refusal.
_TRANSIENT = frozenset({408, 409, 429})


def unresumed(previous: Partial | Empty, error: RailingsError) -> Partial | Empty:
    """What an attempt amounts to whose request to read a kept response again failed
    with ``error``: the ``previous`` attempt's outcome, explained by a
    :class:`~railings.errors.ResumeFailed` chained to ``error``. The point stays for a
    failure that may pass (a cut, a timeout, a 5xx, a 429), to resume again within the
    attempts; the server's refusal (any other 4xx) or a local error ends the resuming."""
    point = previous.resume
    assert point is not None
    status = error.status if isinstance(error, ProviderError) else None
    # A provider error that is not retryable (a quota or a permission answered with 429 or
    # 403, x-should-retry: false) is as final on this request as on any other.
    refused = isinstance(error, LocalError) or (
        status is not None
        and (not error.retryable or (400 <= status < 500 and status not in _TRANSIENT))
    )
    message = (
        f"reading response {point.response_id} again after event {point.after} failed: "
        f"{error.message}"
    )
    keep = None if refused else point
    turn = previous.turn if isinstance(previous, Partial) else None
    failed = ResumeFailed(
        message, empty=turn is None, response_id=point.response_id, after=point.after, turn=turn
    )
    failed.__cause__ = error
    if turn is not None:
        return Partial(turn=turn, interruption=failed, resume=keep)
    if isinstance(error, FINAL_CLASSES):
        failed.retryable = False  # a quota or a permission: sending again cannot cure it
    return Empty(error=failed, resume=keep)


def _transcript(provider: str, body: bytes) -> tuple[bytes, int | None]:
    """``body`` up to the end of the last event a reader of the wire accepts, read event
    by event, and the number it read last (None: none). The body was read once already,
    so this is bounded by the turn's bounds; it runs only when a kept stream broke."""
    reader = StreamReader(provider)
    splitter = EventSplitter()
    end, read = 0, None
    for start in range(0, len(body) + 1, _PIECE):  # in pieces: no second copy of the body
        piece = body[start : start + _PIECE]
        if start + _PIECE > len(body) and body.endswith(b"\r"):
            piece += b"\n"  # the reader took the CR as a line end (WHATWG)
        for block in splitter.feed(piece):
            try:
                reader.feed(block)
            except EventTooLarge:
                return body[:end], read
            if reader.terminated:  # the reader refused it (or the turn ended: no resume)
                return body[:end], read
            end += len(block)
            read = reader.sequence
    return body[:end], read


# How much of a body the transcript is cut from at a time.
_PIECE = 64 * 1024


class Splice:
    """The body of a resumed stream, in whole events, without those the transcript holds.

    The provider streams from after ``after``; an event numbered ``after`` or lower (sent
    again by a server that counts differently, or by a layer in between) is dropped. Events
    pass whole, so the reader never sees a block that was cut at the splice. The number is
    read from the bytes, not parsed: a forged one only makes the splice keep an old event
    (the reader refuses it: out of sequence) or drop a new one (the reader sees the gap).
    The unfinished event is held here, so it is bounded here: past ``max_event_size``
    bytes it is :class:`~railings.errors.EventTooLarge`, as the reader would say."""

    __slots__ = ("_after", "_limit", "_splitter", "_wire", "dropped", "dropped_bytes")

    def __init__(
        self, provider: str, after: int, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE
    ) -> None:
        self._wire = spec(provider)
        self._after = after
        self._limit = max_event_size
        self._splitter = EventSplitter()
        self.dropped = 0  # events dropped as already read
        self.dropped_bytes = 0  # and their bytes

    @property
    def pending(self) -> int:
        """The bytes of the unfinished event held (a shell bounds them as an event)."""
        return self._splitter.pending

    def feed(self, chunk: bytes) -> bytes:
        """The whole events ``chunk`` completed that are new, byte for byte. Raises
        :class:`~railings.errors.EventTooLarge` for an event that grew past the bound."""
        kept = []
        for block in self._splitter.feed(chunk):
            numbers = self._wire.sequence_numbers(block)
            if numbers and numbers[-1] <= self._after:
                self.dropped += 1
                self.dropped_bytes += len(block)
                continue
            kept.append(block)
        if self._splitter.pending > self._limit:
            limit = self._limit
            raise EventTooLarge(f"an event grew past {limit:,} bytes", limit=limit)
        return b"".join(kept)

    def close(self) -> bytes:
        """The unfinished event the body ended in (the reader judges it at EOF)."""
        return self._splitter.close()
