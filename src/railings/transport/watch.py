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
  a kept body needs no counting beyond its bytes;
* **read** once they outgrow ``keep``: the kept bytes go to the core
  :class:`~railings.turn.reader.StreamReader`, which from then on reads every
  piece as it passes and counts its events, text and arguments. The body is no
  longer kept: memory is the reader's assembled turn, bounded by the same limits.

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
first content: a model may think for minutes while a gateway sends comments), the
stream ends with
:class:`httpx2.ReadTimeout` from :class:`~railings.errors.IdleTimeout`. It is
checked as each piece arrives (a silent stream is the idle clock's business).
A read piece shows progress when the reader made an event of it; a kept piece,
when it holds a ``data:`` line that is not a ping (two byte counts, in C, and
the four bytes before it for a ``data:`` split across pieces). The count is
lenient on purpose: a ping whose ``type`` is split across pieces counts as
progress, never progress as a ping.

Two kinds of ending. Where the stream ended without raising (EOF without the
proof, a bound, a body that does not decode, only keep-alives), the watch
returns the httpx2 exception the guard raises: a class the SDK already handles,
whose ``__cause__`` is :class:`~railings.errors.StreamInterrupted` (itself
caused by the railings reason, :class:`~railings.errors.TurnTooLarge` for a
bound). Where the inner stream raised, :meth:`StreamWatch.broke` returns only
the verdict: the guard lets that very exception through, the verdict attached.
"""

from __future__ import annotations

import time
import zlib

import httpx2

from railings.classify import INTERRUPTED_MESSAGE, interrupted_message
from railings.errors import (
    EventTooLarge,
    IdleTimeout,
    RailingsError,
    StreamInterrupted,
    TurnTooLarge,
)
from railings.events import Unknown
from railings.limits import TurnLimits, TurnMeter
from railings.transport.attempt import too_large
from railings.transport.coding import BodyDecoder, Unreadable
from railings.transport.errors_map import idle_error
from railings.transport.idle import arm_idle
from railings.transport.tail import proven_by_tail, read_turn
from railings.turn.model import Outcome, Turn
from railings.turn.reader import StreamReader

__all__ = ["MAX_KEEP", "StreamWatch", "keep_for"]

MAX_KEEP = 4 * 2**20
_MIN_EVENT_BYTES = 8  # "data:{}" and the blank line that dispatches it
_SLICE = 65536
_DATA = b"data:"
_PING = b'"type": "ping"'
_PING_COMPACT = b'"type":"ping"'
# A read timeout is the idle gap when at least this share of the gap passed in silence
# (the socket's timer starts after the guard saw the last byte, so never later).
_ELAPSED = 0.9


def keep_for(limits: TurnLimits) -> int:
    """How many decoded bytes may be kept unread and still be within every bound."""
    b = limits.bounds(None)  # resolved limits: every bound is given, none is derived
    return min(MAX_KEEP, b.text, b.arguments, b.events * _MIN_EVENT_BYTES)


class StreamWatch:
    """One watched stream. ``take(chunk)`` per raw chunk, then ``ended()`` (EOF: None or
    the httpx2 error to raise) or ``broke(exc)`` (the inner stream raised: None or the
    verdict to attach to ``exc``).

    ``timeouts`` is the request's ``timeout`` extension, the dict httpcore2 reads
    the read timeout from: changed in place at the first content (see the module
    docstring); ``idle`` the guard's gap from then on (None: the SDK's stays).
    """

    __slots__ = (
        "_content",
        "_content_idle",
        "_decoder",
        "_edge",
        "_first_content",
        "_idle",
        "_keep",
        "_kept",
        "_kept_size",
        "_last_byte",
        "_last_content",
        "_meter",
        "_probe",
        "_reader",
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
        self._content_idle = content_idle
        self._first_content = first_content
        self._content = False
        self._last_byte = self._last_content = time.monotonic()
        self._edge = b""
        self._meter = TurnMeter(limits, max_tokens)
        self._keep = keep_for(self._meter.limits)
        self._kept: list[bytes] = []
        self._kept_size = 0
        self._reader: StreamReader | None = None
        self._probe: StreamReader | None = StreamReader(provider)
        self._decoder: BodyDecoder | None = None
        self._refused: str | None = None
        try:
            if isinstance(applied, Unreadable):
                raise applied
            self._decoder = BodyDecoder(applied)
        except Unreadable as exc:
            self._refused = f"the guard cannot judge this stream: {exc}"

    # -- feeding -------------------------------------------------------------------------

    def refused(self) -> httpx2.HTTPError | None:
        """Before the first byte: a stream in a coding the guard cannot read is refused."""
        if self._refused is None:
            return None
        return self._error(httpx2.DecodingError, self._refused, empty=False)

    def take(self, chunk: bytes) -> httpx2.HTTPError | None:
        """One raw chunk, as the SDK will read it (never called once :meth:`refused`)."""
        decoder = self._decoder
        if decoder is None:
            return self.refused()
        progress = False
        try:
            for piece in decoder.feed(chunk):
                progress = self._piece(piece) or progress
        except zlib.error as exc:
            return self._undecodable(exc)
        except TurnTooLarge as exc:
            return self._too_large(exc)
        now = self._last_byte = time.monotonic()
        if not self._content and self._saw_content():
            self._content = True
            # The idle clock starts here: the next read waits at most ``idle``.
            if self._timeouts is not None:
                self.gap = arm_idle({"timeout": self._timeouts}, self._idle)
        limit = self._content_idle if self._content else self._first_content
        if limit is not None:
            if progress:
                self._last_content = now
            elif now - self._last_content > limit:
                return self._keepalives_only(limit)
        return None

    def _saw_content(self) -> bool:
        if self._reader is not None:
            return self._reader.content or self._reader.terminated
        return self._probe is None

    def _piece(self, piece: bytes) -> bool:
        """Count, keep or read one decoded piece; True when it carried progress."""
        self._meter.received(len(piece))
        reader = self._reader
        if reader is None:
            if self._kept_size + len(piece) <= self._keep:
                self._kept.append(piece)
                self._kept_size += len(piece)
                if self._probe is not None:
                    self._feed_probe(piece)
                return self._carries_data(piece)
            reader = self._read_from_here()
        # Slices of 64 KiB: what the reader makes of one feed (its lines) stays small.
        progress = False
        for at in range(0, len(piece), _SLICE):
            if reader.terminated:
                return True  # the proof (or an abrupt end) arrived: the clock is done
            try:
                events = reader.feed(piece[at : at + _SLICE] if len(piece) > _SLICE else piece)
            except EventTooLarge:
                return True  # the reader ended the turn abruptly; its turn says why
            self._meter.saw(events)
            progress = progress or any(type(event) is not Unknown for event in events)
        return progress

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

    def _carries_data(self, piece: bytes) -> bool:
        """A kept piece: does it hold a data line that is not a ping (see the docstring)?"""
        if self._content_idle is None and self._first_content is None:
            return True
        edge, self._edge = self._edge, piece[-4:]
        data = piece.count(_DATA) + (edge + piece[:4]).count(_DATA)
        return data > piece.count(_PING) + piece.count(_PING_COMPACT)

    def _read_from_here(self) -> StreamReader:
        """The body outgrew ``keep``: hand what was kept to the reader, keep nothing more."""
        reader = self._reader = StreamReader(self.provider)
        self._probe = None
        kept, self._kept, self._kept_size = self._kept, [], 0
        for piece in kept:
            if reader.terminated:
                break
            try:
                self._meter.saw(reader.feed(piece))
            except EventTooLarge:
                break
        return reader

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
            self._reader.close()
            turn = self._reader.turn()
        return None if turn.outcome is Outcome.COMPLETE else turn

    # -- endings -------------------------------------------------------------------------

    def ended(self) -> httpx2.HTTPError | None:
        """At EOF: None when the proof arrived, else the error to raise."""
        try:
            turn = self._finish()
        except zlib.error as exc:
            return self._undecodable(exc)
        except TurnTooLarge as exc:
            return self._too_large(exc)
        if turn is None:
            return None
        detail = turn.error.message if turn.error is not None else INTERRUPTED_MESSAGE
        return self._error(
            httpx2.RemoteProtocolError, detail, empty=turn.outcome is Outcome.EMPTY, turn=turn
        )

    def broke(self, exc: Exception) -> StreamInterrupted | None:
        """The inner stream raised ``exc``: the verdict on what arrived before it, or None
        when the proof had already arrived.

        The verdict says what happened: an idle gap only when the read timeout in force
        (the SDK's before the first content, the guard's after) really passed without a
        byte; any other error, raised at once or not, is named as it is.
        """
        try:
            turn = self._finish()
        except (zlib.error, TurnTooLarge):
            turn = self._turn()
        if turn is None:
            return None
        empty = turn.outcome is Outcome.EMPTY
        verdict: StreamInterrupted
        silent = time.monotonic() - self._last_byte
        gap = self.gap
        if isinstance(exc, httpx2.ReadTimeout) and gap is not None and silent >= gap * _ELAPSED:
            verdict = idle_error(gap, empty=empty, turn=turn)
        else:
            what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            message = f"{INTERRUPTED_MESSAGE}: the connection broke ({what})"
            verdict = StreamInterrupted(message, empty=empty, turn=turn)
        return verdict

    # -- helpers -------------------------------------------------------------------------

    def _turn(self) -> Turn:
        """What has been read so far, as an interrupted turn (for a failure's fields)."""
        if self._reader is None:
            return read_turn(self.provider, b"".join(self._kept))
        self._reader.close()
        return self._reader.turn()

    def _keepalives_only(self, limit: float) -> httpx2.HTTPError:
        turn = self._turn()
        empty = turn.outcome is Outcome.EMPTY
        cause: IdleTimeout = idle_error(limit, empty=empty, content=True, turn=turn)
        error = httpx2.ReadTimeout(cause.message)
        error.__cause__ = cause
        return error

    def _undecodable(self, exc: zlib.error) -> httpx2.HTTPError:
        turn = self._turn()
        message = f"the body does not decode as its content-encoding says: {exc}"
        return self._error(
            httpx2.DecodingError, message, empty=turn.outcome is Outcome.EMPTY, turn=turn
        )

    def _too_large(self, exc: TurnTooLarge) -> httpx2.HTTPError:
        turn = self._turn()
        return self._error(
            httpx2.RemoteProtocolError,
            exc.message,
            empty=turn.outcome is Outcome.EMPTY,
            turn=turn,
            reason=too_large(exc, turn),
        )

    @staticmethod
    def _error(
        cls: type[httpx2.HTTPError],
        detail: str,
        *,
        empty: bool,
        turn: Turn | None = None,
        reason: BaseException | None = None,
    ) -> httpx2.HTTPError:
        message = interrupted_message(detail)
        cause = StreamInterrupted(message, empty=empty, turn=turn)
        cause.__cause__ = reason
        error = cls(message)
        error.__cause__ = cause
        return error
