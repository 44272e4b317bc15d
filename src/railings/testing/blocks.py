"""SSE blocks, byte-exact: the fault proxy's unit of action.

A block is everything up to and including the blank line that ends an event, with
its bytes unchanged (:class:`EventSplitter`, from the core's
:mod:`railings.wire.blocks`, re-exported here, where every SSE cutting rule lives);
:func:`is_terminator` tells a provider's termination proof by the provider specs' own
proofs, and :func:`corrupt_event` breaks one block on purpose. The gateway and the
reliability tools cut streams with the same splitter.
"""

from __future__ import annotations

import json

from railings.providers import SPECS
from railings.wire.blocks import EventSplitter, line_spans, lines

__all__ = ["EventSplitter", "corrupt_event", "is_terminator"]


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
    for line in lines(block):
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
    data = next(((a, b) for a, b in line_spans(block) if block.startswith(b"data:", a)), None)
    if data is None:
        return block
    value_start, value_end = data
    value_start += 6 if block.startswith(b"data: ", value_start) else 5
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
