"""One attempt's event stream, read chunk by chunk: the clocks, the bounds, the held events.

The client's loop awaits each chunk itself (one generator layer between the
socket and the caller); everything it does per chunk and per wait is here:

* **The clocks.** Before the first content a model may think in silence: the
  generous ``first_byte`` limit applies to any byte and to the first event.
  Once content flows, the ``idle`` gap applies to any byte and ``content_idle``
  to the content clock, which only stream events reset, never keep-alives. The
  optional total deadline bounds both.
* **The bounds.** Every chunk is counted by the :class:`~railings.limits.TurnMeter`;
  an error keeps at most the first ``keep`` bytes of the body.
* **Held events.** Until the attempt delivers content, its events are held
  back: an Empty attempt may yet be resent, and a caller must never have to
  take back what it showed. They are released with the first content, or with
  the proof.
* **What stopped it**, kept as a :data:`~.attempt.Failure` until the turn is
  known and :meth:`Body.outcome` builds the outcome, each error once.
"""

from __future__ import annotations

import asyncio

from railings.errors import EventTooLarge, TotalTimeout, TurnTooLarge
from railings.events import StreamEvent, Unknown
from railings.limits import TurnMeter
from railings.transport.attempt import Failure, outcome
from railings.transport.config import ClientConfig, Timeouts
from railings.transport.errors_map import BOUNDARY, idle_cut, stream_cut
from railings.transport.gaps import Silence
from railings.transport.machine import AttemptOutcome
from railings.turn.reader import StreamReader

__all__ = ["STOPS", "Body", "backstop"]

# What may stop the reading of a body (each becomes the attempt's Failure).
STOPS: tuple[type[BaseException], ...] = (Silence, TurnTooLarge, EventTooLarge, *BOUNDARY)


def backstop(timeouts: Timeouts) -> float | None:
    """The socket read timeout while the body streams: the longer of the two gaps."""
    if timeouts.first_byte is None or timeouts.idle is None:
        return None
    return max(timeouts.first_byte, timeouts.idle)


class Body:
    """The state of one attempt's body: feed it chunks, then ask for the outcome.
    ``keep``: how many of the body's first bytes an error's ``received`` holds."""

    __slots__ = (
        "_clock",
        "_config",
        "_deadline",
        "_meter",
        "_progress",
        "_received",
        "_room",
        "_until_is_deadline",
        "failure",
        "held",
        "reader",
    )

    def __init__(
        self,
        config: ClientConfig,
        deadline: float | None,
        *,
        keep: int,
        max_tokens: int | None = None,
    ) -> None:
        self._config = config
        self._deadline = deadline
        # ``max_tokens``: the limit of the request as sent, which the verdict reads.
        self.reader = StreamReader(config.provider, max_tokens=max_tokens, service=config.service)
        self._meter = TurnMeter(config.limits, config.max_tokens)
        self._received: list[bytes] = []
        self._room = keep  # the bytes of the body an error may carry
        self.held: list[StreamEvent] = []
        self.failure: Failure = None
        self._clock = asyncio.get_running_loop().time
        self._progress = self._clock()  # the content clock
        self._until_is_deadline = False

    def wait(self) -> tuple[float | None, float | None]:
        """How long the next read may wait for a byte (the gap, in seconds) and the loop
        time it may not wait past (the content clock or the deadline), None: no limit."""
        t = self._config.timeouts
        content = self.reader.content
        gap = t.idle if content else t.first_byte
        wait = t.content_idle if content else t.first_byte
        until = self._deadline
        due = None if wait is None else self._progress + wait
        if due is not None and (until is None or due < until):
            until = due
        self._until_is_deadline = until is not None and until == self._deadline
        return gap, until

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """Count and decode ``chunk``; return the events the caller may see now."""
        if self._room > 0:
            self._received.append(chunk if len(chunk) <= self._room else chunk[: self._room])
            self._room -= len(chunk)
        self._meter.received(len(chunk))
        events = self.reader.feed(chunk)
        if any(type(event) is not Unknown for event in events):
            self._progress = self._clock()
        self._meter.saw(events)
        if not self.reader.content:
            self.held.extend(events)  # an Empty attempt may yet be resent
            return []
        if self.held:
            events, self.held = self.held + events, []
        return events

    def stopped(self, exc: BaseException) -> None:
        """The reading stopped on ``exc`` (one of :data:`STOPS`): keep what it means."""
        t = self._config.timeouts
        if isinstance(exc, Silence):
            if exc.deadline_passed and self._until_is_deadline:
                self.failure = TotalTimeout(f"total timeout of {t.total:g} s passed")
            elif exc.deadline_passed:
                self.failure = idle_cut(self._content_wait(), content=True)
            else:
                gap = t.idle if self.reader.content else t.first_byte
                self.failure = idle_cut(gap or 0.0)
        elif isinstance(exc, TurnTooLarge):
            # The provider ignored max_tokens: end the turn here, abruptly.
            if not self.reader.terminated:
                self.reader.assembler.fault(exc.message)
            self.failure = exc
        elif isinstance(exc, EventTooLarge):
            self.failure = exc  # the reader already ended the turn abruptly
        else:
            # The socket's read timeout is only a backstop behind the GapWatch.
            self.failure = stream_cut(exc, idle_seconds=backstop(t))

    def _content_wait(self) -> float:
        t = self._config.timeouts
        return (t.content_idle if self.reader.content else t.first_byte) or 0.0

    def outcome(self, *, over_http2: bool) -> AttemptOutcome:
        """The attempt's outcome, once the reading ended (the reader is closed here)."""
        self.reader.close()
        received = b"".join(self._received)
        return outcome(self.reader.turn(), self.failure, received, over_http2=over_http2)
