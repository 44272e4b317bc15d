"""The guard's shell around one :class:`~railings.turn.attempt.Attempt` per watched body.

Theory of operation. Everything that decides -- the termination proof, the bounds
on one turn, the content clock, Complete / Partial / Empty -- is the sans-IO
attempt's, as it is for the client, the gateway and ``replay``. What is left here is
what the guard's I/O needs, shared by its sync and async shells
(:mod:`.guarded`):

* **the codings.** Each raw chunk the SDK will read is decoded the way httpx2
  decodes it (:mod:`.coding`, in pieces of at most 1 MiB). Bytes pass through as
  they come, so nothing is held back from the SDK (``hold=False``), and the attempt
  reads every byte, in slices of at most 128 KiB.
* **when it reads.** Until the first content each piece is fed at once, with the time
  it arrived (``time.monotonic()``): the first content arms the idle gap. After it,
  pieces gather and are fed once per 64 KiB (:mod:`.gather`): the reader reads a body
  the same however it is split, and its cost per call is then paid per 64 KiB, not
  per network piece. A bound is seen at most 64 KiB late, and always before the
  proof: an SDK may stop at the proof and close the body (the openai SDK does, at
  ``[DONE]``), so what gathered is read before a piece that may carry it goes on
  (:class:`.gather.ProofMarkers`, the spec's own spellings; the reader alone decides
  what proves). A batch is stamped with the time its last piece arrived, which only
  ever makes the content clock later, never earlier.
* **the idle gap.** Until the first content (a text, thinking or argument delta)
  the SDK's own read timeout governs: a reasoning model may send its headers, or
  ``response.created``, and then think for minutes. At the first content the
  request's read timeout is lowered to the guard's ``idle`` (never raised), where
  the connection reads it (:func:`.guarded.follow_read_timeout`): from then on a
  silence that long is the socket's read timeout. So the gap is not one of the
  attempt's clocks: the guard sees the time only when bytes arrive.
* **the content clock.** Keep-alives (comments, Anthropic ``ping`` events) reset
  the socket's timer but not the attempt's content clock (``first_content`` before
  the first content, ``content_idle`` after). The attempt says when that clock would
  run out as things stand (:meth:`Attempt.read_timeout`); the last content only moves
  later, so until that instant no chunk can find it run out, and each chunk costs one
  comparison. From that instant on, what gathered is read piece by piece, each at
  the time it came, the chunk in hand last, and :meth:`Attempt.overdue` decides (the
  gap is ignored there): content in the chunk that finds the clock due counts, and a
  stream of only keep-alives is cut at the first chunk from the limit on, never
  before it.

Two kinds of ending. Where the stream ended without raising (EOF without the proof,
a bound, a body that does not decode, only keep-alives), the watch returns the httpx2
exception the guard raises (:mod:`.watch_errors`). Where the inner stream raised,
:meth:`StreamWatch.broke` returns only the verdict: the guard lets that very
exception through, the verdict attached. A body closed before its end raises nothing
at the close, whatever it held: the caller stopped before the proof, so it has no
finished turn to trust, as when it stops early within every bound; and httpx2
closes a body from its iterators' ``finally``, where an exception would be lost.
"""

from __future__ import annotations

import contextlib
import math
import time
import zlib

import httpx2

from railings.errors import StreamInterrupted, TurnTooLarge
from railings.limits import TurnLimits
from railings.transport import watch_errors as errors
from railings.transport.coding import BodyDecoder, Unreadable
from railings.transport.gather import GATHER, ProofMarkers
from railings.transport.idle import arm_idle
from railings.turn.attempt import Attempt, Clocks
from railings.turn.ending import AttemptOutcome, Complete, Empty
from railings.turn.model import ErrorKind, Turn
from railings.turn.profile import WIRE, Profile

__all__ = ["StreamWatch"]

_now = time.monotonic
# The most the attempt reads at once (a batch that gathered, or a piece the coding gave):
# what the reader makes of one feed (its lines, frames and events) stays small.
_SLICE = 2 * GATHER


