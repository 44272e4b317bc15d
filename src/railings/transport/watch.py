"""The guard's logic for one watched stream, shared by its sync and async shells.

Theory of operation. Each raw chunk the SDK will read is first decoded here
(:mod:`.coding`, the codings httpx2 undoes, in pieces of at most 1 MiB) and
counted against the turn's bounds (:mod:`railings.limits`, derived from the
``max_tokens`` the request carried). The decoded bytes are then either *kept*
or *read*:

* **kept** while they fit in ``keep`` bytes: one list append per piece, and one
  verdict at the end from :func:`~.tail.proven_by_tail` (or the core reader over
  the kept bytes). ``keep`` is at most 4 MiB and never more than a body that
  could stay within the text, argument and event bounds (text and arguments
  cannot outgrow the bytes that carry them; an event takes at least 8 bytes), so
  a kept body needs no counting beyond its size (kept within the byte bound too);
* **read** once they outgrow ``keep``: the kept bytes go to the core
  :class:`~railings.turn.reader.StreamReader`, which from then on reads what
  passes and counts its events, text and arguments. The body is no longer kept:
  memory is the reader's assembled turn, bounded by the same limits.

So the guard never holds a whole body: a gzip body of keep-alive comments that
inflates to gigabytes costs ``keep`` bytes plus one 1 MiB piece.

The idle clock. Until the first content (a text, thinking or argument delta:
what :attr:`~railings.turn.reader.StreamReader.content` calls content) the
SDK's own read timeout governs: a reasoning model may send its headers, or
``response.created``, and then think for minutes. At the first content the
read timeout of the request is lowered to the guard's ``idle`` (never raised):
from then on a silence that long is a read timeout. Before the first content a
kept body is also fed to a *probe* reader, only to see that first content (the
events before it are few and small); the probe is dropped as soon as it does.

The content clock. Keep-alives (comments, Anthropic ``ping`` events) keep the
connection's idle clock alive, but not the content clock: when ``content_idle``
seconds pass with nothing but keep-alives (``first_content`` seconds before the
first content: a model may think for minutes while a gateway sends comments),
the stream ends with :class:`httpx2.ReadTimeout` from
:class:`~railings.errors.IdleTimeout`. It is checked as chunks arrive, at most
once a second (and eight times per limit). A chunk that finds it due is looked
at last: what arrived before it counts as arrived with the chunk before (no
earlier than it really did, and before the check was due), the chunk with its
own time; so the clock cuts at most one step late, never early (a silent stream
is the idle clock's business). Read bytes show progress when the reader made an
event of them (at the time of the chunk they were read at); kept ones when they
hold a ``data:`` line that is not a ping (:func:`.watch_bytes.carries_data`).
The count is lenient on purpose: a ping split across two looks counts as
progress, never progress as a ping.

Per chunk, past the first content (:meth:`StreamWatch.take`). An identity body
still kept costs one append, a sum and a clock read. One being read costs the
same, plus a search for the proof's markers (:class:`.watch_bytes.ProofMarkers`,
in C); the reader reads once 64 KiB have gathered (the core's cost per call is
paid per 64 KiB, not per network piece), and at once when a piece may carry the
proof: an SDK may stop at the proof and close the body (the openai SDK does, at
``[DONE]``), so what gathered is read before the proof goes on. A bound is seen
at most 64 KiB late, and always before the proof. A body closed before its end
raises nothing at the close, whatever it held: the caller stopped before the
proof, so it has no finished turn to trust, as when it stops early within every
bound; and httpx2 closes a body from its iterators' ``finally``, where an
exception would be lost ("Exception ignored in ..."). The probe is gone, and
nothing is counted until the content clock is due.

Two kinds of ending. Where the stream ended without raising (EOF without the
proof, a bound, a body that does not decode, only keep-alives), the watch
returns the httpx2 exception the guard raises (:mod:`.watch_errors`). Where the
inner stream raised, :meth:`StreamWatch.broke` returns only the verdict: the
guard lets that very exception through, the verdict attached.
"""

