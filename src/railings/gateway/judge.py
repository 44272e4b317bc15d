"""The per-stream judge: upstream bytes in, the bytes to send the client out. Sans-IO.

Theory of operation. Every chunk the upstream sends is cut into whole SSE events
(:class:`~railings.sse_blocks.EventSplitter`, byte-exact) and each event is fed to
one :class:`~railings.turn.attempt.Attempt` per upstream attempt, which alone decides
how the stream ended (and holds its events until content, times it, bounds it). A
chunk that is one whole event, from an event boundary (what a streaming provider
sends nearly every time), is that event: it skips the splitter and goes to the
attempt as it is, through the reader's own fast path. The bytes sent on are the
upstream's, unchanged and in order; what the judge decides is only *which* leave
and whether the stream may end:

* **Before content** (OpenAI's role chunk, ``message_start``, ``response.created``,
  pings) the attempt holds the events, and the judge their bytes, until the attempt
  releases them (``Step.release``: the first content, the proof, or past
  ``max_preamble``). An attempt that ends before then is **Empty** and sent the
  client nothing: whether it is resent is the attempt machine's to say, from
  :attr:`StreamJudge.outcome`. From then on each event leaves as soon as its blank
  line arrived. (An SSE client dispatches nothing before that blank line, so waiting
  for it costs the client nothing, and lets an error event follow a whole event
  instead of half of one.)
* **A tool call**, with ``refuse_cut_calls``: its events, and everything after
  them, are held until the call is proven complete (its block closed and its
  arguments parse strictly), or the turn's proof says no call was cut
  (:mod:`railings.gateway.held_calls`); text before it streams live. A cut call's
  events never leave: the refusal's error event takes their place.
* **The proof** leaves unchanged, and so does everything after it, as it comes: a
  connection that breaks after the proof ends the response cleanly. With
  ``refuse_cut_calls``, a proof that closes a turn stopped by the output limit with
  a call whose arguments do not parse is replaced by a provider-shaped error event.
* **No proof after content** (**Partial**): a provider-shaped error event, then the
  end. The provider's own error event is passed on as it came (before anything
  left, it is held, and :meth:`StreamJudge.give_up` passes it on if no attempt
  follows); an event that is not the protocol (bad JSON, bad UTF-8, too large) is
  replaced by the error event. Held call events are dropped.

The judge reads the stream's decoded bytes (:mod:`railings.gateway.decoding` undoes
a content coding first); a body that stops decoding is :meth:`StreamJudge.unreadable`.

**A kept response** (``keeps``: OpenAI Responses with ``background: true``) may be
resumed (:mod:`railings.turn.resume`): its outcome carries the point, and the error
event a break would end with is held back to :meth:`StreamJudge.close`'s tail, so that
a resume can drop it. The next judge reads the point's transcript first
(:meth:`StreamJudge.resume`): being the same judge of the same whole events, it
releases the same bytes, and those the client already has are swallowed; what it
holds (a preamble, a call not yet proven) it holds again. The resumed body then
passes through a :class:`~railings.turn.resume.Splice`, which drops the events the
transcript holds, so the client's stream reads as the uncut one, byte for byte.

Memory per stream: the unfinished event (bounded by ``max_event_size``), the held
preamble (bounded by ``max_preamble``: past it, the preamble is released and the
stream can no longer be retried transparently) and the events held behind an
unproven call (bounded by ``max_held``: past it, the answer is refused).
"""

from __future__ import annotations

import enum
from dataclasses import replace

from railings.classify import INTERRUPTED_MESSAGE, interrupted_message
from railings.errors import EventTooLarge
from railings.events import StreamEvent
from railings.gateway.decoding import UNREADABLE_CODE
from railings.gateway.held_calls import DEFAULT_MAX_HELD, UNPROVEN_CODE, HeldCalls, touches_calls
from railings.gateway.shapes import CUT_CODE, INTERRUPTED_CODE, error_event
from railings.providers import spec
from railings.sse_blocks import EventSplitter
from railings.turn.attempt import Attempt, Clocks
from railings.turn.ending import AttemptOutcome, Complete
from railings.turn.model import ErrorKind, Outcome, Turn
from railings.turn.profile import WIRE, Profile
from railings.turn.resume import ResumePoint, Splice
from railings.turn.verdict import CallVerdict, RejectReason, cut_at_limit, judge
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE

