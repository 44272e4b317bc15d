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
once a second (and eight times per limit), over what arrived since its last
check, so it cuts at most that step late, never early (a silent stream is the
idle clock's business). Read bytes show progress when the reader made an event
of them; kept ones when they hold a ``data:`` line that is not a ping
(:func:`carries_data`). The count is lenient on purpose: a ping split across two
checks counts as progress, never progress as a ping.

Per chunk, past the first content (:meth:`StreamWatch.take`). An identity body
still kept costs one append, a sum and a clock read; one being read, the same,
and the reader reads once 64 KiB have gathered (the core's cost per call is
paid per 64 KiB, not per network piece; a bound is seen at most 64 KiB late).
The probe is gone, and nothing is counted until the content clock is due.

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
from railings.turn.model import Outcome, Turn
from railings.turn.reader import StreamReader

__all__ = ["MAX_KEEP", "StreamWatch", "carries_data", "keep_for"]

MAX_KEEP = 4 * 2**20
_MIN_EVENT_BYTES = 8  # "data:{}" and the blank line that dispatches it
_GATHER = 65536  # what gathers before the reader reads it, past the first content
_SLICE = 2 * _GATHER  # the most it reads at once (what it makes of one feed stays small)
_DATA = b"data:"
_PINGS = (b'"type": "ping"', b'"type":"ping"')
_STEP = 1.0  # the content clock runs at most this often (and 8 times per limit)
_now = time.monotonic


def keep_for(limits: TurnLimits) -> int:
    """How many decoded bytes may be kept unread and still be within every bound."""
    b = limits.bounds(None)  # resolved limits: every bound is given, none is derived
    return min(MAX_KEEP, b.text, b.arguments, b.events * _MIN_EVENT_BYTES)


def carries_data(region: bytes, edge: bytes) -> bool:
    """Does ``region`` (the bytes since the last look; ``edge``: the 4 before them) hold a
    ``data:`` line that is not a ping? Byte counts, in C. A ping marker before the first
    ``data:`` of the region belongs to a line counted before."""
    if (edge[-4:] + region[:4]).count(_DATA):
        first, split = 0, 1  # a data: across the edge (5 bytes never fit in 4)
    else:
        first, split = region.find(_DATA), 0
        if first < 0:
            return False
    pings = region.count(_PINGS[0], first) + region.count(_PINGS[1], first)
    return split + region.count(_DATA, first) > pings


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
        "_progressed",
        "_reader",
        "_refused",
        "_room",
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
        self._progressed = False  # the reader made an event since the clock's last check
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
                self._kept.append(chunk)
                self._kept_size = size
                now = self._last_byte = _now()
                return None if now < self._check_at else self._check(now)
        return self._take(chunk)

    def _take(self, chunk: bytes) -> httpx2.HTTPError | None:
        """:meth:`take` the long way: decode, keep or read, start the clocks."""
        decoder = self._decoder
        if decoder is None:
            return self.refused()
        try:
            for piece in (chunk,) if self._identity else decoder.feed(chunk):
                self._piece(piece)
        except zlib.error as exc:
            return errors.undecodable(exc, self._turn())
        except TurnTooLarge as exc:
            return errors.too_large_error(exc, self._turn())
        now = self._last_byte = _now()
        if not self._content and self._saw_content():
            self._content = True
            # The idle clock starts here: the next read waits at most ``idle``.
            if self._timeouts is not None:
                self.gap = arm_idle({"timeout": self._timeouts}, self._idle)
            self._check_at = now  # the content clock changes its limit: check it now
        self._plain = self._content and self._identity
        return None if now < self._check_at else self._check(now)

    def _saw_content(self) -> bool:
        if self._reader is not None:
            return self._reader.content or self._reader.terminated
        return self._probe is None

    def _piece(self, piece: bytes) -> None:
        """Keep one decoded piece, or gather it for the reader (raises past a bound)."""
        size = self._kept_size + len(piece)
        if self._reader is None and size > self._fill:
            self._read_from_here()  # the body outgrew keep
            size = len(piece)
        self._kept.append(piece)
        self._kept_size = size
        if self._reader is None:
            if self._probe is not None:
                self._feed_probe(piece)
        elif size > self._fill or not self._content:
            self._read_gathered()  # before the first content, every piece: to see it

    def _read_from_here(self) -> None:
        """The body outgrew ``keep``: hand what was kept to the reader, keep nothing more."""
        self._reader = StreamReader(self.provider)
        self._probe = None
        self._fill = _GATHER
        kept, self._kept, self._kept_size, self._scanned = self._kept, [], 0, 0
        gathered: list[bytes] = []
        size = 0
        for piece in kept:  # read in 64 KiB pieces, as they will be from now on
            gathered.append(piece)
            size += len(piece)
            if size >= _GATHER:
                self._read(gathered, size)
                gathered, size = [], 0
        self._read(gathered, size)

    def _read_gathered(self) -> None:
        gathered, size = self._kept, self._kept_size
        self._kept, self._kept_size = [], 0
        self._read(gathered, size)

    def _read(self, pieces: list[bytes], size: int) -> None:
        """Count and read ``pieces`` (``size`` bytes); any event but Unknown is progress."""
        if not pieces:
            return
        self._meter.received(size)
        reader = self._reader
        assert reader is not None
        body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        for at in range(0, len(body), _SLICE):
            if reader.terminated:
                self._progressed = True  # the proof (or an abrupt end) arrived: clock done
                return
            try:
                events = reader.feed(body[at : at + _SLICE] if len(body) > _SLICE else body)
            except EventTooLarge:
                self._progressed = True  # the reader ended the turn abruptly; its turn says why
                return
            self._meter.saw(events)
            if events and not self._progressed:
                self._progressed = any(type(event) is not Unknown for event in events)

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

    def _check(self, now: float) -> httpx2.HTTPError | None:
        """The content clock, due: did anything but keep-alives arrive since it last ran?"""
        limit = self._content_idle if self._content else self._first_content
        if limit is None:
            self._check_at = math.inf  # off (until the first content changes the limit)
            return None
        if self._reader is not None:
            try:
                self._read_gathered()
            except TurnTooLarge as exc:
                return errors.too_large_error(exc, self._turn())
        if self._progressed or self._kept_progress():
            self._last_content = now
        elif now - self._last_content > limit:
            return errors.keepalives_only(limit, self._turn())
        self._progressed = False
        self._check_at = now + min(_STEP, limit / 8)
        return None

    def _kept_progress(self) -> bool:
        """Do the pieces kept since the clock's last check hold a data line, not a ping?"""
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
            self._piece(piece)
        if self._reader is None:
            body = b"".join(self._kept)
            if proven_by_tail(self.provider, body):
                return None
            turn = read_turn(self.provider, body)
        else:
            self._read_gathered()
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
            self._read_gathered()
        except TurnTooLarge:
            pass
        self._reader.close()
        return self._reader.turn()