class StreamWatch:
    """One watched stream. ``take(chunk)`` per raw chunk, then ``ended()`` (EOF: None or
    the httpx2 error to raise) or ``broke(exc)`` (the inner stream raised: None or the
    verdict to attach to ``exc``).

    ``timeouts`` is the request's ``timeout`` extension, the dict httpcore2 reads
    the read timeout from: changed in place at the first content (see the module
    docstring); ``idle`` the guard's gap from then on (None: the SDK's stays).
    """

    __slots__ = (
        "_armed",
        "_attempt",
        "_decoder",
        "_due",
        "_gathered",
        "_gathers",
        "_idle",
        "_last_byte",
        "_markers",
        "_refused",
        "_size",
        "_timeouts",
        "_times",
        "gap",
        "provider",
    )

    def __init__(
        self,
        provider: str,
        timeouts: dict[str, object] | None,
        idle: float | None,
        applied: list[str] | Unreadable,
        *,
        max_tokens: int | None = None,
        limits: TurnLimits | None = None,
        content_idle: float | None = None,
        first_content: float | None = None,
        profile: Profile = WIRE,
    ) -> None:
        self.provider = provider
        self._timeouts = timeouts
        self._idle = idle
        read = timeouts.get("read") if timeouts is not None else None
        # The read timeout in force: the SDK's until the first content, then the gap.
        self.gap: float | None = read if isinstance(read, (int, float)) else None
        self._armed = False  # the first content arrived
        self._gathers = False  # take() only gathers (an identity body past the first content)
        self._last_byte = now = _now()
        self._attempt = Attempt(
            provider,
            now=now,
            clocks=Clocks(first_content=first_content, content_idle=content_idle),
            max_tokens=max_tokens,
            limits=limits,
            hold=False,
            profile=profile,
        )
        self._due = self._next_due(now)  # when the content clock may next run out
        self._gathered: list[bytes] = []  # decoded pieces not yet read, and when each came
        self._times: list[float] = []
        self._size = 0
        self._markers = ProofMarkers(provider)
        self._decoder: BodyDecoder | None = None
        self._refused: str | None = None
        try:
            if isinstance(applied, Unreadable):
                raise applied
            # No coding to undo: each chunk is its own one piece.
            self._decoder = BodyDecoder(applied) if applied else None
        except Unreadable as exc:
            self._refused = f"the guard cannot judge this stream: {exc}"

    # -- feeding -------------------------------------------------------------------------

    def refused(self) -> httpx2.HTTPError | None:
        """Before the first byte: a stream in a coding the guard cannot read is refused."""
        return None if self._refused is None else errors.refused(self._refused)

    def keep_read_timeout(self) -> None:
        """The connection does not read the request's timeout per read: leave the SDK's
        read timeout in force (the idle gap is never armed; the content clock still runs)."""
        self._idle = None

    def take(self, chunk: bytes) -> httpx2.HTTPError | None:
        """One raw chunk, as the SDK will read it (never called once :meth:`refused`):
        None to pass it on, or the error to raise instead."""
        now = self._last_byte = _now()
        if self._gathers:  # the common case, inline: one append, a search, a comparison
            self._gathered.append(chunk)
            self._times.append(now)
            self._size += len(chunk)
            if self._size >= GATHER or self._markers.seen(chunk):
                error = self._read(now)
                if error is not None:
                    return error
            return self._look(now) if now >= self._due else None
        try:  # decoded to the end, as httpx2 decodes it for the SDK
            for piece in (chunk,) if self._decoder is None else self._decoder.feed(chunk):
                error = self._piece(piece, now)
                if error is not None:
                    return error
        except zlib.error as exc:
            return errors.undecodable(exc, self._turn())
        return self._look(now) if now >= self._due else None

    def _piece(self, piece: bytes, now: float) -> httpx2.HTTPError | None:
        """One decoded piece that arrived at ``now``: read at once until the first content
        (to see it), gathered after it (see the module docstring)."""
        attempt = self._attempt
        if not attempt.reads_on:
            return None  # the turn ended: what follows cannot change it
        if self._armed:
            self._gathered.append(piece)
            self._times.append(now)
            self._size += len(piece)
            if self._size >= GATHER or self._markers.seen(piece):
                return self._read(now)
            return None
        self._markers.seen(piece)  # its end makes the edge with the next piece
        self._feed(piece, now)
        error = self._failed()
        reader = attempt.reader
        if error is None and (reader.content or reader.terminated):
            self._arm(now)
        return error

    def _feed(self, piece: bytes, now: float) -> None:
        """Feed ``piece`` (arrived at ``now``) while the attempt reads, a slice at a time."""
        attempt = self._attempt
        for at in range(0, len(piece), _SLICE):
            if not attempt.reads_on:
                return
            attempt.feed(piece[at : at + _SLICE] if len(piece) > _SLICE else piece, now)

    def _drain(self, now: float | None) -> None:
        """Feed what gathered: at once, as arrived by ``now`` (the latest piece's time), or,
        ``now`` None, piece by piece, each at its own time."""
        gathered, times = self._gathered, self._times
        if not gathered:
            return
        self._gathered, self._times, self._size = [], [], 0
        if now is None:
            for piece, at in zip(gathered, times, strict=True):
                self._feed(piece, at)
        else:
            self._feed(gathered[0] if len(gathered) == 1 else b"".join(gathered), now)

    def _read(self, now: float | None) -> httpx2.HTTPError | None:
        """Read what gathered (see :meth:`_drain`); the error a bound passed there is."""
        self._drain(now)
        return self._failed()

    def _failed(self) -> httpx2.HTTPError | None:
        """After a feed: a bound passed is the error to raise; a turn that ended needs
        nothing gathered any more."""
        attempt = self._attempt
        failure = attempt.failure
        if failure is not None and isinstance(failure, TurnTooLarge):
            return errors.too_large_error(failure, self._turn())
        if not attempt.reads_on:
            self._gathers = False
            error = attempt.reader.turn().error
            if error is not None and error.kind is not ErrorKind.PROVIDER_ERROR:
                # Bytes that are not the protocol, or a terminator without the structure
                # the endpoint's profile requires, end the turn here, and the SDK must not
                # read past them: its own end may be laxer than the proof (the openai SDK
                # stops at any data that starts with ``[DONE]``, then closes the body, and a
                # closed body raises nothing). A provider's error event is the SDK's to
                # raise, as its own typed error.
                return errors.interrupted(self._turn())
        return None

    def _arm(self, now: float) -> None:
        """The first content: the idle gap starts here (the next read waits at most it),
        and the content clock changes its limit."""
        self._armed = True
        self._gathers = self._decoder is None and self._attempt.reads_on
        self._due = self._next_due(now)
        if self._timeouts is not None:
            self.gap = arm_idle({"timeout": self._timeouts}, self._idle)

    # -- the content clock ---------------------------------------------------------------

    def _next_due(self, now: float) -> float:
        """When the attempt's content clock runs out, as things stand at ``now``: the last
        content only moves later, so nothing runs out before it (but at the first content,
        where the limit changes, it is asked again)."""
        left = self._attempt.read_timeout(now)
        return math.inf if left is None else now + left

    def _look(self, now: float) -> httpx2.HTTPError | None:
        """The content clock may have run out: read what gathered, each piece at the time
        it came, then ask the attempt (a chunk that is content is seen first)."""
        error = self._read(None)
        if error is not None:
            return error
        attempt = self._attempt
        if attempt.reader.terminated:
            self._due = math.inf  # the turn ended: no clock runs
            return None
        if attempt.overdue(now):
            attempt.timed_out(now)
            return self._keepalives_only()
        self._due = self._next_due(now)
        return None

    # -- endings -------------------------------------------------------------------------

    def _close(self) -> tuple[AttemptOutcome, Turn]:
        """The attempt's ending (what gathered read first), and the turn a verdict carries."""
        self._drain(self._last_byte)
        attempt = self._attempt
        result = attempt.close()
        return result, attempt.reader.turn() if isinstance(result, Empty) else result.turn

    def _turn(self) -> Turn:
        return self._close()[1]

    def _keepalives_only(self) -> httpx2.HTTPError | None:
        """The content clock ran out: the attempt's idle verdict, as a read timeout."""
        result, _ = self._close()
        if isinstance(result, Complete):
            return None  # the proof arrived: nothing is missing
        cause = result.error if isinstance(result, Empty) else result.interruption
        return errors.keepalives_only(cause)

    def _flush(self) -> httpx2.HTTPError | None:
        """At the end: what the decoder still held, and all that gathered, read
        (``zlib.error`` for a body that does not decode)."""
        now = _now()
        for piece in self._decoder.close() if self._decoder is not None else ():
            error = self._piece(piece, now)
            if error is not None:
                return error
        return self._read(now)

    def ended(self) -> httpx2.HTTPError | None:
        """At EOF: None when the proof arrived, else the error to raise."""
        try:
            error = self._flush()
        except zlib.error as exc:
            return errors.undecodable(exc, self._turn())
        if error is not None:
            return error  # a bound passed in what the end read
        result, turn = self._close()
        return None if isinstance(result, Complete) else errors.interrupted(turn)

    def broke(self, exc: Exception) -> StreamInterrupted | None:
        """The inner stream raised ``exc``: the verdict on what arrived before it, or None
        when the proof had already arrived (see :func:`.watch_errors.broken`)."""
        with contextlib.suppress(zlib.error):  # what still decodes counts; the break says why
            self._flush()
        result, turn = self._close()
        if isinstance(result, Complete) and not isinstance(self._attempt.failure, TurnTooLarge):
            return None
        return errors.broken(exc, turn, self.gap, _now() - self._last_byte)