__all__ = ["DEFAULT_MAX_PREAMBLE", "Ending", "StreamJudge", "cut_calls", "cut_message"]

DEFAULT_MAX_PREAMBLE = 64 * 1024


class Ending(enum.Enum):
    """How the client's response ends (the metric's ``outcome`` label)."""

    COMPLETE = "complete"  # the proof was passed on
    PARTIAL = "partial"  # content, then no proof: an error event was passed on
    EMPTY = "empty"  # no content and no proof: resend (or, when out of attempts, an error)
    REFUSED = "refused"  # a cut tool call (or one too long to hold): an error event instead
    ERROR = "error"  # the provider's own error event before content, passed on: not resent
    UNREADABLE = "unreadable"  # a body the gateway cannot decode, before content: not resent


# Endings that are the gateway's or the provider's last word: never resumed.
_FINAL = frozenset({Ending.REFUSED, Ending.ERROR, Ending.UNREADABLE})


def cut_calls(turn: Turn) -> list[CallVerdict]:
    """The calls of ``turn`` the verdict rejects as cut by the output limit."""
    return [v for v in judge(turn) if v.reason is RejectReason.TRUNCATED]


def cut_message(verdicts: list[CallVerdict], turn: Turn) -> str:
    """The refusal's text: names each cut call and says the output limit cut it (and,
    when the stop reason said otherwise, that billed output reached the limit)."""
    names = ", ".join(f"{v.call.name!r} (id {v.call.id or '-'})" for v in verdicts)
    why = f"stop_reason: {turn.stop_reason_wire or 'max_tokens'}"
    limit = cut_at_limit(turn)
    if limit is not None:
        why += f", but billed output reached the limit of {limit} tokens"
    return (
        f"railings gateway: tool call {names} was cut by the output limit "
        f"({why}): its arguments are incomplete, so the answer is refused instead of "
        "passed on"
    )


