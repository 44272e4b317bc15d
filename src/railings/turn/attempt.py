"""One attempt at a turn, sans-IO: the one place a streamed body is judged.

Every shell drives the same object and does only what its I/O requires: the
client (:mod:`railings.transport.body`), the guard (:mod:`railings.transport.watch`),
the gateway (:mod:`railings.gateway.judge`) and ``replay``::

    attempt = Attempt(provider, now=clock(), clocks=Clocks(...), max_tokens=limit)
    while attempt.reads_on:
        chunk = read(timeout=attempt.read_timeout(clock()))   # the shell's I/O
        if silence:  attempt.timed_out(clock()); break
        if broke:    attempt.broke(cut); break
        step = attempt.feed(chunk, clock())
        show(step.events); pass_on(body[: step.release])
    result = attempt.close()            # Complete, Partial or Empty

Like h11, it never reads a clock, a socket or the environment: the shell passes the
time in (any monotonic clock, in seconds) and carries the result out. It owns:

* **the reader** (:class:`~railings.turn.reader.StreamReader`): the termination
  proof, the Empty table, the output-limit rules;
* **the bounds** (:class:`~railings.limits.TurnMeter`, from the request's
  ``max_tokens``): past one the turn ends abruptly with
  :class:`~railings.errors.TurnTooLarge`; a frame past ``max_event_size`` ends it with
  :class:`~railings.errors.EventTooLarge`;
* **hold until content**: until the turn carries something billable its events are
  held (an Empty attempt may yet be resent, and a caller must never have to take back
  what it showed). They are released with the first content or with the proof;
  ``max_preamble`` bounds what is held (past it the events are released, and the
  attempt can no longer be resent transparently: :attr:`released`);
* **the clocks, as deadlines** (:class:`Clocks`): a gap of silence (``first_byte``
  before content, ``idle`` after), the content clock (``first_content`` before
  content, ``content_idle`` after: only a billable event of a known kind moves it, so
  keep-alives, ``Unknown`` frames and usage reports of nothing billed do not) and
  the total deadline. :meth:`read_timeout` says how long the next read may wait;
  when it ran out, :meth:`timed_out` records which clock did;
* **the ending** (:func:`railings.turn.ending.outcome`): Complete, Partial or Empty,
  each error built once;
* **resuming** a response the provider keeps (``keeps``; :mod:`railings.turn.resume`):
  a Partial or Empty ending carries the point to read it again from, and an attempt
  given that point (``resuming``) reads the transcript, then the new body's new events.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import NamedTuple

from railings.errors import EventTooLarge, RailingsError, TotalTimeout, TurnTooLarge
from railings.events import StreamEvent, TextDelta, Unknown
from railings.limits import TurnLimits, TurnMeter
from railings.turn.billable import billable
from railings.turn.ending import AttemptOutcome, Complete, Cut, Failure, idle_cut, outcome
from railings.turn.model import Turn
from railings.turn.profile import WIRE, Profile
from railings.turn.reader import StreamReader
from railings.turn.resume import ResumePoint, Splice, plain_id, resume_point
from railings.turn.termination import State
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE

__all__ = ["Attempt", "Clocks", "Step"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Clocks:
    """The clocks of one attempt, in seconds (None: that clock is off).

    ``first_byte`` and ``idle`` bound a silence (no byte at all) before and after the
    first content; ``first_content`` and ``content_idle`` bound the time without an
    event that is not a keep-alive, before and after it; ``deadline`` is the instant,
    on the shell's clock, the attempt may not pass, and ``total`` the allowance it came
    from (for the error's words).
    """

    first_byte: float | None = None
    idle: float | None = None
    first_content: float | None = None
    content_idle: float | None = None
    deadline: float | None = None
    total: float | None = None


class Step(NamedTuple):
    """What one chunk changed: the ``events`` the caller may see now, how many bytes of
    the body, counted from its first, may be passed on (``release``), and whether the
    reading is over (``done``)."""

    events: list[StreamEvent]
    release: int
    done: bool


class _Clock(enum.Enum):
    GAP = "gap"
    CONTENT = "content"
    DEADLINE = "deadline"


class Attempt:
    """One attempt's body, judged. ``now`` is when the body started (the shell's clock);
    ``max_tokens``: the output limit the request carries (the verdict's truncation rule
    and the bounds read it); ``keep``: how many of the body's first bytes an error's
    ``received`` holds; ``hold``: False for a shell that passes every byte on as it
    comes (the guard, ``replay``); ``choice``: the Chat Completions choice read;
    ``keeps``: the request asked the provider to keep the response (every byte read is
    kept for the resume point); ``resuming``: the point this attempt resumes from;
    ``request_chars``: the size of the request's text, for an estimated input count
    (:mod:`railings.turn.usage`)."""

    __slots__ = (
        "_clocks",
        "_fed",
        "_held",
        "_hold",
        "_keep",
        "_keeps",
        "_last_content",
        "_max_preamble",
        "_meter",
        "_read_at",
        "_received",
        "_resumed",
        "_room",
        "_splice",
        "failure",
        "reader",
        "released",
    )

    def __init__(
        self,
        provider: str = "auto",
        *,
        now: float = 0.0,
        clocks: Clocks | None = None,
        max_tokens: int | None = None,
        limits: TurnLimits | None = None,
        keep: int = 0,
        hold: bool = True,
        max_preamble: int | None = None,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        choice: int = 0,
        profile: Profile = WIRE,
        keeps: bool = False,
        resuming: ResumePoint | None = None,
        request_chars: int | None = None,
    ) -> None:
        self.reader = StreamReader(
            provider,
            max_tokens=max_tokens,
            max_event_size=max_event_size,
            choice=choice,
            profile=profile,
            request_chars=request_chars,
        )
        self._meter = TurnMeter(limits, max_tokens)
        self._clocks = clocks or Clocks()
        if profile.first_content is not None:  # the endpoint's own wait before content
            self._clocks = replace(self._clocks, first_content=profile.first_content)
        self._hold = hold
        self._max_preamble = max_preamble
        self._held: list[StreamEvent] = []
        self._fed = 0  # body bytes fed
        self._received: list[bytes] = []
        self._room = keep  # the bytes of the body an error may still carry
        self._keep = keep
        self._last_content = now  # the content clock
        self._read_at: float | None = None  # when the last bounded read started
        self.failure: Failure = None
        self.released = False  # something reached the caller: no transparent resend
        self._keeps = keeps or resuming is not None
        self._splice: Splice | None = None
        self._resumed: tuple[int, ...] = ()
        if resuming is not None:
            self._resume(resuming, now, max_event_size)

    def _resume(self, point: ResumePoint, now: float, max_event_size: int) -> None:
        """Read the transcript first: what the caller was shown is not shown again, and
        what was held stays held until content."""
        step = self.feed(point.transcript, now)
        if point.shown:
            self.released = True
        elif step.events:
            self._held[:0] = step.events
        self._splice = Splice(self.reader.provider, point.after, max_event_size=max_event_size)
        self._resumed = (*point.resumed, point.after)

    # -- state -----------------------------------------------------------------------------

    @property
    def content(self) -> bool:
        """True once something billable arrived (the Empty / Partial divide)."""
        return self.reader.content

    @property
    def reads_on(self) -> bool:
        """True while bytes may still change the turn: until it ended (or a failure
        stopped it), and after a clean end on a wire whose usage follows its proof."""
        return self.failure is None and self.reader.reads_on

    @property
    def holding(self) -> bool:
        """True while events are held back from the caller (before content)."""
        if self._hold:
            self._hold = (
                not self.reader.content
                and self.reader.assembler.machine.state is not State.TERMINATED_CLEANLY
                and (self._max_preamble is None or self._fed <= self._max_preamble)
            )
        return self._hold

    @property
    def kept(self) -> str | None:
        """The id of the response this attempt asked the provider to keep: None when it
        asked nothing, before the id came, or when the id is not a plain token that may
        go into a URL (:func:`plain_id`)."""
        if not self._keeps:
            return None
        response_id = self.reader.assembler.message_id
        return response_id if plain_id(response_id) else None

    @property
    def limits(self) -> TurnLimits:
        """The bounds this turn is counted against, every field filled."""
        return self._meter.limits

    # -- feeding ---------------------------------------------------------------------------

    def feed(self, chunk: bytes, now: float) -> Step:
        """``chunk`` of the body arrived at ``now``: count it, read it, and say what the
        caller may have. Past a bound the turn ends here (``done``)."""
        if self._splice is not None and chunk and self.failure is None:
            chunk = self._spliced(self._splice, chunk)
        if self.failure is not None or not chunk:
            return Step([], self._fed if self.released else 0, self.failure is not None)
        size = len(chunk)
        if self._keeps:
            self._received.append(chunk)  # every byte: the transcript of a resume point
        elif self._room > 0:
            self._received.append(chunk if size <= self._room else chunk[: self._room])
            self._room -= size
        self._fed += size
        reader = self.reader
        try:
            self._meter.received(size)
            events = reader.feed(chunk)
            self._meter.saw(events)
        except (TurnTooLarge, EventTooLarge) as exc:
            self._stop(exc)
            events = []
        if events:
            first = events[0]  # the commonest: one text delta that holds text
            if (type(first) is TextDelta and first.text) or self._progress(events):
                self._last_content = now
        done = self.failure is not None or not reader.reads_on
        if self._hold and self.holding:
            self._held.extend(events)
            return Step([], 0, done)
        if self._held:
            events, self._held = self._held + events, []
        self.released = True
        return Step(events, self._fed, done)

    def _spliced(self, splice: Splice, chunk: bytes) -> bytes:
        """A resumed body's ``chunk``: its new whole events. The events dropped as already
        read count against the bytes bound too: a server that sends old events without end
        is held to it (and the unfinished event to ``max_event_size``, by the splice)."""
        dropped = splice.dropped_bytes
        try:
            new = splice.feed(chunk)
            self._meter.received(splice.dropped_bytes - dropped)
        except (TurnTooLarge, EventTooLarge) as exc:
            self._stop(exc)
            return b""
        return new

    def _stop(self, exc: TurnTooLarge | EventTooLarge) -> None:
        """Past a bound: the turn ends abruptly here (the reader ended it already for an
        event too large to read; the provider ignored its output limit for the others)."""
        if not self.reader.terminated:
            self.reader.assembler.fault(exc.message)
        self.failure = exc

    def _progress(self, events: list[StreamEvent]) -> bool:
        """Do ``events`` move the content clock? Only an event the Empty table counts as
        billable, and of a kind railings knows: a keep-alive, an ``Unknown`` frame or a
        usage report of nothing billed is no progress, however often it comes."""
        for event in events:
            if isinstance(event, TextDelta):  # the commonest: billable when it holds text
                if event.text:
                    return True
            elif type(event) is not Unknown and billable(event, self.reader.assembler.baseline):
                return True
        return False

    # -- clocks ----------------------------------------------------------------------------

    def read_timeout(self, now: float) -> float | None:
        """How long a read starting at ``now`` may wait for a byte (0: a clock already ran
        out), None: no limit. The earliest of the gap, the content clock and the deadline;
        :meth:`timed_out` names the one that ran out."""
        self._read_at = now
        due = self._due(now)[0]
        if due is None:
            return None
        return due - now if due > now else 0.0

    def _due(self, now: float) -> tuple[float | None, _Clock | None]:
        """When the first clock runs out for a read that started at ``now``, and which one.
        Ties go to the deadline, then to the content clock: the one that says most."""
        clocks = self._clocks
        if self.reader.content:
            gap, wait = clocks.idle, clocks.content_idle
        else:
            gap, wait = clocks.first_byte, clocks.first_content
        due, clock = clocks.deadline, _Clock.DEADLINE
        if wait is not None:
            at = self._last_content + wait
            if due is None or at < due:
                due, clock = at, _Clock.CONTENT
        if gap is not None:
            at = now + gap
            if due is None or at < due:
                due, clock = at, _Clock.GAP
        return due, (None if due is None else clock)

    def overdue(self, now: float) -> bool:
        """For a shell that sees the time only when bytes arrive (the guard): True when a
        clock other than the gap ran out by ``now`` (then call :meth:`timed_out`)."""
        due, clock = self._due(now)
        return due is not None and due <= now and clock is not _Clock.GAP

    def timed_out(self, now: float) -> None:
        """The read that :meth:`read_timeout` bounded found no byte: the clock that ran out
        ends the attempt (an :class:`~railings.errors.IdleTimeout` or a total timeout)."""
        if self.failure is not None:
            return
        # The clock that bounded the read (a shell that never bounded one asks at ``now``).
        clock = self._due(now if self._read_at is None else self._read_at)[1]
        clocks = self._clocks
        content = self.reader.content
        if clock is _Clock.DEADLINE:
            self.failure = TotalTimeout(f"total timeout of {clocks.total or 0:g} s passed")
        elif clock is _Clock.CONTENT:
            wait = clocks.content_idle if content else clocks.first_content
            self.failure = idle_cut(wait or 0.0, content=True)
        else:
            gap = clocks.idle if content else clocks.first_byte
            self.failure = idle_cut(gap or 0.0)

    def broke(self, failure: Cut | RailingsError) -> None:
        """The body broke off (the shell mapped how: a :class:`~railings.turn.ending.Cut`
        or a railings error); the first failure stands."""
        if self.failure is None:
            self.failure = failure

    # -- the end ---------------------------------------------------------------------------

    def close(self, *, over_http2: bool = False) -> AttemptOutcome:
        """The attempt's ending, once the reading stopped (the reader is closed here):
        Complete, Partial or Empty. The events EOF completed are :meth:`held` for the
        caller of a Complete turn."""
        splice, self._splice = self._splice, None
        if splice is not None and self.failure is None:
            self._held.extend(self.feed(splice.close(), self._last_content).events)
        try:
            events = self.reader.close(clean=self.failure is None)
        except EventTooLarge as exc:
            self.broke(exc)
            events = []
        self._held.extend(events)
        body = b"".join(self._received)
        turn = self.turn()
        received = body[: self._keep] if self._keeps else body
        result = outcome(turn, self.failure, received, over_http2=over_http2)
        if not self._keeps or isinstance(result, Complete):
            return result
        point = resume_point(
            turn,
            self.failure,
            body,
            sequence=self.reader.sequence,
            shown=self.released,
            resumed=self._resumed,
        )
        return result if point is None else replace(result, resume=point)

    def turn(self) -> Turn:
        """The turn as assembled so far (final after :meth:`close`)."""
        turn = self.reader.turn()
        return replace(turn, resumed=self._resumed) if self._resumed else turn

    def held(self) -> list[StreamEvent]:
        """The events not yet given to the caller (after :meth:`close`: with those EOF
        completed); taking them empties the list."""
        held, self._held = self._held, []
        return held
