"""The reader's fast path for SSE streams: whole ``data:`` blocks read straight from bytes.

Nearly every block an LLM provider sends is ``data: {json}\\n\\n`` or ``event: name\\n
data: {json}\\n\\n``. For those, the general path decodes the bytes to text, runs the
WHATWG line rules, builds a :class:`~railings.wire.sse.ServerSentEvent`, and the
provider decoder encodes the data back to bytes for jiter. :func:`read_blocks` does
the same work in one loop over the bytes: ``bytes.split`` at the blank lines, the
JSON parsed from the chunk's own bytes, the provider decoder's handler table called
directly (``feed_sse_object``), the assembler applied inline, and the termination state
looked at only after a proof or a provider error, the only events that end a turn.

What it skips, and why the result is the same (events, :class:`~railings.turn.model.Turn`,
verdict, ``events_seen`` and the SSE decoder's state):

* It runs only from a block boundary (:attr:`SSEDecoder.between_blocks`: nothing
  buffered, no CR pending, no invalid UTF-8 seen yet), on a chunk that has no CR, is
  valid UTF-8 (a character cut at its end is left to the decoder) and is no larger
  than the event size limit (so the general path could not have raised
  ``EventTooLarge`` on it either). There a block of LF-ended lines ``data: X`` or
  ``event: N`` + ``data: X`` is, by WHATWG's rules, exactly one event ``(N or
  "message", X)``: no BOM can be stripped, no ID or retry changes, no comment counted.
* Each block is decoded only when its data is one line that jiter (or the stdlib's
  scanner) parses to an object: ``load_object`` would then return the same object,
  and ``feed_sse_object`` is the decoder's ``feed`` after that parse (``[DONE]`` and the
  other non-JSON data are not objects).
* Anything else -- a comment, an ``id:`` or ``retry:`` field, ``data:`` without its
  space, several data lines, data that is not a JSON object, a decoder or framing
  without a ``feed_sse_object`` -- stops the loop at that block's first byte, a block
  boundary, and the rest of the chunk goes through the general path, which from a
  boundary decodes it exactly as it would have inside the whole chunk.

``tests/test_fastpath.py`` checks the two paths equal on arbitrary streams cut anywhere.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from typing import Any

from railings.errors import MalformedStream
from railings.events import ProviderErrorEvent, StreamEvent, TerminationProof
from railings.turn.assembler import TurnAssembler
from railings.wire._json import parse_bytes

__all__ = ["FeedObject", "eligible", "read_blocks"]

FeedObject = Callable[[str, dict[str, Any]], list[StreamEvent]]

_ENDING = (TerminationProof, ProviderErrorEvent)  # the events after which a turn may be over
_utf8_decode = codecs.utf_8_decode
_NAMES = 64  # how many event names one stream's cache keeps


def eligible(chunk: bytes, limit: int) -> bool:
    """Whether the fast path may read ``chunk`` (once the decoder is between blocks):
    ``bytes`` (not another buffer), no CR, valid UTF-8 up to a character its end may cut,
    at most ``limit`` bytes."""
    if type(chunk) is not bytes or len(chunk) > limit or 13 in chunk:  # 13: CR, by memchr
        return False
    if chunk.isascii():
        return True
    try:
        _utf8_decode(chunk, "strict", False)
    except UnicodeDecodeError:
        return False
    return True


def read_blocks(
    chunk: bytes,
    feed_object: FeedObject,
    assembler: TurnAssembler,
    out: list[StreamEvent],
    names: dict[bytes, str],
) -> tuple[int, int, bool]:
    """Read the plain blocks at the start of ``chunk`` (an :func:`eligible` chunk, fed
    between blocks), appending their events to ``out``. Returns the bytes read (whole
    blocks), the events decoded, and whether the turn ended. ``names`` keeps the event
    names decoded so far (``event: `` lines as bytes -> the event type)."""
    blocks = chunk.split(b"\n\n")
    blocks.pop()  # what follows the last blank line: not a whole block
    apply = assembler.apply
    append = out.append
    machine = assembler.machine
    pos = frames = 0
    for block in blocks:
        if block[:6] == b"data: ":
            event = "message"
            data = block[6:]
        elif block[:7] == b"event: ":
            line, _, data = block.partition(b"\ndata: ")  # no data line: b"", not JSON
            found = names.get(line)
            if found is None:
                if 10 in line:  # LF
                    break  # another field between the two
                found = line[7:].decode() or "message"
                if len(names) < _NAMES:
                    names[line] = found
            event = found
        else:
            break
        if 10 in data:  # LF
            break  # several data lines, or a field after the data
        try:
            obj = parse_bytes(data)
        except Exception:  # not JSON, or not what the fast parser accepts: the general path
            break
        if type(obj) is not dict:
            break
        pos += len(block) + 2
        frames += 1
        try:
            normalized = feed_object(event, obj)
        except MalformedStream as exc:
            assembler.fault(str(exc))
            return pos, frames, True
        for item in normalized:
            apply(item)
            append(item)
            if isinstance(item, _ENDING) and machine.terminated:
                return pos, frames, True
    return pos, frames, False
