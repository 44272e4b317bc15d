"""Block templates: the fast path's way past parsing a block that repeats the last one.

Within one stream a provider sends the same envelope with nearly every fragment: an
OpenAI chunk repeats its ``id``, ``model``, ``system_fingerprint``, ``choices`` and
``usage`` byte for byte, and only the delta's text and the ``obfuscation`` padding
change. Parsing the whole 300-400 byte object again costs more than reading the
strings that changed. An Anthropic delta is smaller, but its one value is the last,
and reading one string between a head and a tail takes less than parsing the object.
Those two shapes (a string hole, perhaps followed by a free one) are read inline,
without the general loop over holes, whose per-hole steps cost about what a small
object's parse does. (The Responses API's text deltas hold three values in a small
object: parsing it is cheaper than reading three holes, and its decoder offers none;
``bench/templates.py`` times both answers, docs/PERFORMANCE.md.)

A :class:`BlockTemplate` is learned from a block the decoder's ``feed_common`` took:
its bytes cut at the values the decoder names (``common_template``), into the constant
segments around them. A later block is read by it when it is those segments with a
valid JSON value of the learned kind in each hole:

* Why the object is then the one parsing would give: JSON's grammar lets one value
  token be replaced by another anywhere, so the block is a valid JSON text, and it
  parses to the learned object with each hole's path holding the hole's value (every
  other byte is the learned block's). Each hole's token is parsed by the same function
  the fast path parses whole blocks with (``parse_bytes``), so its value and what it
  accepts are the parser's; an integer hole is ASCII digits without a leading zero.
  A learned object with a duplicate key anywhere makes no template (the parser keeps
  the last value, and the cut could be at the first), and neither does a block whose
  holes read back other values than the parse of the learned block.
* Why the event is the one ``feed_common`` would return: the decoder's ``make``
  receives the holes' values and, given the learned object around them, checks what
  ``feed_common`` would check of those values and of the decoder's state, which can
  have changed since (``tests/test_template.py`` holds each decoder's two answers
  equal); every field outside the holes passed ``feed_common`` when it was learned.
* A block that does not fit (another envelope, whitespace moved, a value of another
  kind) returns None, having changed nothing: the fast path then parses it.

Free holes are values no check reads (OpenAI's ``obfuscation``): their tokens are only
validated as JSON strings. A reader learns a bounded number of templates, so a stream
whose envelope changes with every block costs at most that many learnings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from railings.events import StreamEvent
from railings.wire._events import Make, Path
from railings.wire._json import parse_bytes

__all__ = ["BlockTemplate", "spans"]

# One JSON token after optional whitespace, on data the parser accepted (so valid JSON, with
# json.loads's NaN and Infinity): a string, a number, a literal, or a structural character.
_TOKEN = re.compile(
    rb'[ \t\n\r]*(?:("(?:[^"\\]|\\.)*")'
    rb"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
    rb"|(true|false|null|NaN|-?Infinity)|([\[\]{},:]))",
    re.DOTALL,
)
_SPACE = b" \t\n\r"
_STRING, _INT, _FREE = 0, 1, 2  # the kinds of hole
_QUOTE = 34


def spans(data: bytes, wanted: set[Path]) -> dict[Path, tuple[int, int]] | None:
    """The byte span of the value token at each path of ``wanted`` that ``data`` (a JSON
    text the parser accepted) holds a scalar at; None if any object in it repeats a key."""
    found: dict[Path, tuple[int, int]] = {}
    path: list[str | int] = []  # the key or index of each open container
    keys: list[set[str] | None] = []  # the keys seen in each open object (None: array)
    want_key = False  # the next string is an object's key
    pos, end = 0, len(data)
    while pos < end:
        match = _TOKEN.match(data, pos)
        if match is None:
            if data[pos:].strip(_SPACE):
                return None  # not JSON (the parser would have refused it)
            break
        pos = match.end()
        string, number, _, mark = match.groups()
        if mark is not None:
            if mark in b"{[":
                is_object = mark == b"{"
                keys.append(set() if is_object else None)
                path.append("" if is_object else 0)
                want_key = is_object
            elif mark in b"}]":
                keys.pop()
                path.pop()
                want_key = False
            elif mark == b",":
                seen = keys[-1] if keys else None
                if seen is None:
                    path[-1] = int(path[-1]) + 1
                want_key = seen is not None
            continue
        if want_key and string is not None:
            key = json.loads(string)
            seen = keys[-1]
            if seen is None or key in seen:
                return None
            seen.add(key)
            path[-1] = key
            want_key = False
            continue
        where = tuple(path)
        if where in wanted:
            group = 1 if string is not None else 2 if number is not None else 3
            found[where] = (match.start(group), pos)
    return found


def _is_padding(token: bytes) -> bool:
    """Whether ``token``, a free hole's, is a JSON string the parser accepts: ASCII letters
    and digits between quotes are one without a parse."""
    if token[1:-1].isalnum() and token[0] == token[-1] == _QUOTE:
        return True
    try:
        return type(parse_bytes(token)) is str
    except Exception:  # not a JSON value the parser accepts
        return False


def _value(obj: Any, path: Path) -> Any:
    for step in path:
        obj = obj[step]
    return obj


class BlockTemplate:
    """The constant segments of one learned block and the holes between them (see the
    module docstring)."""

    __slots__ = (
        "_first",
        "_holes",
        "_make",
        "_middle",
        "_order",
        "_shape",
        "_tail_length",
        "event",
        "head",
        "tail",
    )

    def __init__(
        self, event: str, segments: list[bytes], holes: list[tuple[int, int]], make: Make
    ) -> None:
        """``holes``: each hole's ``(kind, slot)``, in the order of the bytes; ``segments``:
        the bytes before, between and after them (one more than the holes)."""
        self.event = event
        self.head, self.tail = segments[0], segments[-1]
        self._first = len(segments[0])
        self._tail_length = len(segments[-1])
        # Each hole: its kind and the segment that follows it (None: the tail).
        self._holes = [
            (kind, segments[i + 1] if i + 2 < len(segments) else None)
            for i, (kind, _) in enumerate(holes)
        ]
        slots = [slot for kind, slot in holes if kind != _FREE]
        order = sorted(range(len(slots)), key=slots.__getitem__)
        self._order = None if order == [*range(len(slots))] else order
        self._make = make
        # The two commonest shapes are read inline (read): one string hole (Anthropic's
        # deltas), and one string hole followed by a free one (OpenAI's chunks, whose
        # padding comes last); any other, by the loop of values().
        kinds = [kind for kind, _ in holes]
        self._shape = 1 if kinds == [_STRING] else 2 if kinds == [_STRING, _FREE] else 0
        self._middle = segments[1] if self._shape == 2 else b""

    @classmethod
    def learn(
        cls,
        event: str,
        data: bytes,
        obj: dict[str, Any],
        values: Sequence[Path],
        free: Sequence[Path],
        make: Make,
    ) -> BlockTemplate | None:
        """The template of ``data`` (which parsed to ``obj``) with a hole at each path of
        ``values`` (a string or an integer, each handed to ``make`` in that order) and of
        ``free`` (a string, only validated), or None if it cannot be made."""
        found = spans(data, {*values, *free})
        if found is None:
            return None
        cuts: list[tuple[int, int, int, int]] = []  # start, end, kind, slot
        for slot, path in enumerate(values):
            where = found.get(path)
            if where is None:
                return None
            value = _value(obj, path)
            kind = _STRING if type(value) is str else _INT if type(value) is int else None
            if kind is None or (kind is _INT and value < 0):
                return None
            cuts.append((*where, kind, slot))
        for path in free:
            where = found.get(path)
            if where is not None and data[where[0]] == _QUOTE:
                cuts.append((*where, _FREE, -1))
        cuts.sort()
        segments, at = [], 0
        for start, stop, _, _ in cuts:
            segments.append(data[at:start])
            at = stop
        segments.append(data[at:])
        if any(not segment for segment in segments[1:-1]):
            return None  # two holes touching: nothing tells where one ends
        template = cls(event, segments, [(kind, slot) for _, _, kind, slot in cuts], make)
        expected = [_value(obj, path) for path in values]
        if template.values(data) != expected:
            return None
        return template

    def values(self, data: bytes) -> list[Any] | None:
        """The holes' values in ``data``, or None if ``data`` does not fit the template."""
        if not (data.startswith(self.head) and data.endswith(self.tail)):
            return None
        pos, end = self._first, len(data) - self._tail_length
        if end < pos:
            return None  # the head and the tail overlap
        out: list[Any] = []
        for kind, after in self._holes:
            if after is None:
                token = data[pos:end]
            else:
                stop = data.find(after, pos, end)
                if stop < 0:
                    return None
                token = data[pos:stop]
                pos = stop + len(after)
            if kind == _INT:
                if (
                    not token.isdigit()
                    or len(token) > 18  # a longer one is parsed whole (int() has a limit)
                    or (token[0] == 48 and len(token) > 1)  # 48: "0"
                ):
                    return None
                out.append(int(token))
                continue
            if kind == _FREE:
                if not _is_padding(token):
                    return None
                continue
            try:
                value = parse_bytes(token)
            except Exception:  # not a JSON value the parser accepts
                return None
            if type(value) is not str:
                return None
            out.append(value)  # a string hole: the int and free ones went on above
        order = self._order
        return out if order is None else [out[i] for i in order]

    def read(self, data: bytes) -> StreamEvent | None:
        """The event ``feed_common`` would return for ``data``, or None (then the block is
        parsed): the block does not fit, or ``make`` finds it is not the common shape."""
        shape = self._shape
        if shape:  # values(), inline for one string hole and perhaps a free one after it
            first, last = self._first, len(data) - self._tail_length
            if last < first or not (data.startswith(self.head) and data.endswith(self.tail)):
                return None
            if shape == 2:
                middle = self._middle
                stop = data.find(middle, first, last)
                if stop < 0:
                    return None
                if not _is_padding(data[stop + len(middle) : last]):
                    return None
                last = stop
            try:
                value = parse_bytes(data[first:last])
            except Exception:  # not a JSON value the parser accepts
                return None
            return self._make([value]) if type(value) is str else None
        values = self.values(data)
        return None if values is None else self._make(values)