from __future__ import annotations

import math
import time
import zlib

import httpx2

from railings.errors import EventTooLarge, RailingsError, StreamInterrupted, TurnTooLarge
from railings.events import Unknown
from railings.limits import TurnLimits, TurnMeter
from railings.transport import watch_errors as errors
from railings.transport.coding import BodyDecoder, Unreadable
from railings.transport.idle import arm_idle
from railings.transport.tail import proven_by_tail, read_turn
from railings.transport.watch_bytes import MAX_KEEP, ProofMarkers, carries_data, keep_for
from railings.turn.model import Outcome, Turn
from railings.turn.reader import StreamReader

__all__ = ["MAX_KEEP", "StreamWatch", "carries_data", "keep_for"]

_GATHER = 65536  # what gathers before the reader reads it, past the first content
_SLICE = 2 * _GATHER  # the most it reads at once (what it makes of one feed stays small)
_STEP = 1.0  # the content clock runs at most this often (and 8 times per limit)
_now = time.monotonic


class StreamWatch:
    """One watched stream. ``take(chunk)`` per raw chunk, then ``ended()`` (EOF: None or
    the httpx2 error to raise) or ``broke(exc)`` (the inner stream raised: None or the
    verdict to attach to ``exc``).

    ``timeouts`` is the request's ``timeout`` extension, the dict httpcore2 reads
    the read timeout from: changed in place at the first content (see the module
    docstring); ``idle`` the guard's gap from then on (None: the SDK's stays).
    """

    __slots__ = (
        "_check_at",
        "_content",
        "_content_idle",
        "_decoder",
        "_edge",
        "_fill",
        "_first_content",
        "_gathers",
        "_identity",
        "_idle",
        "_keep",
        "_kept",
        "_kept_size",
        "_last_byte",
        "_last_content",
        "_meter",
        "_plain",
        "_probe",
        "_proof",
        "_reader",
        "_refused",
        "_scanned",
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
        self._content_idle = content_idle
        self._first_content = first_content
        self._content = False
        self._last_byte = self._last_content = _now()
        self._check_at = 0.0  # when the content clock is next due (at the first chunk)
        self._scanned, self._edge = 0, b""  # the kept pieces the clock has looked at
        self._meter = TurnMeter(limits, max_tokens)
        self._keep = keep_for(self._meter.limits)
        self._kept: list[bytes] = []  # the body while it is kept; then what gathers to read
        self._kept_size = 0
        # The most that may gather in _kept, unmetered: the body while it can be kept (within
        # the byte bound too), then 64 KiB for the reader.
        self._fill = min(self._keep, self._meter.limits.bounds(None).bytes)
        self._reader: StreamReader | None = None
        self._probe: StreamReader | None = StreamReader(provider)
        self._plain = False  # take() needs no decoding nor probing (module docstring)
        self._gathers = False  # the same, for a body being read
        self._proof = ProofMarkers(provider)  # searched in what gathers to be read
        self._decoder: BodyDecoder | None = None
        self._refused: str | None = None
        try:
            if isinstance(applied, Unreadable):
                raise applied
            self._decoder = BodyDecoder(applied)
        except Unreadable as exc:
            self._refused = f"the guard cannot judge this stream: {exc}"
        self._identity = not applied

    # -- feeding -------------------------------------------------------------------------

    def refused(self) -> httpx2.HTTPError | None:
        """Before the first byte: a stream in a coding the guard cannot read is refused."""
        return None if self._refused is None else errors.refused(self._refused)

    def take(self, chunk: bytes) -> httpx2.HTTPError | None:
        """One raw chunk, as the SDK will read it (never called once :meth:`refused`)."""
        if self._plain:
            size = self._kept_size + len(chunk)
            if size <= self._fill:
                now = _now()
                if now < self._check_at:
                    self._kept.append(chunk)
                    self._kept_size = size
                    self._last_byte = now
                    return None
                return self._take(chunk, now)
        elif self._gathers:
            return self._gather(chunk)
        return self._take(chunk, _now())

    def _take(self, chunk: bytes, now: float) -> httpx2.HTTPError | None:
        """:meth:`take` the long way: decode, keep or read, start the clocks, and look when
        the content clock is due (first at what came before ``chunk``, then at ``chunk``)."""
        decoder = self._decoder
        if decoder is None:
            return self.refused()
        due = now >= self._check_at
        try:
            if due:  # what came before this chunk arrived by the last byte before it
                self._look(self._last_byte)
            for piece in (chunk,) if self._identity else decoder.feed(chunk):
                self._piece(piece, now)
            self._last_byte = now
            if not self._content and self._saw_content():
                self._content = True
                # The idle clock starts here: the next read waits at most ``idle``.
                if self._timeouts is not None:
                    self.gap = arm_idle({"timeout": self._timeouts}, self._idle)
                due = True  # the content clock changes its limit: check it now
            plain = self._content and self._identity
            self._plain = plain and self._reader is None
            self._gathers = plain and self._reader is not None
            if not due:
                return None
            self._look(now)
        except zlib.error as exc:
            return errors.undecodable(exc, self._turn())
        except TurnTooLarge as exc:
            return errors.too_large_error(exc, self._turn())
        return self._judge(now)

    def _gather(self, chunk: bytes) -> httpx2.HTTPError | None:
        """:meth:`take` for an identity body being read, past the first content."""
        now = _now()
        if now >= self._check_at:
            return self._take(chunk, now)
        size = self._kept_size + len(chunk)
        self._kept.append(chunk)
        self._kept_size = size
        self._last_byte = now
        if self._proof.seen(chunk) or size > self._fill:
            try:
                self._read_gathered(now)
            except TurnTooLarge as exc:
                return errors.too_large_error(exc, self._turn())
        return None

    def _saw_content(self) -> bool:
        if self._reader is not None:
            return self._reader.content or self._reader.terminated
        return self._probe is None

    def _piece(self, piece: bytes, now: float) -> None:
        """Keep one decoded piece (arrived at ``now``), or gather it for the reader (raises
        past a bound)."""
        size = self._kept_size + len(piece)
        if self._reader is None and size > self._fill:
            self._read_from_here(now)  # the body outgrew keep
            size = len(piece)
        self._kept.append(piece)
        self._kept_size = size
        if self._reader is None:
            if self._probe is not None:
                self._feed_probe(piece)
        elif self._proof.seen(piece) or size > self._fill or not self._content:
            self._read_gathered(now)  # before the first content, every piece: to see it

    def _read_from_here(self, now: float) -> None:
        """The body outgrew ``keep``: hand what was kept to the reader, keep nothing more."""
        if self._check_at < math.inf and self._kept_progress():
            self._last_content = now  # what the clock had not looked at yet arrived by now
        self._reader = StreamReader(self.provider)
        self._probe = None
        self._fill = _GATHER
        kept, self._kept, self._kept_size, self._scanned = self._kept, [], 0, 0
        self._proof.follow(kept)
        gathered: list[bytes] = []
        size = 0
        for piece in kept:  # read in 64 KiB pieces, as they will be from now on
            gathered.append(piece)
            size += len(piece)
            if size >= _GATHER:
                self._read(gathered, size, None)  # looked at already: no progress again
                gathered, size = [], 0
        self._read(gathered, size, None)

    def _read_gathered(self, stamp: float | None) -> None:
        gathered, size = self._kept, self._kept_size
        self._kept, self._kept_size = [], 0
        self._read(gathered, size, stamp)

    def _read(self, pieces: list[bytes], size: int, stamp: float | None) -> None:
        """Count and read ``pieces`` (``size`` bytes); any event but Unknown is progress,
        and the content clock's last content becomes ``stamp`` (None: not counted)."""
        if not pieces:
            return
        self._meter.received(size)
        reader = self._reader
        assert reader is not None
        body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        for at in range(0, len(body), _SLICE):
            if reader.terminated:
                break  # the proof (or an abrupt end) arrived: the clock is done
            try:
                events = reader.feed(body[at : at + _SLICE] if len(body) > _SLICE else body)
            except EventTooLarge:
                break  # the reader ended the turn abruptly; its turn says why
            self._meter.saw(events)
            if (
                events
                and stamp is not None
                and self._last_content != stamp
                and any(type(event) is not Unknown for event in events)
            ):
                self._last_content = stamp
        else:
            return
        if stamp is not None:
            self._last_content = stamp

    def _feed_probe(self, piece: bytes) -> None:
        """Before the first content: read the piece only to see whether content began."""
        probe = self._probe
        if probe is None:
            return
        try:
            for at in range(0, len(piece), _SLICE):
                probe.feed(piece[at : at + _SLICE])
                if probe.content or probe.terminated:
                    break
        except RailingsError:
            pass  # a stream the probe cannot read: judged at the end; the clock starts now
        else:
            if not (probe.content or probe.terminated):
                return
        self._probe = None

    def _look(self, stamp: float) -> None:
        """The content clock looks at what arrived since its last look: if it holds
        content, the last content was at ``stamp`` (raises past a bound, when read)."""
        if self._reader is not None:
            self._read_gathered(stamp)
        elif self._kept_progress():
            self._last_content = stamp

    def _judge(self, now: float) -> httpx2.HTTPError | None:
        """The content clock, due: too long since the last content, only keep-alives?"""
        limit = self._content_idle if self._content else self._first_content
        if limit is None:
            self._check_at = math.inf  # off (until the first content changes the limit)
            return None
        if now - self._last_content > limit:
            return errors.keepalives_only(limit, self._turn())
        self._check_at = now + min(_STEP, limit / 8)
        return None

    def _kept_progress(self) -> bool:
        """Do the pieces kept since the clock's last look hold a data line, not a ping?"""
        kept, start = self._kept, self._scanned
        if self._reader is not None or start >= len(kept):
            return False
        self._scanned = len(kept)
        region = kept[start] if start == len(kept) - 1 else b"".join(kept[start:])
        edge = self._edge
        self._edge = region[-4:] if len(region) >= 4 else (edge + region)[-4:]
        return carries_data(region, edge)

    def _finish(self) -> Turn | None:
        """At the end: flush the decoder; None when proven complete, else the turn."""
        for piece in self._decoder.close() if self._decoder is not None else ():
            self._piece(piece, self._last_byte)
        if self._reader is None:
            body = b"".join(self._kept)
            if proven_by_tail(self.provider, body):
                return None
            turn = read_turn(self.provider, body)
        else:
            self._read_gathered(None)
            self._reader.close()
            turn = self._reader.turn()
        return None if turn.outcome is Outcome.COMPLETE else turn

    # -- endings -------------------------------------------------------------------------

    def ended(self) -> httpx2.HTTPError | None:
        """At EOF: None when the proof arrived, else the error to raise."""
        try:
            turn = self._finish()
        except zlib.error as exc:
            return errors.undecodable(exc, self._turn())
        except TurnTooLarge as exc:
            return errors.too_large_error(exc, self._turn())
        return None if turn is None else errors.interrupted(turn)

    def broke(self, exc: Exception) -> StreamInterrupted | None:
        """The inner stream raised ``exc``: the verdict on what arrived before it, or None
        when the proof had already arrived (see :func:`.watch_errors.broken`)."""
        try:
            turn = self._finish()
        except (zlib.error, TurnTooLarge):
            turn = self._turn()
        if turn is None:
            return None
        return errors.broken(exc, turn, self.gap, _now() - self._last_byte)

    def _turn(self) -> Turn:
        """What has arrived so far, as an interrupted turn (for a failure's fields)."""
        if self._reader is None:
            return read_turn(self.provider, b"".join(self._kept))
        try:  # noqa: SIM105 -- past a bound: the turn is what was read before it
            self._read_gathered(None)
        except TurnTooLarge:
            pass
        self._reader.close()
        return self._reader.turn()
