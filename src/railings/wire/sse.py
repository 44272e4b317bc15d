"""Server-Sent Events: a sans-IO, incremental decoder from bytes to events.

Theory of operation
-------------------
This follows the WHATWG HTML "interpret an event stream" algorithm exactly
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).

Each :meth:`SSEDecoder.feed` works on a whole chunk, never on one character at
a time:

1. The bytes are decoded once, by ``codecs.utf_8_decode`` with
   ``errors="replace"`` and ``final=False`` (what the incremental UTF-8
   decoder runs, without its Python wrapper): the bytes of a character split
   across chunks wait for the next chunk, invalid bytes become U+FFFD. One BOM
   is stripped, only at the very start of the stream, even if its three bytes
   arrive in separate chunks.
2. The text is cut into lines by :func:`~railings.wire.blocks.cut_lines`, the one
   home of the line rule: CRLF and lone CR rewritten to LF with two ``str.replace``
   calls, then ``str.split("\\n")`` (``str.splitlines`` is not usable: it also
   breaks on VT, FF, FS, GS, RS, NEL, U+2028 and U+2029, which SSE keeps as
   data). A CR that ends one chunk is a line end at once, and a LF that
   starts the next chunk is then dropped: CR LF is one line end even when the
   chunk boundary falls between them. (httpx-sse's ``SSELineDecoder`` carries
   the CR the other way, holding it back until the next chunk: an event ended
   by CR CR would then wait for more bytes, and be lost at EOF here, where
   ``close()`` dispatches nothing.)
3. The last piece of the chunk, not yet ended by a line break, is kept in a
   list of fragments and joined once its line ends: a long line costs linear
   time, not a re-copy per chunk.
4. Each complete line is interpreted. Blank lines and ``data:`` lines (nearly
   every line of an LLM stream) are tested first. Data values are collected in
   a list and joined with LF only when the event is dispatched.

Memory is bounded by ``max_event_size``, counted in characters of decoded text
(not bytes): no line may be longer, and no event's data (the joined value) may
be larger. Past either limit the buffers are dropped, the decoder refuses further
input and :class:`~railings.errors.EventTooLarge` is raised: at once when the
chunk completed no event before it, else by the next call, after the events
before it were returned, so that what a caller gets does not depend on how the
bytes were split. Likewise :attr:`SSEDecoder.clean_events` tells the events
decoded before the first invalid UTF-8 from those after it, whatever the split.

EOF: WHATWG discards an event whose block has no blank line before the end of
the stream, and a last line with no line end. :meth:`SSEDecoder.close`
therefore never returns an event; :attr:`SSEDecoder.pending` says whether
anything was thrown away.
"""

from __future__ import annotations

import codecs
from typing import Final

from railings.errors import ConfigurationError, EventTooLarge
from railings.wire._held import CLOSED, OPEN, Held
from railings.wire._sse_event import ServerSentEvent, new_event, retry_value
from railings.wire.blocks import cut_lines

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "SSEDecoder", "ServerSentEvent"]

DEFAULT_MAX_EVENT_SIZE: Final = 16 * 1024 * 1024

_BOM: Final = codecs.BOM_UTF8
_utf8_decode = codecs.utf_8_decode


