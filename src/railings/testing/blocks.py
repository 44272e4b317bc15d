"""SSE blocks, byte-exact: the fault proxy's unit of action.

A block is everything up to and including the blank line that ends an event, with
its bytes unchanged (:class:`EventSplitter`); :func:`is_terminator` tells a
provider's termination proof by the provider specs' own proofs, and
:func:`corrupt_event` breaks one block on purpose. The gateway and the reliability
tools cut streams with the same splitter.
"""

from __future__ import annotations

import json
import re

from railings.providers import SPECS

__all__ = ["EventSplitter", "corrupt_event", "is_terminator"]

_EOL = re.compile(rb"\r\n|\r|\n")


class EventSplitter:
    """Bytes in, whole SSE blocks out, each with its own bytes unchanged.

    A block ends at a blank line (WHATWG: CRLF, LF or CR line ends; a CR at the
    end of the input waits for a possible LF). Blank lines before a block's
    first line belong to that block, so every block carries at least one line.

    Every provider ends its lines with LF alone, so while the buffer holds no CR
    a block is found with ``bytes.find(b"\n\n")``, in C; any CR sends the
    buffer through the general scan, line by line. Both keep the same state.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan = 0  # where to look for the next line end
        self._line = 0  # where the current line starts
        self._first_line = -1  # where the current block's first non-empty line starts
        self._cr = False  # the buffer may hold a CR

    def feed(self, data: bytes) -> list[bytes]:
        """The blocks ``data`` completed, each byte-exact, in order."""
        self._buf += data
        self._cr = self._cr or b"\r" in data
        return self._scan_any() if self._cr else self._scan_lf()

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

    def close(self) -> bytes:
        """What is left: an unterminated block (or nothing)."""
        rest = bytes(self._buf)
        self._buf.clear()
        self._scan = self._line = 0
        self._first_line = -1
        self._cr = False
        return rest


def _lines(block: bytes) -> list[bytes]:
    return [line for line in _EOL.split(block) if line]


# Every provider's proof, from its spec: data values (``[DONE]``), ``event:`` names
# (``message_stop``, ``response.completed`` ...) and the data's ``"type"`` values that
# stand for a missing ``event:`` line (OpenRouter's Responses stream).
_PROOF_DATA = frozenset(d.encode() for s in SPECS for d in s.proof.data)
_PROOF_EVENTS = frozenset(e.encode() for s in SPECS for e in s.proof.events)
_PROOF_TYPES = frozenset(t for s in SPECS for t in s.proof.types)
_PROOF_TYPE_BYTES = tuple(t.encode() for t in sorted(_PROOF_TYPES))


def is_terminator(block: bytes) -> bool:
    """True for a termination proof of any provider spec: ``data: [DONE]``, the
    ``message_stop`` event, or a Responses ``response.completed`` /
    ``response.incomplete`` event."""
    data: list[bytes] = []
    for line in _lines(block):
        field, _, value = line.partition(b":")
        value = value[1:] if value.startswith(b" ") else value
        if (field == b"data" and value.strip() in _PROOF_DATA) or (
            field == b"event" and value in _PROOF_EVENTS
        ):
            return True
        if field == b"data":
            data.append(value)
    # Without an event: line (OpenRouter), the data's "type" names the proof.
    # Parsed only when the name is in the block at all: most blocks are never parsed.
    if data and any(proof in block for proof in _PROOF_TYPE_BYTES):
        try:
            obj = json.loads(b"\n".join(data))
        except ValueError:
            return False
        return isinstance(obj, dict) and obj.get("type") in _PROOF_TYPES
    return False


_STRING_KEYS = (
    b'"content":"',
    b'"text":"',
    b'"partial_json":"',
    b'"arguments":"',
    b'"thinking":"',
    b'"delta":"',
    b'":"',
)


def corrupt_event(block: bytes, kind: str) -> bytes:
    """The block with its data line broken (see :class:`Corrupt`)."""
    m = re.search(rb"^data:[ ]?(.*?)(\r\n|\r|\n)", block, re.MULTILINE)
    if m is None:
        return block
    value_start, value_end = m.start(1), m.end(1)
    if kind == "json":
        cut = value_start + (value_end - value_start) // 2
        return block[:cut] + block[value_end:]
    value = block[value_start:value_end]
    for key in _STRING_KEYS:
        at = value.find(key)
        if at >= 0:
            at = value_start + at + len(key)
            return block[:at] + b"\xff\xfe" + block[at:]
    return block[:value_start] + b"\xff\xfe" + block[value_start:]
