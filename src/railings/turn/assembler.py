"""The turn assembler (the stream reducer): normalized events in, one :class:`Turn` out.

It accumulates text, thinking, tool calls and usage, drives the termination
state machine, and -- once the stream has ended -- parses every call's
arguments **strictly**, exactly once. Argument fragments are appended to a
list and joined at the end: linear in the argument size, never a re-parse of
a growing buffer per fragment. It never repairs: a failed strict parse leaves
``arguments`` as ``None``, the truncation sentinel the verdicts read.

Each call also keeps where its arguments came from (``origin``): the model's own
text, or an object parsed upstream (see :mod:`railings.events`).

Truncation is sticky. A turn may carry several stop reasons (a Chat chunk with
``finish_reason: "length"`` and a later one with ``"stop"``); an output-limit stop
seen anywhere wins, whatever follows it: the output was cut, and a later "stop"
cannot make the cut call whole again.

What counts as content (for Empty / Partial): a non-empty text, thinking or
refusal delta, redacted thinking, or any tool-call start or argument fragment.
A delta whose text is the empty string -- OpenAI's first chunk,
``{"role": "assistant", "content": ""}`` -- is *not* content: a stream cut
right after it received nothing billable and is Empty, so it is resent.
"""

from __future__ import annotations

import json
from collections.abc import Set
from typing import Any

from railings.classify import INTERRUPTED_MESSAGE, class_for_provider_type
from railings.errors import IllegalTransition
from railings.events import (
    CallType,
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
    ToolKind,
    Unknown,
    UsageUpdate,
)
from railings.redact import redact
from railings.turn.model import (
    ArgumentOrigin,
    ErrorKind,
    Outcome,
    Segment,
    ServerToolCall,
    Termination,
    ToolCall,
    Turn,
    TurnError,
    Usage,
)
from railings.turn.repair import RepairPolicy, parse_arguments
from railings.turn.stop_reason import (
    DEFAULT_EXEMPTIONS,
    MAX_TOKENS,
    derive_stop_reason,
    is_truncated,
    normalize_stop_reason,
)
from railings.turn.termination import Signal, State, TerminationMachine

__all__ = ["TurnAssembler"]


class _CallBuffer:
    __slots__ = (
        "call_type",
        "closed",
        "fragments",
        "id",
        "initial",
        "initial_parsed",
        "kind",
        "name",
        "parsed",
        "results",
    )

    def __init__(self, start: ToolCallStart) -> None:
        self.id = start.id
        self.name = start.name
        self.kind: ToolKind = start.kind
        self.call_type: CallType = start.call_type
        self.initial = start.initial_arguments
        self.initial_parsed = start.initial_parsed
        self.fragments: list[str] = []
        self.parsed = False  # a fragment was an object on the wire, not the model's text
        self.closed = False
        self.results: list[str] = []

    def raw(self) -> str:
        # Anthropic: when every partial_json was "", the input is the start block's object --
        # but only once the block closed. A block the output limit cut right after its start
        # never had its input written: its placeholder {} is not the model's arguments.
        return "".join(self.fragments) or (self.initial if self.closed else "")

    def origin(self) -> ArgumentOrigin:
        if any(self.fragments):
            return "parsed" if self.parsed else "raw"
        if self.closed and self.initial:
            return "parsed" if self.initial_parsed else "raw"
        return "raw"


class _ThinkingBuffer:
    """One thinking block: its text pieces and its signature, or a redacted block's data."""

    __slots__ = ("redacted", "signature", "texts")

    def __init__(self, redacted: str = "") -> None:
        self.texts: list[str] = []
        self.signature = ""
        self.redacted = redacted

    def block(self) -> dict[str, str]:
        if self.redacted:
            return {"type": "redacted_thinking", "data": self.redacted}
        return {"type": "thinking", "thinking": "".join(self.texts), "signature": self.signature}


