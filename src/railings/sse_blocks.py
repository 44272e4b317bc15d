"""SSE blocks, byte-exact: an event stream cut at its blank lines, each piece unchanged.

:class:`EventSplitter` is what the gateway's judge and the fault proxy cut streams
with: each block is everything up to and including the blank line that ends an
event, with its bytes as they came, so a block can be passed on, held back, replaced
or repeated without re-encoding anything. Sans-IO, no railings imports: the core's
SSE decoder (:mod:`railings.wire.sse`) decodes events; this keeps their bytes.
"""

from __future__ import annotations

import re

__all__ = ["EventSplitter"]

_EOL = re.compile(rb"\r\n|\r|\n")
# The most bytes of an unfinished block the fast path joins to the next piece; a longer
# block (a large tool argument in one event) is scanned where the last scan stopped.
_JOIN = 16 * 1024


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
        *blocks, rest = whole.split(b"\n\n")
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
