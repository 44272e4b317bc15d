"""The bytes the guard's tail rules share: line ends, the start of a last event, and
walking back over a body's lines.

Each provider's rule (its spec's ``proof.proven_by_tail``) says True only where the
core reader would find the turn COMPLETE; False means "ask the reader", never
"interrupted". ``tests/test_guard_tail.py`` proves the two never disagree.
"""

from __future__ import annotations

import re

__all__ = ["EOL", "EVENT_START", "TAIL_BYTES", "ends_with", "line_start", "previous_line"]

# A line end is CRLF, LF, or a CR not followed by LF: CRLF never counts as two.
EOL = rb"(?:\r\n|\r(?!\n)|\n)"
# The last line end of the event before, then a blank line (the body's start counts too).
EVENT_START = EOL + EOL
# How much of a body's end a fixed-size rule looks at.
TAIL_BYTES = 256
_ERROR = b'"error"'  # an error event or error object: let the reader judge


def ends_with(rule: re.Pattern[bytes], body: bytes) -> bool:
    """True when ``body`` holds no ``"error"`` and its tail matches ``rule`` (a pattern
    anchored at the end; the body's start counts as a blank line)."""
    if _ERROR in body:
        return False
    tail = body[-TAIL_BYTES:] if len(body) > TAIL_BYTES else b"\n\n" + body
    return rule.search(tail) is not None


def line_start(body: bytes, end: int) -> int:
    """Where the line that ends at ``end`` starts: after the previous CR or LF."""
    lf = body.rfind(b"\n", 0, end)
    return max(lf, body.rfind(b"\r", lf + 1, end)) + 1  # CR: searched only after that LF


def previous_line(body: bytes, start: int) -> tuple[int, int]:
    """(start, end) of the line before the one at ``start`` > 0 (CRLF is one end)."""
    end = start - (2 if body[max(0, start - 2) : start] == b"\r\n" else 1)
    return line_start(body, end), end


def last_data(body: bytes, *, trailers: tuple[bytes, ...] = ()) -> bytes | None:
    """The value of the body's last event when that event is one ``data:`` line alone
    (after a blank line or the body's start, dispatched by a blank line), none of its
    bytes ``"error"``; a last event whose data is one of ``trailers`` (a proxy's
    ``[DONE]``) is stepped over. None for anything else: the reader judges it."""
    if _ERROR in body:
        return None
    blank = re.compile(EOL + EOL + rb"[\r\n]*\Z").search(body, max(0, len(body) - TAIL_BYTES))
    if blank is None:
        return None
    start, end = line_start(body, blank.start()), blank.start()
    value = _data(body, start, end)
    if value in trailers and start > 0:
        p_start, p_end = previous_line(body, start)
        if p_start != p_end or p_start == 0:
            return None
        start, end = previous_line(body, p_start)
        value = _data(body, start, end)
    if value is None:
        return None
    if start > 0:
        p_start, p_end = previous_line(body, start)
        if p_start != p_end:
            return None  # another field of the same event
    return value


def _data(body: bytes, start: int, end: int) -> bytes | None:
    if not body.startswith(b"data:", start):
        return None
    value = body[start + 5 : end]
    return value[1:] if value.startswith(b" ") else value  # WHATWG: one space is dropped