class TurnAssembler:
    """Reduces normalized events to a turn. Feed it with :meth:`received`, :meth:`apply`,
    :meth:`fault` and :meth:`eof`; read the result with :meth:`turn` once terminated."""

    def __init__(
        self,
        provider: str,
        *,
        max_tokens: int | None = None,
        service: str | None = None,
        exemptions: Set[str] = DEFAULT_EXEMPTIONS,
    ) -> None:
        self.provider = provider
        self.max_tokens = max_tokens
        self.service = service
        self.exemptions = exemptions
        self.machine = TerminationMachine()
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._refusal: list[str] = []
        self._signature: list[str] = []
        self._redacted: list[str] = []
        self._calls: list[_CallBuffer] = []
        self._input_tokens: int | None = None
        self._output_tokens: int | None = None
        self._stop_wire: str | None = None
        self._cut_wire: str | None = None  # the first output-limit stop of the turn
        self._error: TurnError | None = None
        self._message_id = ""
        self._model = ""
        self._unknown = 0
        # Where provider-run tool blocks and thinking blocks fell between text pieces:
        # (text pieces before, kind, index). See _segments.
        self._marks: list[tuple[int, str, int]] = []
        self._results: list[str] = []
        self._output_items = ""
        self._thoughts: list[_ThinkingBuffer] = []
        self._open_thought: _ThinkingBuffer | None = None
        self.content = False  # True once any content delta arrived (see module docstring)

    # -- feeding -------------------------------------------------------------------------

    def received(self) -> None:
        """Bytes arrived from the network."""
        # RECEIVED moves CONNECTING only; in every other state it is a loop (TRANSITIONS),
        # so later chunks skip the table lookup (two enum hashes in Python, per chunk).
        if self.machine.state is State.CONNECTING:
            self.machine.signal(Signal.RECEIVED)

    def apply(self, event: StreamEvent) -> None:
        """Apply one event; ignored once the stream has terminated."""
        if not self.machine.open:
            return
        match event:
            case TextDelta(text=text):
                if text:
                    self._text.append(text)
                    self.content = True
            case ToolArgumentsDelta(index=index, fragment=fragment, parsed=parsed):
                if 0 <= index < len(self._calls):
                    call = self._calls[index]
                    call.fragments.append(fragment)
                    call.parsed = call.parsed or parsed
                    self.content = True
                else:
                    self._unknown += 1
            case ThinkingDelta(text=text, signature=signature, redacted=redacted):
                if text:
                    self._thinking.append(text)
                    self.content = True
                if signature:
                    self._signature.append(signature)
                if redacted:
                    self._redacted.append(redacted)
                    self.content = True
                self._think(text, signature, redacted)
            case RefusalDelta(text=text):
                if text:
                    self._refusal.append(text)
                    self.content = True
            case ToolCallStart():
                if event.kind != "function":
                    self._marks.append((len(self._text), "call", len(self._calls)))
                self._calls.append(_CallBuffer(event))
                self.content = True
            case ToolCallEnd(index=index):
                if 0 <= index < len(self._calls):
                    self._calls[index].closed = True
            case ServerToolResult(tool_use_id=tool_use_id, type=kind, raw=raw):
                for call in self._calls:
                    if call.id == tool_use_id:
                        call.results.append(kind)
                if raw:
                    self._marks.append((len(self._text), "result", len(self._results)))
                    self._results.append(raw)
            case OutputItems(raw=raw):
                self._output_items = raw
            case UsageUpdate(input_tokens=input_tokens, output_tokens=output_tokens):
                if input_tokens is not None:
                    self._input_tokens = input_tokens
                if output_tokens is not None:
                    self._output_tokens = output_tokens
            case StopReason(wire=wire):
                self._stop_wire = wire
                if self._cut_wire is None and normalize_stop_reason(wire) == MAX_TOKENS:
                    self._cut_wire = wire  # sticky: see the module docstring
            case MessageStart(id=ident, model=model):
                self._message_id = self._message_id or ident
                self._model = self._model or model
            case TerminationProof():
                self.machine.signal(Signal.PROOF)
            case ProviderErrorEvent(message=message, provider_type=provider_type, status=status):
                cls = class_for_provider_type(provider_type, status)
                # The provider's words may echo the API key: redacted before they are kept.
                self._abrupt(
                    TurnError(
                        ErrorKind.PROVIDER_ERROR, redact(message), provider_type, cls.retryable
                    )
                )
            case Unknown():
                self._unknown += 1

    def _think(self, text: str, signature: str, redacted: str) -> None:
        """Keep each thinking block apart, in arrival order: Anthropic signs every block on
        its own (its ``signature_delta`` closes it), and a redacted block stands alone."""
        if redacted:
            self._open_thought = None
            self._new_thought(_ThinkingBuffer(redacted))
            return
        thought = self._open_thought
        if thought is None:
            thought = self._open_thought = self._new_thought(_ThinkingBuffer())
        if text:
            thought.texts.append(text)
        if signature:
            thought.signature += signature
            self._open_thought = None

    def _new_thought(self, thought: _ThinkingBuffer) -> _ThinkingBuffer:
        self._marks.append((len(self._text), "thinking", len(self._thoughts)))
        self._thoughts.append(thought)
        return thought

    def fault(self, message: str) -> None:
        """The bytes stopped being the protocol (malformed data): an abrupt end."""
        if self.machine.open:
            self._abrupt(TurnError(ErrorKind.MALFORMED_STREAM, message, None, not self.content))

    def eof(self) -> None:
        """The byte stream ended. Without the proof, that is an interruption."""
        if self.machine.open:
            self._abrupt(
                TurnError(ErrorKind.INTERRUPTED, INTERRUPTED_MESSAGE, None, not self.content)
            )

    def _abrupt(self, error: TurnError) -> None:
        self._error = error
        self.machine.signal(Signal.FAULT)

    # -- reading -------------------------------------------------------------------------

    def turn(self) -> Turn:
        """The assembled turn. Only once terminated: an open stream has no verdict yet."""
        state = self.machine.state
        if not self.machine.terminated:
            raise IllegalTransition(state.value, "turn")
        clean = state is State.TERMINATED_CLEANLY
        outcome = (
            Outcome.COMPLETE if clean else (Outcome.PARTIAL if self.content else Outcome.EMPTY)
        )
        local = [c for c in self._calls if c.kind == "function"]
        tool_calls = tuple(_tool_call(position, c) for position, c in enumerate(local))
        server_calls = tuple(
            _server_call(i, c) for i, c in enumerate(self._calls) if c.kind != "function"
        )
        stop_reason: str | None
        source: str | None
        stop_wire = self._cut_wire or self._stop_wire
        if stop_wire is not None:
            stop_reason = normalize_stop_reason(stop_wire, saw_tool_use=bool(local))
            source = "wire"
        elif clean:
            stop_reason = derive_stop_reason(
                saw_tool_use=bool(local),
                output_tokens=self._output_tokens,
                max_tokens=self.max_tokens,
            )
            source = "derived"
        else:
            stop_reason = source = None
        usage = None
        if self._input_tokens is not None or self._output_tokens is not None:
            usage = Usage(self._input_tokens, self._output_tokens)
        return Turn(
            provider=self.provider,
            termination=Termination.CLEAN if clean else Termination.ABRUPT,
            outcome=outcome,
            text="".join(self._text),
            thinking="".join(self._thinking),
            refusal="".join(self._refusal),
            tool_calls=tool_calls,
            server_tool_calls=server_calls,
            usage=usage,
            stop_reason=stop_reason,
            stop_reason_wire=stop_wire,
            stop_reason_source=source,
            truncated=is_truncated(stop_reason, self.service, self.exemptions),
            error=self._error,
            message_id=self._message_id,
            model=self._model,
            thinking_signature="".join(self._signature),
            redacted_thinking=tuple(self._redacted),
            unknown_events=self._unknown,
            segments=self._segments(),
            output_items=self._output_items,
        )

    def _segments(self) -> tuple[Segment, ...]:
        """Text, thinking and provider-run tool blocks in arrival order, to send back
        verbatim. Needed only when the order is more than "thinking, then text": a turn
        with provider-run tools, or with several thinking blocks."""
        provider_run = any(kind != "thinking" for _, kind, _ in self._marks)
        if not provider_run and len(self._thoughts) <= 1:
            return ()
        out: list[Segment] = []
        done = 0
        for pieces, kind, index in self._marks:
            if pieces > done:
                out.append(Segment("text", "".join(self._text[done:pieces])))
                done = pieces
            if kind == "thinking":
                thought = self._thoughts[index].block()
                out.append(Segment(thought["type"], json.dumps(thought, ensure_ascii=False)))
            elif kind == "result":
                out.append(Segment("server_tool_result", self._results[index]))
            else:
                call = self._calls[index]
                raw = call.raw()
                parsed = parse_arguments(raw, RepairPolicy.STRICT_ONLY)
                block = {
                    "type": call.kind,
                    "id": call.id,
                    "name": call.name,
                    "input": {} if parsed is None else parsed.value,
                }
                out.append(Segment(call.kind, json.dumps(block, ensure_ascii=False)))
        if done < len(self._text):
            out.append(Segment("text", "".join(self._text[done:])))
        return tuple(out)


def _tool_call(position: int, call: _CallBuffer) -> ToolCall:
    raw = call.raw()
    arguments: dict[str, Any] | None
    if call.call_type == "custom":
        # A freeform input is a string by design, never JSON: it is the argument itself,
        # once its item closed (the verdict still applies the truncation rule to it).
        arguments = {"input": raw} if call.closed else None
    else:
        parsed = parse_arguments(raw, RepairPolicy.STRICT_ONLY)
        arguments = None if parsed is None else parsed.value
    return ToolCall(
        index=position,
        id=call.id,
        name=call.name,
        raw_arguments=raw,
        arguments=arguments,
        closed=call.closed,
        type=call.call_type,
        origin=call.origin(),
    )


def _server_call(index: int, call: _CallBuffer) -> ServerToolCall:
    raw = call.raw()
    parsed = parse_arguments(raw, RepairPolicy.STRICT_ONLY)
    return ServerToolCall(
        index=index,
        id=call.id,
        name=call.name,
        kind=call.kind,
        raw_input=raw,
        input=None if parsed is None else parsed.value,
        result_arrived=bool(call.results),
        result_types=tuple(call.results),
    )
