"""The turn assembler (the stream reducer): normalized events in, one :class:`Turn` out.

It drives the termination state machine, keeps usage, the stop reason and the
error, and hands every content event to the parts manager
(:mod:`railings.turn.parts_manager`), which keeps the turn's parts in the order
they began and -- once the stream has ended -- parses every call's arguments
**strictly**, exactly once, never repairing. Each call also keeps where its
arguments came from (``origin``): the model's own text, or an object parsed
upstream (see :mod:`railings.events`).

Truncation is sticky. A turn may carry several stop reasons (a Chat chunk with
``finish_reason: "length"`` and a later one with ``"stop"``); an output-limit stop
seen anywhere wins, whatever follows it: the output was cut, and a later "stop"
cannot make the cut call whole again. Billed output that reached the request's
``max_tokens`` truncates the turn as well, whatever stop reason the wire claims
(:func:`~railings.turn.stop_reason.is_truncated`; the limit is kept in the turn). The
evidence is the largest output count any usage report gave (``peak_output_tokens``):
counts are cumulative, so a later smaller report is a wrong one, and it never erases
a count at the cap; ``usage`` keeps the counts as last reported, each with its source:
a count the stream never reported is estimated or unknown by the one rule of
:mod:`railings.turn.usage` (the shell passes the request's size: ``request_chars``).

Usage may follow the proof (Bedrock's ``metadata`` event comes after ``messageStop``):
a :class:`UsageUpdate` after a clean end is still kept; anything else after the end
is ignored, and usage alone never proves an end.

What counts as content (for Empty / Partial) is the Empty table's to say
(:func:`railings.turn.billable.billable`): every event counts unless it is known to
carry nothing billable. A delta whose text is the empty string -- OpenAI's first
chunk, ``{"role": "assistant", "content": ""}`` -- is *not* content: a stream cut
right after it received nothing billable and is Empty, so it is resent; a cut after
an event railings does not know, or after a stop reason, is Partial. So is a cut after
a usage report whose output count exceeds the stream's opening one (the assembler keeps
that baseline: Anthropic's ``message_start`` counts a few tokens before any output).
"""

from __future__ import annotations

from railings.classify import INTERRUPTED_MESSAGE, class_for_provider_type
from railings.errors import IllegalTransition
from railings.events import (
    MessageStart,
    OutputItems,
    ProviderErrorEvent,
    RefusalDelta,
    ServerToolResult,
    StopReason,
    StreamEvent,
    TerminationProof,
    TextDelta,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unknown,
    UsageUpdate,
)
from railings.providers import spec
from railings.redact import redact
from railings.turn.billable import billable
from railings.turn.limit import reached_limit
from railings.turn.model import (
    ErrorKind,
    Outcome,
    Termination,
    ToolCall,
    Turn,
    TurnError,
)
from railings.turn.parts import Part
from railings.turn.parts_manager import PartsManager
from railings.turn.profile import STOP_THEN_USAGE, WIRE, Profile
from railings.turn.stop_reason import (
    MAX_TOKENS,
    StopSource,
    derive_stop_reason,
    is_truncated,
    normalize_stop_reason,
)
from railings.turn.termination import Signal, State, TerminationMachine
from railings.turn.usage import settle

__all__ = ["TurnAssembler"]

_STREAMING, _CONNECTING = State.STREAMING, State.CONNECTING


