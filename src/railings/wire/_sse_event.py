"""One Server-Sent Event, and what the SSE decoder builds it with.

Kept apart from :mod:`railings.wire.sse` (which re-exports :class:`ServerSentEvent`):
the event type, its fast constructor and the ``retry`` field's value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

__all__ = ["ServerSentEvent", "new_event", "retry_value"]


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event.

    ``event`` is ``"message"`` when the event field was absent or empty.
    ``data`` is the data lines joined with LF (the single trailing LF removed).
    ``id`` is the last event ID at dispatch: it persists across events until an
    ``id`` field changes it. ``retry`` is the last valid ``retry`` value inside
    this event's own block, else None (WHATWG only uses it to set the
    reconnection time; see :attr:`SSEDecoder.reconnection_time`).
    """

    event: str
    data: str
    id: str
    retry: int | None


def _event_maker() -> Callable[[str, str, str, int | None], ServerSentEvent]:
    """Return a constructor of ServerSentEvent cheaper than its own ``__init__``.

    A frozen dataclass's ``__init__`` sets every field through
    ``object.__setattr__``, a large part of the decoder's time per event. Writing the
    slots through their descriptors builds an equal, just as frozen object for less
    (docs/PERFORMANCE.md, "Why the code is as it is").
    """
    new = object.__new__
    set_event, set_data, set_id, set_retry = (
        getattr(ServerSentEvent, field.name).__set__ for field in fields(ServerSentEvent)
    )

    def new_event(event: str, data: str, id: str, retry: int | None) -> ServerSentEvent:
        obj = new(ServerSentEvent)
        set_event(obj, event)
        set_data(obj, data)
        set_id(obj, id)
        set_retry(obj, retry)
        return obj

    return new_event


new_event = _event_maker()


def retry_value(digits: str) -> int | None:
    """The base-ten value of a ``retry`` field made of ASCII digits only."""
    try:
        return int(digits.lstrip("0") or "0")
    except ValueError:
        # Past CPython's int() digit limit (4300 by default), ignored: no real delay is
        # that long, and the conversion is the quadratic work that limit exists to refuse.
        return None
