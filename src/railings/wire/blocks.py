"""SSE streams cut into lines and blocks: the one home of the cutting rules.

WHATWG: a line ends at CRLF, LF or CR, and a block (one event's lines) ends at a blank
line. Every part of railings that cuts an event stream cuts it here:

* :func:`cut_lines`: text (or bytes) cut into lines, a CR at the end ending its line at
  once and the LF that may start the next piece being its pair. The SSE decoder
  (:mod:`railings.wire.sse`) runs it on each decoded chunk; the test kit reads one whole
  block's lines with it (:func:`lines`), or where they are (:func:`line_spans`).
* :func:`split_plain`: LF-only bytes from a block boundary cut at their blank lines, in
  one ``bytes.split`` (what every provider sends): the reader's fast path
  (:mod:`railings.turn.fastpath`) and :class:`EventSplitter`'s fast case.
* :class:`EventSplitter`: byte-exact blocks, each with its bytes as they came, so a block
  can be passed on, held back, replaced or repeated without re-encoding anything: the
  gateway's judge and the test kit's fault proxy (``railings.sse_blocks`` and
  ``railings.testing`` re-export it). Byte-exact blocks cannot drop the LF of a CRLF cut
  between two pieces, so here a CR at the end of the input waits for that LF; a block is
  the same bytes however the stream was split.

Sans-IO, no railings imports: the SSE decoder decodes events; this says where lines and
blocks end.
"""

from __future__ import annotations

import re
from typing import AnyStr

__all__ = ["EventSplitter", "cut_lines", "line_spans", "lines", "split_plain"]

_EOL = re.compile(rb"\r\n|\r|\n")
# The most bytes of an unfinished block the fast path joins to the next piece; a longer
# block (a large tool argument in one event) is scanned where the last scan stopped.
_JOIN = 16 * 1024


def cut_lines(text: AnyStr, cr_before: bool = False) -> tuple[list[AnyStr], AnyStr, bool]:
    """The lines ``text`` completes, their ends removed; the start of the line it leaves
    unended (empty after a line end); and whether it ended in CR.

    ``cr_before``: the piece before ended in CR, which ended its line already (WHATWG:
    a CR ends a line), so a LF that starts ``text`` is that CR's pair, not a line end.
    ``str.splitlines`` is not usable: it also breaks on VT, FF, FS, GS, RS, NEL, U+2028
    and U+2029, which SSE keeps as data."""
    lf, cr, crlf = ("\n", "\r", "\r\n") if isinstance(text, str) else (b"\n", b"\r", b"\r\n")
    if cr_before and text[:1] == lf:
        text = text[1:]
    ends_in_cr = False
    if cr in text:
        ends_in_cr = text[-1:] == cr
        text = text.replace(crlf, lf).replace(cr, lf)
    cut = text.split(lf)
    return cut, cut.pop(), ends_in_cr


def lines(block: bytes) -> list[bytes]:
    """The non-empty lines of one whole block (or any bytes), their ends removed."""
    cut, tail, _ = cut_lines(block)
    return [line for line in (*cut, tail) if line]


def line_spans(block: bytes) -> list[tuple[int, int]]:
    """Where each line of ``block`` that has its end starts and stops (the end excluded),
    for a caller that edits a line in place (the test kit breaks one on purpose)."""
    spans, start = [], 0
    for end in _EOL.finditer(block):
        spans.append((start, end.start()))
        start = end.end()
    return spans


def split_plain(data: bytes) -> tuple[list[bytes], bytes]:
    """LF-only ``data`` read from a block boundary, cut at its blank lines: each piece
    before a blank line (the block, without it), and what follows the last one (the start
    of a block not yet ended). A piece is a block as WHATWG reads it when it does not
    start with LF, which its reader checks (a run of three LFs gives one)."""
    blocks = data.split(b"\n\n")
    return blocks, blocks.pop()


