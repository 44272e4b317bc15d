"""The guard's fast verdict: a body whose last event is its provider's canonical proof.

:func:`proven_by_tail` looks only at the end of a body (and, for the Responses
API, walks back over its one terminal event and counts the ``sequence_number``
fields): True only where the core reader would find the turn COMPLETE; False
means "ask the reader" (:func:`read_turn`), never "interrupted". A test proves
the two never disagree.
"""

from __future__ import annotations

import re

from railings.errors import EventTooLarge, MalformedStream
from railings.turn.model import Turn
from railings.turn.reader import StreamReader
from railings.wire._json import load_object
from railings.wire.openai_responses import SEQUENCE_NUMBER
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE

__all__ = ["proven_by_tail", "read_turn"]

# The proof as the last event of the body, and that event alone: a blank line (the end of
# the event before; the body's start counts too), then the proof's data line on a line of
# its own (WHATWG: "data:" and at most one space), then the blank line that dispatches it,
# then only blank lines. A proof line that merely ends a longer event (``data: {...}`` then
# ``data: [DONE]`` in one event) is not the proof: that event's data is neither. JSON
# escapes quotes and newlines in strings, so model text cannot forge these bytes. Anything
# else (other fields, a comment inside the event) goes to the reader.
# A line end is CRLF, LF, or a CR not followed by LF: CRLF never counts as two.
_EOL = rb"(?:\r\n|\r(?!\n)|\n)"
_EVENT_START = _EOL + _EOL  # the last line end of the event before, then a blank line
_TAILS = {
    "openai": re.compile(_EVENT_START + rb"data: ?\[DONE\]" + _EOL + _EOL + rb"[\r\n]*\Z"),
    # Anthropic names the event (``event: message_stop``) and pads its JSON with spaces:
    # {"type":"message_stop"          }
    "anthropic": re.compile(
        _EVENT_START
        + rb"(?:event: ?message_stop"
        + _EOL
        + rb')?data: ?\{[ \t]*"type"[ \t]*:[ \t]*"message_stop"[ \t]*\}'
        + _EOL
        + _EOL
        + rb"[\r\n]*\Z"
    ),
}
_ERROR = b'"error"'  # an error event or error object of either provider: let the reader judge
_TAIL_BYTES = 256

# The Responses API. Its terminal event carries the whole response (every output item
# again), so it is found by walking back from the end over its one line, not by a
# fixed-size tail: the body's last event must be a single data line (optionally after
# its ``event:`` line) holding a JSON object whose ``type`` is terminal. That one line
# is parsed (one event, not one per chunk: the cost stays at the end, in C). Anything
# unusual (several data lines, an ``id:`` field, a comment) goes to the reader;
# OpenRouter's ``data: [DONE]`` trailer after the terminal event is stepped over.
# Every Responses response object holds ``"error":null``, so ``_ERROR`` cannot rule
# errors out here: instead every ``"error"`` in the body must be that null. An
# ``error`` event (``"type":"error"``) or a ``response.failed`` (``"error":{...}``)
# sends the body to the reader.
_RESPONSES_PROOFS = frozenset({"response.completed", "response.incomplete"})
_RESPONSES_EVENT_LINE = re.compile(rb"event: ?response\.(?:completed|incomplete)")
_NOT_NULL_ERROR = re.compile(rb'"error"(?!:null)')  # one pass over the body, in C
_DONE_LINE = re.compile(rb"data: ?\[DONE\]")
_BLANK_TAIL = re.compile(_EOL + _EOL + rb"[\r\n]*\Z")


def proven_by_tail(provider: str, body: bytes) -> bool:
    """True when ``body`` ends with its provider's canonical proof and holds no error.

    Only ever True where the core reader finds the turn COMPLETE; False means
    "ask the reader", never "interrupted".
    """
    if provider == "openai-responses":
        return _responses_proven(body)
    if _ERROR in body:
        return False
    tail = body[-_TAIL_BYTES:] if len(body) > _TAIL_BYTES else b"\n\n" + body
    return _TAILS[provider].search(tail) is not None


def _responses_proven(body: bytes) -> bool:
    """The Responses API's tail check (see ``_RESPONSES_PROOFS``)."""
    if _NOT_NULL_ERROR.search(body) is not None:
        return False
    blank = _BLANK_TAIL.search(body, max(0, len(body) - _TAIL_BYTES))
    if blank is None:
        return False  # the last event was never dispatched by its blank line
    start, end = _line_start(body, blank.start()), blank.start()
    if _DONE_LINE.fullmatch(body, start, end) and start > 0:
        # OpenRouter's trailer after the terminal event: step back over it.
        p_start, p_end = _previous_line(body, start)
        if p_start != p_end or p_start == 0:
            return False
        start, end = _previous_line(body, p_start)
    if not body.startswith(b"data:", start) or end - start >= DEFAULT_MAX_EVENT_SIZE:
        return False  # not a data line, or one the reader refuses as too large
    if start > 0:
        p_start, p_end = _previous_line(body, start)
        if p_start != p_end:  # not the blank line that opens the event: its event: line?
            if not _RESPONSES_EVENT_LINE.fullmatch(body, p_start, p_end):
                return False
            if p_start > 0:
                q_start, q_end = _previous_line(body, p_start)
                if q_start != q_end:
                    return False  # another field of the same event
    value = body[start + 5 : end]
    value = value[1:] if value.startswith(b" ") else value  # WHATWG: one space is dropped
    try:
        event = load_object(value.decode("utf-8"), where="guard")
    except (UnicodeDecodeError, MalformedStream):
        return False
    if event.get("type") not in _RESPONSES_PROOFS:
        return False
    last = event.get("sequence_number")
    if not isinstance(last, int):
        return True  # an API that numbers nothing (the reader checks what is numbered)
    # Events lost, repeated or swapped on the way break the count: the reader says how.
    numbers = [int(n) for n in SEQUENCE_NUMBER.findall(body)]  # one pass, in C
    return numbers == list(range(last - len(numbers) + 1, last + 1))


def _line_start(body: bytes, end: int) -> int:
    """Where the line that ends at ``end`` starts: after the previous CR or LF."""
    lf = body.rfind(b"\n", 0, end)
    return max(lf, body.rfind(b"\r", lf + 1, end)) + 1  # CR: searched only after that LF


def _previous_line(body: bytes, line_start: int) -> tuple[int, int]:
    """(start, end) of the line before the one at ``line_start`` > 0 (CRLF is one end)."""
    end = line_start - (2 if body[max(0, line_start - 2) : line_start] == b"\r\n" else 1)
    return _line_start(body, end), end


def read_turn(provider: str, body: bytes, max_tokens: int | None = None) -> Turn:
    """The core's verdict on a whole body that ended (EOF or a broken connection)."""
    reader = StreamReader(provider, max_tokens=max_tokens)
    try:  # noqa: SIM105 -- the reader has ended the turn abruptly; its turn says why
        reader.feed(body)
    except EventTooLarge:
        pass
    reader.close()
    return reader.turn()
