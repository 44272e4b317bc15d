"""What of a turn's stream may be journaled and shown yet: the tail that could be half a secret
is held back.

A hostile model can print a key the user registered (the client's own key, a key
in the environment) split across deltas, five characters at a time: each piece
is harmless, their join is not. :class:`StreamRelease` sits between the stream
and everything that stores or shows it (the journal, ``on_event``, the live
view): it passes each text stream -- text, thinking, refusal, each tool call's
arguments -- through a :class:`~railings.redact.Holdback`, so what it releases is
redacted as joined text, and holds back at most (the longest secret's length -
1) characters. Events that carry no text pass through, after whatever the
previous stream still held. The agent journals a released event before it
publishes it, so the journal holds everything that was ever printed.
"""

from __future__ import annotations

import dataclasses

from railings.events import RefusalDelta, StreamEvent, TextDelta, ThinkingDelta, ToolArgumentsDelta
from railings.redact import Holdback

__all__ = ["StreamRelease"]

_Text = TextDelta | ThinkingDelta | RefusalDelta
_Key = tuple[type[_Text | ToolArgumentsDelta], int]  # the stream: its kind, its call's index


def _key(event: StreamEvent) -> _Key | None:
    match event:
        case TextDelta() | RefusalDelta():
            return (type(event), 0)
        case ThinkingDelta(text=text) if text:
            return (ThinkingDelta, 0)
        case ToolArgumentsDelta(index=index):
            return (ToolArgumentsDelta, index)
    return None


def _with_text(event: StreamEvent, text: str) -> StreamEvent:
    if isinstance(event, ToolArgumentsDelta):
        return dataclasses.replace(event, fragment=text)
    if isinstance(event, _Text):
        return dataclasses.replace(event, text=text)
    return event


def _bare(key: _Key, text: str) -> StreamEvent:
    kind, index = key
    if issubclass(kind, ToolArgumentsDelta):
        return ToolArgumentsDelta(index=index, fragment=text)
    return kind(text=text)


class StreamRelease:
    """Turns the events of one turn into the events that may be stored and shown now."""

    def __init__(self) -> None:
        self._key: _Key | None = None
        self._held = Holdback()

    def feed(self, event: StreamEvent) -> list[StreamEvent]:
        """The events ``event`` releases, in order (none, when all of its text is held)."""
        key = _key(event)
        out = self.flush() if key != self._key else []
        if key is None:
            out.append(event)
            return out
        self._key = key
        text = (
            event.fragment if isinstance(event, ToolArgumentsDelta) else getattr(event, "text", "")
        )
        released = self._held.feed(text)
        if released:
            out.append(_with_text(event, released))
        return out

    def flush(self) -> list[StreamEvent]:
        """What the current stream still holds, at its end."""
        if self._key is None:
            return []
        key, self._key = self._key, None
        released = self._held.flush()
        return [_bare(key, released)] if released else []
