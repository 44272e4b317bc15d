"""Constructors of the two commonest normalized events, cheaper than their own ``__init__``.

A text or argument fragment is built for nearly every event of a stream. A frozen
dataclass's ``__init__`` sets each field through ``object.__setattr__``; writing the
slots through their descriptors, as ``railings.wire.sse`` does for
``ServerSentEvent``, builds an equal, just as frozen object for less
(docs/PERFORMANCE.md, "Why the code is as it is"). The field lists are checked at
import, so a field added to either class fails loudly here instead of being left unset.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any

from railings.events import StreamEvent, TextDelta, ToolArgumentsDelta

__all__ = [
    "NEW",
    "SET_FRAGMENT",
    "SET_INDEX",
    "SET_PARSED",
    "SET_TEXT",
    "Holes",
    "Make",
    "Path",
    "arguments_delta",
    "text_delta",
]

if tuple(f.name for f in fields(TextDelta)) != ("text",) or tuple(
    f.name for f in fields(ToolArgumentsDelta)
) != ("index", "fragment", "parsed"):
    raise ImportError(
        "railings.wire._events: the fields of TextDelta or ToolArgumentsDelta changed"
    )

# The pieces, for the decoders' fast paths that build an event inline (one call less per
# event): ``e = NEW(TextDelta); SET_TEXT(e, text)`` is ``text_delta(text)``.
NEW = _new = object.__new__
SET_TEXT = _set_text = vars(TextDelta)["text"].__set__
SET_INDEX = _set_index = vars(ToolArgumentsDelta)["index"].__set__
SET_FRAGMENT = _set_fragment = vars(ToolArgumentsDelta)["fragment"].__set__
SET_PARSED = _set_parsed = vars(ToolArgumentsDelta)["parsed"].__set__


def text_delta(text: str) -> TextDelta:
    """``TextDelta(text=text)``."""
    event: Any = _new(TextDelta)
    _set_text(event, text)
    return event  # type: ignore[no-any-return]


def arguments_delta(index: int, fragment: str) -> ToolArgumentsDelta:
    """``ToolArgumentsDelta(index=index, fragment=fragment)`` (``parsed`` False)."""
    event: Any = _new(ToolArgumentsDelta)
    _set_index(event, index)
    _set_fragment(event, fragment)
    _set_parsed(event, False)
    return event  # type: ignore[no-any-return]


# What a decoder's ``common_template`` returns for a block template (``turn/template.py``):
# the paths of the values handed to ``make``, the paths of the free values, and ``make``.
Path = tuple[str | int, ...]
Make = Callable[[list[Any]], StreamEvent | None]
Holes = tuple[Sequence[Path], Sequence[Path], Make]