class SSEDecoder(Held):
    """Incremental WHATWG event-stream decoder: ``feed(bytes) -> list[ServerSentEvent]``.

    Sans-IO: it never reads, it is handed bytes. Feed the response body in
    chunks of any size and split anywhere, then call :meth:`close` at EOF.
    """

    __slots__ = (
        "_at_start",
        "_block_retry",
        "_bytes_fed",
        "_clean",
        "_comments",
        "_data",
        "_data_len",
        "_event_type",
        "_id_buffer",
        "_in_block",
        "_invalid_utf8",
        "_last_event_id",
        "_max",
        "_partial",
        "_partial_len",
        "_reconnection_time",
        "_skip_lf",
        "_undecoded",
    )

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        if max_event_size < 1:
            raise ConfigurationError(f"max_event_size must be positive, got {max_event_size}")
        super().__init__()
        self._max = max_event_size
        self._at_start = True  # no byte decoded yet: a BOM may come
        self._undecoded = b""  # the first bytes of a split character (or of the BOM)
        self._skip_lf = False  # the last chunk ended in CR: a LF starting the next is its pair
        self._partial: list[str] = []  # fragments of the line not yet ended
        self._partial_len = 0
        self._in_block = False  # a line was seen since the last blank line
        # WHATWG buffers: data, event type, last event ID.
        self._data: list[str] = []
        self._data_len = 0  # len of the WHATWG data buffer: each value plus its LF
        self._event_type = ""
        self._id_buffer = ""
        self._block_retry: int | None = None
        self._last_event_id = ""
        self._reconnection_time: int | None = None
        self._comments = 0
        self._bytes_fed = 0
        self._invalid_utf8 = 0
        self._clean = 0  # of the events the last feed returned, those before invalid UTF-8

    @property
    def last_event_id(self) -> str:
        """The event source's last event ID: committed at every blank line, even with no event."""
        return self._last_event_id

    @property
    def reconnection_time(self) -> int | None:
        """The last valid ``retry`` value (milliseconds) seen anywhere, else None."""
        return self._reconnection_time

    @property
    def comments(self) -> int:
        """How many comment lines (``:`` first, such as keep-alives) were seen."""
        return self._comments

    @property
    def bytes_fed(self) -> int:
        """How many bytes :meth:`feed` was given in all."""
        return self._bytes_fed

    @property
    def invalid_utf8(self) -> int:
        """How many chunks held bytes that are not UTF-8 (decoded as U+FFFD, per WHATWG)."""
        return self._invalid_utf8

    @property
    def clean_events(self) -> int:
        """How many of the events the last :meth:`feed` returned came before the first
        bytes that are not UTF-8 this decoder met: all of them while it met none, those
        before the invalid bytes in the chunk that held them, none after that chunk. (The
        reader ends a turn at an event decoded from invalid bytes; a U+FFFD the model
        wrote before them is text, however the bytes were split.)"""
        return self._clean

    @property
    def pending(self) -> bool:
        """True when a line or block has begun and no blank line has ended it yet.

        At EOF this means :meth:`close` discards something: an unterminated
        last line, a block without its blank line (even one of comments only),
        or part of a UTF-8 character. After :meth:`close` it keeps that answer.
        """
        return self._in_block or bool(self._partial) or bool(self._undecoded)

    @property
    def between_blocks(self) -> bool:
        """True when the bytes fed so far ended with a blank line (or a BOM alone) and
        nothing is buffered or pending: no partial line or character, no CR whose LF may
        follow, no event field or data, every UTF-8 byte valid so far, still open. From
        here an event is exactly its own block's lines (``turn/fastpath.py``)."""
        return (
            self._state == OPEN
            and not self._at_start
            and not self._in_block
            and not self._partial
            and not self._undecoded
            and not self._skip_lf
            and not self._data
            and not self._invalid_utf8
        )

    def skip(self, count: int) -> None:
        """Count ``count`` bytes as fed: whole blocks that a fast path decoded itself from
        :attr:`between_blocks`, leaving the decoder between blocks (their fields set
        nothing that persists: only ``event`` and ``data`` lines)."""
        self._bytes_fed += count

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode the next piece of the body; return the events it completed.

        The events a chunk completed before a line or an event's data over
        ``max_event_size`` are returned, and :class:`EventTooLarge` is raised by the
        next call (:attr:`failure`); with no event before it, at once."""
        if self._failure is not None or self._state != OPEN:
            self._open("feed")  # raises the held error, or IllegalTransition
        self._bytes_fed += len(chunk)
        if self._undecoded:
            chunk = self._undecoded + chunk
            self._undecoded = b""
        if self._at_start:
            # WHATWG: one leading BOM is stripped, also when its bytes arrive apart.
            if len(chunk) < 3 and _BOM.startswith(chunk):
                self._undecoded = chunk
                self._clean = 0
                return []
            self._at_start = False
            if chunk[:3] == _BOM:
                chunk = chunk[3:]
        try:
            text, used = _utf8_decode(chunk, "strict", False)
        except UnicodeDecodeError as exc:
            events = self._invalid(chunk, exc.start)
        else:
            if used != len(chunk):
                self._undecoded = chunk[used:]
            events = self._lines(text)
            text = ""  # a traceback from here keeps this frame: not the text too
            self._clean = 0 if self._invalid_utf8 else len(events)
        if self._failure is not None and not events:
            self._open("feed")  # over the bound with no event before it: raised at once
        return events

    def _invalid(self, chunk: bytes, start: int) -> list[ServerSentEvent]:
        """The events of a chunk holding bytes that are not UTF-8 from ``start`` on."""
        # WHATWG decodes invalid bytes as U+FFFD; callers that need more can see it here.
        before: list[ServerSentEvent] = []
        if not self._invalid_utf8 and start:
            # The events before the first invalid bytes are counted apart (clean_events).
            before = self._lines(_utf8_decode(chunk[:start], "strict", False)[0])
            chunk = chunk[start:]
        self._invalid_utf8 += 1
        self._clean = len(before)
        if self._state != OPEN:
            return before  # a line over the bound before the invalid bytes
        text, used = _utf8_decode(chunk, "replace", False)
        if used != len(chunk):
            self._undecoded = chunk[used:]
        return before + self._lines(text)

    def _lines(self, text: str) -> list[ServerSentEvent]:
        """The events of the next decoded ``text``: its lines, each interpreted."""
        if not text:
            return []
        # WHATWG: lines end at CRLF, LF or CR. A CR ending this chunk ends its line now;
        # the LF that may start the next chunk is its pair, dropped there (cut_lines).
        lines, tail, self._skip_lf = cut_lines(text, self._skip_lf)
        if not lines and not tail:
            return []  # only the LF of a CRLF split across chunks
        # tail: the start of a line not yet ended ("" after a line end)
        limit = self._max
        if not lines:
            self._partial.append(tail)
            self._partial_len += len(tail)
            if self._partial_len > limit:
                self._too_large(f"SSE line longer than {limit} characters")
            return []
        longest_possible = self._partial_len + len(text)  # at least the longest line's length
        if self._partial:
            self._partial.append(lines[0])
            lines[0] = "".join(self._partial)
            self._partial = []
        if tail:
            self._partial = [tail]
        self._partial_len = len(tail)
        if longest_possible > limit and max(len(tail), *map(len, lines)) > limit:
            # The lines before the first one too long are interpreted: their events are
            # whole. From that line on nothing is kept.
            first = next((i for i, line in enumerate(lines) if len(line) > limit), len(lines))
            del lines[first:]
            events = self._interpret(lines)
            if self._state == OPEN:
                self._too_large(f"SSE line longer than {limit} characters")
            return events
        self._in_block = lines[-1] != ""
        return self._interpret(lines)

    def close(self) -> list[ServerSentEvent]:
        """Mark the end of the stream. Returns ``[]``, or raises the
        :class:`EventTooLarge` the last feed held (:attr:`failure`).

        WHATWG: a block not ended by a blank line before EOF is not dispatched,
        and a last line without a line end is discarded. Check :attr:`pending`
        first to learn whether that happened. :meth:`feed` raises afterwards.
        """
        if self._open("close"):
            self._in_block = self.pending  # keep the answer once the buffers are gone
            self._state = CLOSED
        self._drop_buffers()
        return []

    def _interpret(self, lines: list[str]) -> list[ServerSentEvent]:
        """Run the WHATWG line rules over complete lines (terminators removed)."""
        events: list[ServerSentEvent] = []
        make = new_event
        data = self._data
        data_len = self._data_len
        data_limit = self._max + 1  # the data buffer holds one LF more than the event's data
        event_type = self._event_type
        id_buffer = self._id_buffer
        last_event_id = self._last_event_id
        block_retry = self._block_retry
        for line in lines:
            if not line:
                # WHATWG "dispatch the event": commit the ID even with no data.
                last_event_id = id_buffer
                if data:
                    joined = data[0] if len(data) == 1 else "\n".join(data)
                    event = make(event_type or "message", joined, id_buffer, block_retry)
                    events.append(event)
                    data = []
                    data_len = 0
                event_type = ""
                block_retry = None
                continue
            if line[:6] == "data: ":
                # Fast paths for the commonest lines, written as every provider writes
                # them; WHATWG's rule (one leading space removed) as in the general case.
                value = line[6:]
            elif line[:5] == "data:":
                value = line[5:]
            elif line[:7] == "event: ":
                event_type = line[7:]
                continue
            elif line[0] == ":":
                self._comments += 1
                continue
            else:
                name, _, value = line.partition(":")
                if value[:1] == " ":
                    value = value[1:]
                if name == "event":
                    event_type = value
                    continue
                if name == "id":
                    # WHATWG: an id containing U+0000 is ignored.
                    if "\x00" not in value:
                        id_buffer = value
                    continue
                if name == "retry":
                    # WHATWG: ASCII digits only; "1e3", "-1", "" and "²" are ignored.
                    if value.isascii() and value.isdigit():
                        retry = retry_value(value)
                        if retry is not None:
                            block_retry = self._reconnection_time = retry
                    continue
                if name != "data":
                    continue  # WHATWG: any other field is ignored.
            data.append(value)
            data_len += len(value) + 1
            if data_len > data_limit:
                # The events before it are whole: returned, the error raised after them.
                self._too_large(f"SSE event data longer than {self._max} characters")
                return events
        self._data = data
        self._data_len = data_len
        self._event_type = event_type
        self._id_buffer = id_buffer
        self._last_event_id = last_event_id
        self._block_retry = block_retry
        return events

    def _too_large(self, message: str) -> None:
        """Fail, keeping the error for :meth:`feed` to raise (see its docstring)."""
        self._fail()
        self._failure = EventTooLarge(message, limit=self._max)

    def _fail(self) -> None:
        super()._fail()
        self._drop_buffers()

    def _drop_buffers(self) -> None:
        self._undecoded = b""
        self._partial = []
        self._data = []
        self._data_len = 0