class EventSplitter:
    """Bytes in, whole SSE blocks out, each with its own bytes unchanged.

    A block ends at a blank line (WHATWG: CRLF, LF or CR line ends; a CR at the
    end of the input waits for a possible LF). Blank lines before a block's
    first line belong to that block, so every block carries at least one line.

    Every provider ends its lines with LF alone, so while the buffer holds no CR
    a block is found with ``bytes.find(b"\n\n")``, in C; any CR sends the
    buffer through the general scan, line by line. Both keep the same state.
    When the unfinished block held (at most ``_JOIN`` bytes) and the new piece together
    have no CR, no run of three LFs and no LF first (what a provider sends), they are
    cut with one ``bytes.split(b"\n\n")``: there every blank line follows a non-empty
    line and precedes one, so each pair ends a block, as the scan would find.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan = 0  # where to look for the next line end
        self._line = 0  # where the current line starts
        self._first_line = -1  # where the current block's first non-empty line starts
        self._cr = False  # the buffer may hold a CR

    def feed(self, data: bytes) -> list[bytes]:
        """The blocks ``data`` completed, each byte-exact, in order."""
        buf = self._buf
        if len(buf) <= _JOIN and not self._cr and 13 not in data:  # 13: CR, by memchr
            whole = bytes(buf) + data if buf else data
            if whole[:1] != b"\n" and b"\n\n\n" not in whole:
                return self._split(whole)
        buf += data
        self._cr = self._cr or b"\r" in data
        return self._scan_any() if self._cr else self._scan_lf()

    def _split(self, whole: bytes) -> list[bytes]:
        """The fast path (see the class docstring): ``whole`` is the buffer and the new
        bytes, LF-only, not starting with LF, without three LFs in a row."""
        blocks, rest = split_plain(whole)
        buf = self._buf
        buf.clear()
        buf += rest  # the start of the next block, as the LF scan leaves it
        self._first_line = 0 if rest else -1
        self._line = rest.rfind(b"\n") + 1
        self._scan = len(rest)
        return [block + b"\n\n" for block in blocks]

    def _scan_lf(self) -> list[bytes]:
        buf = self._buf
        size = len(buf)
        out: list[bytes] = []
        start = 0
        look = max(self._scan - 1, 0)  # a blank line can start on the last byte scanned
        while True:
            first = start
            while first < size and buf[first] == 10:
                first += 1  # blank lines before the first line belong to the block
            if first == size:
                break
            end = buf.find(b"\n\n", max(first, look))
            if end < 0:
                break
            # The first LF of the pair ends a non-empty line: an earlier pair would
            # have been found, and the block's first line does not start with LF.
            out.append(bytes(buf[start : end + 2]))
            start = end + 2
        if start:
            del buf[:start]
        self._first_line = first - start if first < size else -1
        self._line = buf.rfind(b"\n") + 1
        self._scan = len(buf)
        return out

    def _scan_any(self) -> list[bytes]:
        buf = self._buf
        out: list[bytes] = []
        start = 0
        while True:
            m = _EOL.search(buf, self._scan)
            if m is None:
                self._scan = len(buf)  # no line end up to here: never rescan it
                break
            if m.group() == b"\r" and m.end() == len(buf):
                break  # maybe the first half of a CRLF
            if m.start() == self._line:
                if self._first_line >= 0:
                    out.append(bytes(buf[start : m.end()]))
                    start = m.end()
                    self._first_line = -1
            elif self._first_line < 0:
                self._first_line = self._line
            self._line = self._scan = m.end()
        if start:
            del buf[:start]
            self._scan -= start
            self._line -= start
            if self._first_line >= 0:
                self._first_line -= start
        self._cr = b"\r" in buf
        return out

    @property
    def pending(self) -> int:
        """How many bytes of an unfinished block it holds (0: it is between blocks)."""
        return len(self._buf)

    def close(self) -> bytes:
        """What is left: an unterminated block (or nothing)."""
        rest = bytes(self._buf)
        self._buf.clear()
        self._scan = self._line = 0
        self._first_line = -1
        self._cr = False
        return rest