class StreamJudge:
    """Judges one upstream attempt. ``feed`` returns the bytes to send now; once
    ``ending`` is set, stop reading the upstream (except after COMPLETE, where
    ``feed`` keeps passing the trailing bytes on unchanged); then :meth:`close`.
    ``clocks`` and ``now`` start the attempt's clocks (any monotonic clock, seconds);
    ``over_http2``: the answer came over HTTP/2; ``keeps``: the provider keeps the
    response, so a break may be resumed (the module docstring)."""

    def __init__(
        self,
        provider: str,
        *,
        refuse_cut_calls: bool = True,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        max_preamble: int = DEFAULT_MAX_PREAMBLE,
        max_held: int = DEFAULT_MAX_HELD,
        max_tokens: int | None = None,
        clocks: Clocks | None = None,
        now: float = 0.0,
        over_http2: bool = False,
        profile: Profile = WIRE,
        request_chars: int | None = None,
        keeps: bool = False,
    ) -> None:
        self.provider = provider
        # The request's output limit: billed output that reaches it is truncation,
        # whatever stop reason the wire claims (the verdict's usage-at-the-cap rule).
        self.attempt = Attempt(
            provider,
            now=now,
            clocks=clocks,
            max_tokens=max_tokens,
            max_preamble=max_preamble,
            max_event_size=max_event_size,
            profile=profile,
            request_chars=request_chars,  # an input count never reported is estimated
            keeps=keeps,
        )
        self.ending: Ending | None = None
        self.outcome: AttemptOutcome | None = None  # set by close(): for the attempt machine
        self.provider_error = b""  # the provider's error event before anything left
        self._refuse = refuse_cut_calls
        # Under refuse, the calls not yet proven and the events held behind them.
        reader = self.attempt.reader
        self._calls = HeldCalls(reader.assembler, limit=max_held) if refuse_cut_calls else None
        self._splitter = EventSplitter()
        self._held: list[bytes] = []  # the bytes of the events the attempt holds
        self._max_event = max_event_size
        self._over_http2 = over_http2
        self._last = b""  # the last event passed on (the Responses sequence number)
        self._keeps = keeps
        self._splice: Splice | None = None  # a resumed body: the events not yet read
        self._deferred = b""  # a kept response's error event, for close()'s tail

    @property
    def committed(self) -> bool:
        """True once the attempt released events to the client: no transparent resend."""
        return self.attempt.released

    @property
    def kept(self) -> str | None:
        """The id of the kept response this judge reads, while it may still run upstream
        (its proof not read)."""
        reader = self.attempt.reader
        if reader.terminated and reader.turn().complete:
            return None
        return self.attempt.kept

    def resume(self, point: ResumePoint, shown: int, now: float = 0.0) -> bytes:
        """Go on from ``point`` (a judge with ``keeps``, before its first byte): read the
        transcript, and return what it releases past the ``shown`` bytes the client
        already has. Every later chunk is the resumed body, whose events up to
        ``point.after`` are dropped."""
        out = self.feed(point.transcript, now)
        self._splice = Splice(self.provider, point.after)
        return out[shown:]

    @property
    def done(self) -> bool:
        """True once nothing more is read from the upstream."""
        return self.ending is not None and self.ending is not Ending.COMPLETE

    def feed(self, chunk: bytes, now: float = 0.0) -> bytes:
        """The bytes of ``chunk`` (arrived at ``now``) the client may have now: whole
        events, once the attempt released them, the proof or what replaces it."""
        if self._splice is not None:
            chunk = self._splice.feed(chunk)  # whole events, those not yet read
        if self.ending is Ending.COMPLETE:
            return chunk  # after the proof: unchanged, as it comes
        if self.ending is not None:
            return b""
        out: list[bytes] = []
        if (
            not self._splitter.pending
            and len(chunk) > 2
            and chunk.find(b"\n\n") == len(chunk) - 2
            and chunk[:1] != b"\n"
            and 13 not in chunk  # CR, by memchr
        ):
            # One whole block from a block boundary: what the splitter would return for
            # it is the chunk itself (its one blank line is its end, no blank line leads
            # it, no CR can end a line), and the splitter stays empty either way.
            self._event(chunk, now, out)
            return out[0] if len(out) == 1 else b"".join(out)
        blocks = self._splitter.feed(chunk)
        for i, block in enumerate(blocks):
            self._event(block, now, out)
            if self.ending is not None:
                if self.ending is Ending.COMPLETE:  # the rest of the chunk, as it came
                    out.extend(blocks[i + 1 :])
                    out.append(self._splitter.close())
                break
        pending = self._splitter.pending + (self._splice.pending if self._splice else 0)
        if self.ending is None and pending > self._max_event:
            message = f"an event grew past {self._max_event} bytes"
            self.attempt.broke(EventTooLarge(message, limit=self._max_event))
            self._fault(out, message)
        return b"".join(out)

    def _event(self, block: bytes, now: float, out: list[bytes]) -> None:
        step = self.attempt.feed(block, now)
        if step.release:
            self._release(out)  # what the attempt held before this block
        if step.done:
            self._ended(block, out)
        elif not step.release:
            self._held.append(block)  # before content: held with its events
        elif (calls := self._calls) is not None and (calls.open or touches_calls(step.events)):
            self._hold(calls, block, step.events, out)
        else:
            self._last = block
            out.append(block)

    def _ended(self, block: bytes, out: list[bytes]) -> None:
        """The turn ended with ``block`` (its proof, an error event, a fault, a bound)."""
        turn = self.attempt.reader.turn()
        if turn.outcome is Outcome.COMPLETE:
            cut = cut_calls(turn) if self._refuse else []
            if cut:
                self._drop()
                out.append(self.error_event(CUT_CODE, cut_message(cut, turn)))
                self.ending = Ending.REFUSED
                return
            if self._calls is not None and self._calls.blocks:
                self._calls.release(out)
                self._last = out[-1]
            out.append(block)
            self.ending = Ending.COMPLETE
            return
        error = turn.error
        if error is not None and error.kind is ErrorKind.PROVIDER_ERROR:
            if not self.committed:
                # Nothing left yet: the attempt machine says whether to resend, and this
                # event is what the client gets when no attempt follows (give_up).
                self.provider_error = block
                self.ending = Ending.EMPTY
                return
            self._drop()
            out.append(block)  # the provider's own error event, as it came
            # Passed on, so it is the answer: resending now would append a second stream
            # to the bytes the client already has.
            self.ending = Ending.PARTIAL if self.attempt.content else Ending.ERROR
            return
        self._fault(out, error.message if error is not None else "the stream broke")

    def _hold(
        self, calls: HeldCalls, block: bytes, events: list[StreamEvent], out: list[bytes]
    ) -> None:
        """A block of a call not yet proven, or after one: held (or released with the
        blocks before it, once their calls proved themselves)."""
        before = len(out)
        within = calls.take(block, events, out)
        if len(out) > before:
            self._last = out[-1]
        if not within:
            names = ", ".join(repr(name) for name in calls.names())
            calls.drop()
            message = (
                f"railings gateway: tool call {names} held more than {calls.limit} bytes of "
                "events before its arguments were complete, so the answer is refused "
                "instead of passed on unproven (--cut-calls pass streams them as they come)"
            )
            self.attempt.reader.assembler.fault(message)  # the turn ends here, and says why
            out.append(self.error_event(UNPROVEN_CODE, message))
            self.ending = Ending.REFUSED

    def _drop(self) -> None:
        if self._calls is not None:
            self._calls.drop()

    def _release(self, out: list[bytes]) -> None:
        if self._held:
            self._last = self._held[-1]
            out.extend(self._held)
            self._held.clear()

    def _fault(self, out: list[bytes], message: str) -> None:
        """Bytes that are not the protocol: never passed on."""
        if not self.committed:
            self.ending = Ending.EMPTY
            return
        self._drop()
        event = self.error_event(
            INTERRUPTED_CODE, f"railings gateway: {interrupted_message(message)}"
        )
        self.ending = Ending.PARTIAL
        if self._keeps:
            self._deferred = event  # close()'s tail: a resume drops it
        else:
            out.append(event)

    def error_event(self, code: str, message: str) -> bytes:
        """The provider-shaped error event that follows what was passed on."""
        sequence = None
        wire = spec(self.provider)
        if wire.numbered:
            numbers = wire.sequence_numbers(self._last)
            sequence = numbers[-1] + 1 if numbers else 0
        return error_event(self.provider, code, message, sequence_number=sequence)

    def close(self, reason: str | None = None) -> bytes:
        """The reading stopped: EOF, or a break or a clock the attempt was told of
        (``reason`` says why, else the attempt's failure). Sets :attr:`outcome` and
        returns the last bytes to send: nothing after the proof; an error event once
        something left (Partial); nothing when nothing left (Empty: the attempt
        machine decides, and :meth:`give_up` ends the stream when no attempt follows)."""
        failure = self.attempt.failure
        if self.outcome is None:
            outcome = self.attempt.close(over_http2=self._over_http2)
            if self.ending in _FINAL and not isinstance(outcome, Complete) and outcome.resume:
                outcome = replace(outcome, resume=None)
            self.outcome = outcome
        if self.ending is not None:
            return self._deferred
        if not self.committed:
            self.ending = Ending.EMPTY
            return b""
        self._drop()
        self.ending = Ending.PARTIAL
        if reason is None and failure is not None:
            reason = failure.message
        detail = interrupted_message(reason) if reason else INTERRUPTED_MESSAGE
        return self.error_event(INTERRUPTED_CODE, f"railings gateway: {detail}")

    def unreadable(self, message: str) -> bytes:
        """The body stopped decoding (or its coding cannot be read): ``message`` says why.
        Returns the last bytes to send. After content, the error event (Partial); before
        it, the whole events held, then the error event, and no resend: whatever could
        not be read may hold an answer the upstream already generated."""
        if self.ending is not None:
            return b""
        self.attempt.reader.assembler.fault(message)
        detail = f"railings gateway: {message}"
        if self.committed:
            self._drop()
            self.ending = Ending.PARTIAL
            return self.error_event(INTERRUPTED_CODE, detail)
        out: list[bytes] = []
        self._release(out)
        out.append(self.error_event(UNREADABLE_CODE, detail))
        self.ending = Ending.UNREADABLE
        return b"".join(out)

    def give_up(self, message: str) -> bytes:
        """No attempt follows an Empty one: the held preamble, then the provider's own
        error event when it sent one, else the gateway's."""
        out: list[bytes] = []
        self._release(out)
        if self.provider_error:
            out.append(self.provider_error)
        else:
            out.append(self.error_event(INTERRUPTED_CODE, f"railings gateway: {message}"))
        return b"".join(out)

    def turn(self) -> Turn | None:
        """The judged turn, once the stream terminated."""
        reader = self.attempt.reader
        return reader.turn() if reader.terminated else None
