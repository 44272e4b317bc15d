"""The guard's shell around one :class:`~railings.turn.attempt.Attempt` per watched body.

Theory of operation. Everything that decides -- the termination proof, the bounds
on one turn, the content clock, Complete / Partial / Empty -- is the sans-IO
attempt's, as it is for the client, the gateway and ``replay``. What is left here is
what the guard's I/O needs, shared by its sync and async shells
(:mod:`.guarded`):

* **the codings.** Each raw chunk the SDK will read is decoded the way httpx2
  decodes it (:mod:`.coding`, in pieces of at most 1 MiB) and every decoded piece
  is fed to the attempt with the time it arrived (``time.monotonic()``). Bytes
  pass through as they come, so nothing is held back (``hold=False``); the attempt
  reads every byte, and a chunk is judged before it goes on: an SDK may stop at the
  proof and close the body (the openai SDK does, at ``[DONE]``), and a bound passed
  before the proof is raised before the SDK has it.
* **the idle gap.** Until the first content (a text, thinking or argument delta)
  the SDK's own read timeout governs: a reasoning model may send its headers, or
  ``response.created``, and then think for minutes. At the first content the
  request's read timeout is lowered to the guard's ``idle`` (never raised), where
  the connection reads it (:func:`.guarded.follow_read_timeout`): from then on a
  silence that long is the socket's read timeout. So the gap is not one of the
  attempt's clocks: the guard sees the time only when bytes arrive.
* **the content clock.** Keep-alives (comments, Anthropic ``ping`` events) reset
  the socket's timer but not the attempt's content clock (``first_content`` before
  the first content, ``content_idle`` after). After each chunk is fed,
  :meth:`Attempt.overdue` says whether that clock ran out by now (the gap is
  ignored there); the chunk is looked at first, so content in the chunk that finds
  the clock due counts, and a stream of only keep-alives is cut at the first chunk
  after the limit (never before it).

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
import time
import zlib

import httpx2

from railings.errors import StreamInterrupted, TurnTooLarge
from railings.limits import TurnLimits
from railings.transport import watch_errors as errors
from railings.transport.coding import BodyDecoder, Unreadable
from railings.transport.idle import arm_idle
from railings.turn.attempt import Attempt, Clocks
from railings.turn.ending import AttemptOutcome, Complete, Empty
from railings.turn.model import Turn

__all__ = ["StreamWatch"]

_now = time.monotonic
# The most of a piece the attempt reads at once: what the reader makes of one feed (its
# lines, frames and events) stays small however large the piece the coding gave.
_SLICE = 65536


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
        "_idle",
        "_last_byte",
        "_refused",
        "_timeouts",
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
    ) -> None:
        self.provider = provider
        self._timeouts = timeouts
        self._idle = idle
        read = timeouts.get("read") if timeouts is not None else None
        # The read timeout in force: the SDK's until the first content, then the gap.
        self.gap: float | None = read if isinstance(read, (int, float)) else None
        self._armed = False
        self._last_byte = now = _now()
        self._attempt = Attempt(
            provider,
            now=now,
            clocks=Clocks(first_content=first_content, content_idle=content_idle),
            max_tokens=max_tokens,
            limits=limits,
            hold=False,
        )
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
        attempt = self._attempt
        decoder = self._decoder
        if decoder is None:
            if not attempt.reads_on:
                return None  # the turn ended: what follows cannot change it
            if len(chunk) <= _SLICE:
                attempt.feed(chunk, now)
            else:
                self._feed(chunk, now)
        else:
            try:  # decoded to the end, as httpx2 decodes it for the SDK
                for piece in decoder.feed(chunk):
                    self._feed(piece, now)
            except zlib.error as exc:
                return errors.undecodable(exc, self._turn())
        failure = attempt.failure
        if failure is not None and isinstance(failure, TurnTooLarge):
            return errors.too_large_error(failure, self._turn())
        if not self._armed:
            reader = attempt.reader
            if reader.content or reader.terminated:
                self._arm()
        if attempt.overdue(now) and not attempt.reader.terminated:
            attempt.timed_out(now)
            return self._keepalives_only()
        return None

    def _feed(self, piece: bytes, now: float) -> None:
        """Feed ``piece`` (arrived at ``now``) while the attempt reads, a slice at a time."""
        attempt = self._attempt
        for at in range(0, len(piece), _SLICE):
            if not attempt.reads_on:
                return
            attempt.feed(piece[at : at + _SLICE] if len(piece) > _SLICE else piece, now)

    def _arm(self) -> None:
        """The first content: the idle gap starts here, the next read waits at most it."""
        self._armed = True
        if self._timeouts is not None:
            self.gap = arm_idle({"timeout": self._timeouts}, self._idle)

    # -- endings -------------------------------------------------------------------------

    def _close(self) -> tuple[AttemptOutcome, Turn]:
        """The attempt's ending (the reading is over), and the turn a verdict carries."""
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

    def _flush(self) -> None:
        """At the end: what the decoder still held, fed (``zlib.error`` for a body that
        does not decode)."""
        if self._decoder is not None:
            now = _now()
            for piece in self._decoder.close():
                self._feed(piece, now)

    def ended(self) -> httpx2.HTTPError | None:
        """At EOF: None when the proof arrived, else the error to raise."""
        try:
            self._flush()
        except zlib.error as exc:
            return errors.undecodable(exc, self._turn())
        failure = self._attempt.failure
        if isinstance(failure, TurnTooLarge):  # passed in what the decoder still held
            return errors.too_large_error(failure, self._turn())
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