class TurnAssembler:
    """Reduces normalized events to a turn. Feed it with :meth:`received`, :meth:`apply`,
    :meth:`fault` and :meth:`eof`; read the result with :meth:`turn` once terminated."""

    def __init__(
        self,
        provider: str,
        *,
        max_tokens: int | None = None,
        profile: Profile = WIRE,
        request_chars: int | None = None,
    ) -> None:
        self.provider = provider
        self.max_tokens = max_tokens
        self.request_chars = request_chars  # the request's text, for an estimated input
        self.profile = profile
        self.machine = TerminationMachine()
        self._parts = PartsManager()
        self._input_tokens: int | None = None
        self._output_tokens: int | None = None
        self._output_opening = False  # the output count is the opening report's
        # The largest output count reported: the evidence at the cap (module docstring).
        self._peak_output: int | None = None
        self._baseline: int | None = None  # the opening usage's output count (billable.py)
        self._stop_wire: str | None = None
        self._usage_after_stop = False  # a usage report came after the last stop reason
        self._named = profile.proof == STOP_THEN_USAGE  # the profile names that ending
        self._written_at_stop = 0  # the content written when the last stop reason came
        self._cut_wire: str | None = None  # the first output-limit stop of the turn
        self._error: TurnError | None = None
        # The id the stream gave its message or response so far ("" before it did): what
        # a shell names a kept response by while the turn is still open.
        self.message_id = ""
        self._model = ""
        self._unknown = 0
        self.content = False  # True once a billable event arrived (see module docstring)

    @property
    def baseline(self) -> int | None:
        """The output count of the stream's opening usage report (:mod:`.billable`)."""
        return self._baseline

    # -- feeding -------------------------------------------------------------------------

    def received(self) -> None:
        """Bytes arrived from the network."""
        # RECEIVED moves CONNECTING only; in every other state it is a loop (TRANSITIONS),
        # so later chunks skip the table lookup (two enum hashes in Python, per chunk).
        if self.machine.state is State.CONNECTING:
            self.machine.signal(Signal.RECEIVED)

    @property
    def open_text(self) -> list[str] | None:
        """The pieces of the text part being written, when applying a non-empty
        :class:`TextDelta` is appending its text to them and nothing else (the turn is
        streaming, content has arrived and the latest part is text), else None. The
        reader's fast path appends to it directly (``turn/fastpath.py``)."""
        if self.content and self.machine.state is _STREAMING:
            return self._parts.open_text
        return None

    def open_fragments(self, index: int) -> list[str] | None:
        """The fragments of call ``index``, when applying a
        :class:`ToolArgumentsDelta` for it that is the model's text (``parsed`` False) is
        appending its fragment to them and nothing else (the turn is streaming, content has
        arrived, the call started), else None. The reader's fast path appends to it."""
        if self.content and self.machine.state is _STREAMING:
            return self._parts.fragments(index)
        return None

    def call(self, index: int) -> Part | None:
        """Call ``index`` (an event's ``index``) as it stands now, its arguments parsed
        strictly, or None when no such call started. For a shell that must decide, before
        the turn ends, whether a call already proved itself whole (the gateway, which holds
        a call's arguments back until it has)."""
        return self._parts.call(index)

    def apply(self, event: StreamEvent) -> None:
        """Apply one event; ignored once the stream has terminated, except usage after a
        clean end (Bedrock reports it in ``metadata``, after its proof ``messageStop``)."""
        state = self.machine.state
        if state is not _STREAMING and state is not _CONNECTING:  # not machine.open
            if isinstance(event, UsageUpdate) and state is State.TERMINATED_CLEANLY:
                self._usage(event)
            return
        if self._named and type(event) is not UsageUpdate:
            self._usage_after_stop = False  # a named ending is only the stream's last word
        if not self.content and billable(event, self._baseline):
            self.content = True  # the Empty table: see the module docstring
        match event:
            case TextDelta(text=text):
                if text:
                    pieces = self._parts.open_text  # the text part being written, if any
                    if pieces is None:
                        self._parts.text(text)
                    else:
                        pieces.append(text)
            case ToolArgumentsDelta(index=index, fragment=fragment, parsed=parsed):
                if not self._parts.call_arguments(index, fragment, parsed):
                    self._unknown += 1
            case ThinkingDelta(text=text, signature=signature, redacted=redacted):
                self._parts.thinking(text, signature, redacted)
            case RefusalDelta(text=text):
                if text:
                    self._parts.text(text, refusal=True)
            case ToolCallStart():
                self._parts.call_start(event)
            case ToolCallEnd(index=index):
                self._parts.call_end(index)
            case ServerToolResult():
                self._parts.server_result(event)
            case OutputItems(items=items):
                self._parts.output_items(items)
            case UsageUpdate():
                self._usage(event)
            case StopReason(wire=wire):
                self._stop_wire = wire
                self._usage_after_stop = False
                if self.profile.structural:
                    self._written_at_stop = self._parts.written()
                if self._cut_wire is None and normalize_stop_reason(wire) == MAX_TOKENS:
                    self._cut_wire = wire  # sticky: see the module docstring
            case MessageStart(id=ident, model=model):
                self.message_id = self.message_id or ident
                self._model = self._model or model
            case TerminationProof(marker=marker):
                if self.profile.structural and not self._structured():
                    structure = spec(self.provider).proof.structure
                    if structure:
                        late = self._stop_wire is not None
                        message = unstructured(marker, structure, self.profile, late=late)
                        self._abrupt(ErrorKind.INTERRUPTED, message)
                        return
                self.machine.signal(Signal.PROOF)
            case ProviderErrorEvent(message=message, provider_type=provider_type, status=status):
                cls = class_for_provider_type(provider_type, status)
                # The provider's words may echo the API key: redacted before they are kept.
                self._abrupt(
                    ErrorKind.PROVIDER_ERROR,
                    redact(message),
                    provider_type=provider_type,
                    retryable=cls.retryable,
                )
            case Unknown():
                self._unknown += 1

    def _structured(self) -> bool:
        """Did a stop reason come after the last content (a strict profile's structure)?
        One followed by more content says nothing of where the stream ended: a layer
        that cut it later and added the terminator would pass with it."""
        return self._stop_wire is not None and self._parts.written() == self._written_at_stop

    def _usage(self, event: UsageUpdate) -> None:
        self._usage_after_stop = self._stop_wire is not None
        if event.input_tokens is not None:
            self._input_tokens = event.input_tokens
        output = event.output_tokens
        if output is not None:
            self._output_tokens = output
            self._output_opening = event.opening
            if self._peak_output is None or output > self._peak_output:
                self._peak_output = output
            if event.opening and self._baseline is None:
                self._baseline = output

    def fault(self, message: str) -> None:
        """The bytes stopped being the protocol (malformed data): an abrupt end."""
        if self.machine.open:
            self._abrupt(ErrorKind.MALFORMED_STREAM, message)

    def eof(self, *, clean: bool = True) -> None:
        """The byte stream ended (``clean``: closed by the server, not broken off). Without
        the proof, that is an interruption, unless the profile names the ending this
        endpoint sends instead and it arrived whole (:data:`~railings.turn.profile.PROOFS`)."""
        if clean and self.machine.open and self._named_proof():
            self.machine.signal(Signal.PROOF)
        if self.machine.open:
            self._abrupt(ErrorKind.INTERRUPTED, INTERRUPTED_MESSAGE)

    def _named_proof(self) -> bool:
        # STOP_THEN_USAGE: a stop reason, then a usage report, and nothing after them.
        return self._named and self._usage_after_stop

    def _abrupt(
        self,
        kind: ErrorKind,
        message: str,
        *,
        provider_type: str | None = None,
        retryable: bool | None = None,
    ) -> None:
        """The turn ends here, without its proof. Unless ``retryable`` says otherwise, the
        error is retryable only while nothing billable arrived (Empty)."""
        self._error = TurnError(
            kind=kind,
            message=message,
            provider_type=provider_type,
            retryable=not self.content if retryable is None else retryable,
        )
        self.machine.signal(Signal.FAULT)

    # -- reading -------------------------------------------------------------------------

    def _truncated(self, stop_reason: str | None, parts: tuple[Part, ...]) -> bool:
        """Did the output limit cut the turn (:func:`is_truncated`)? Under a profile whose
        endpoint misreports ``length``, an output-limit stop alone truncates only a turn
        where a call's completeness is in question: a cut call never runs either way."""
        truncated = is_truncated(
            stop_reason, output_tokens=self._peak_output, max_tokens=self.max_tokens
        )
        if not truncated or not self.profile.misreports_length:
            return truncated
        return reached_limit(self._peak_output, self.max_tokens) or _in_question(parts)

    def turn(self) -> Turn:
        """The assembled turn. Only once terminated: an open stream has no verdict yet."""
        state = self.machine.state
        if not self.machine.terminated:
            raise IllegalTransition(state.value, "turn")
        clean = state is State.TERMINATED_CLEANLY
        outcome = (
            Outcome.COMPLETE if clean else (Outcome.PARTIAL if self.content else Outcome.EMPTY)
        )
        saw_tool_use = self._parts.local_calls > 0
        parts = self._parts.parts()
        stop_reason: str | None
        source: StopSource | None
        stop_wire = self._cut_wire or self._stop_wire
        if stop_wire is not None:
            stop_reason = normalize_stop_reason(stop_wire, saw_tool_use=saw_tool_use)
            source = StopSource.WIRE
        elif clean:
            stop_reason = derive_stop_reason(
                saw_tool_use=saw_tool_use,
                output_tokens=self._peak_output,
                max_tokens=self.max_tokens,
            )
            source = StopSource.DERIVED
        else:
            stop_reason = source = None
        usage = settle(
            input_tokens=self._input_tokens,
            output_tokens=self._output_tokens,
            outcome=outcome,
            parts=parts,
            request_chars=self.request_chars,
            opening_output=self._output_opening,
        )
        return Turn(
            provider=self.provider,
            termination=Termination.CLEAN if clean else Termination.ABRUPT,
            outcome=outcome,
            parts=parts,
            usage=usage,
            stop_reason=stop_reason,
            stop_reason_wire=stop_wire,
            stop_reason_source=source,
            truncated=self._truncated(stop_reason, parts),
            error=self._error,
            message_id=self.message_id,
            model=self._model,
            unknown_events=self._unknown,
            max_tokens=self.max_tokens,
            peak_output_tokens=self._peak_output,
        )


def _in_question(parts: tuple[Part, ...]) -> bool:
    """Is any call's completeness in question: arguments that failed the strict parse,
    or that arrived parsed upstream (nothing of the model's text to check)?"""
    return any(type(p) is ToolCall and (p.arguments is None or not p.provable) for p in parts)


def unstructured(marker: str, structure: str, profile: Profile, *, late: bool = False) -> str:
    """Why a proof without its structure ended a turn under a strict ``profile`` (``late``:
    a stop reason came, but more content followed it)."""
    after = " after the last content" if late else ""
    return (
        f"`{marker}` arrived without {structure}{after}: the ending may have been added by "
        f"a layer in between (profile {profile.name} requires it)"
    )
