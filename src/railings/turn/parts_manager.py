"""The parts manager: a turn's content events in, its ordered tuple of parts out.

Theory of operation. Each content event either continues the part it belongs to or
begins a new one, and parts are kept in the order they began
(:mod:`railings.turn.parts`):

* text (and refusal) continues the latest part when that part is text (refusal) too,
  and begins a new one after any other part;
* a thinking delta continues the open thinking block; a signature closes it (Anthropic
  signs each block on its own), and a redacted block stands alone;
* a call begins where its start arrived and is addressed by its ``index`` afterwards;
  a provider-run call's result block is a part of its own where it arrived;
* the Responses API's output items arrive whole, with the response's end, and come last.

Accumulate, then parse once: text pieces and argument fragments go into lists and are
joined when the turn is read; every call's arguments are parsed **strictly**, exactly
once (linear in their size, never a re-parse of a growing buffer). Nothing here
repairs: a failed strict parse leaves ``arguments`` as ``None``, the truncation
sentinel the verdicts read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from railings.events import CallType, ServerToolResult, ToolCallStart, ToolKind
from railings.turn.parts import (
    ArgumentOrigin,
    Part,
    ProviderItem,
    RedactedThinkingPart,
    RefusalPart,
    ServerToolCall,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCall,
)
from railings.turn.repair import RepairPolicy, parse_arguments

__all__ = ["PartsManager"]


class _Pieces:
    """A text or refusal part being written: its pieces, joined once."""

    __slots__ = ("pieces", "refusal")

    def __init__(self, refusal: bool) -> None:
        self.refusal = refusal
        self.pieces: list[str] = []

    def part(self) -> Part:
        text = "".join(self.pieces)
        return RefusalPart(text=text) if self.refusal else TextPart(text=text)


class _Thought:
    """One thinking block: its text pieces and its signature, or a redacted block's data."""

    __slots__ = ("redacted", "signature", "texts")

    def __init__(self, redacted: str = "") -> None:
        self.texts: list[str] = []
        self.signature = ""
        self.redacted = redacted

    def part(self) -> Part:
        if self.redacted:
            return RedactedThinkingPart(data=self.redacted)
        return ThinkingPart(text="".join(self.texts), signature=self.signature)


class _Call:
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
        "position",
        "results",
    )

    def __init__(self, start: ToolCallStart, position: int) -> None:
        self.position = position  # among all calls (local: among local calls)
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

    def part(self) -> Part:
        raw = self.raw()
        if self.kind != "function":
            parsed = parse_arguments(raw, RepairPolicy.STRICT_ONLY)
            return ServerToolCall(
                index=self.position,
                id=self.id,
                name=self.name,
                kind=self.kind,
                raw_input=raw,
                input=None if parsed is None else parsed.value,
                result_arrived=bool(self.results),
                result_types=tuple(self.results),
            )
        arguments: dict[str, Any] | None
        if self.call_type == "custom":
            # A freeform input is a string by design, never JSON: it is the argument itself,
            # once its item closed (the verdict still applies the truncation rule to it).
            arguments = {"input": raw} if self.closed else None
        else:
            parsed = parse_arguments(raw, RepairPolicy.STRICT_ONLY)
            arguments = None if parsed is None else parsed.value
        return ToolCall(
            index=self.position,
            id=self.id,
            name=self.name,
            raw_arguments=raw,
            arguments=arguments,
            closed=self.closed,
            type=self.call_type,
            origin=self.origin(),
        )


_Entry = _Pieces | _Thought | _Call | ServerToolResultPart
_E = TypeVar("_E", bound=_Entry)


class PartsManager:
    """Collects a turn's content in arrival order (see the module docstring)."""

    __slots__ = ("_calls", "_entries", "_items", "_local", "_open_thought", "open_text")

    def __init__(self) -> None:
        self._entries: list[_Entry] = []  # every part being written, in the order it began
        self._calls: list[_Call] = []  # every call, local or provider-run, by its index
        self._local = 0  # local calls so far
        self._open_thought: _Thought | None = None
        self._items: tuple[Mapping[str, Any], ...] = ()
        # The pieces of the text part being written while it is the latest part, else None:
        # the assembler appends most text deltas to it directly (one list append, no call).
        self.open_text: list[str] | None = None

    @property
    def local_calls(self) -> int:
        """How many local calls (the client must act on) started."""
        return self._local

    def written(self) -> int:
        """How many pieces of content were written so far (parts begun, text pieces,
        thoughts, argument fragments): it grows with every one, whichever path appended
        it (the reader's fast path appends to the lists directly). Linear in the parts:
        for a question asked once or twice a turn."""
        count = len(self._entries)
        for entry in self._entries:
            if type(entry) is _Pieces:
                count += len(entry.pieces)
            elif type(entry) is _Thought:
                count += len(entry.texts) + len(entry.signature)
            elif type(entry) is _Call:
                count += len(entry.fragments)
        return count

    def text(self, text: str, *, refusal: bool = False) -> None:
        """A non-empty piece of answer (or refusal) text."""
        last = self._entries[-1] if self._entries else None
        if type(last) is not _Pieces or last.refusal is not refusal:
            last = self._begin(_Pieces(refusal))
            if not refusal:
                self.open_text = last.pieces
        last.pieces.append(text)

    def _begin(self, entry: _E) -> _E:
        """A new part begins: the open text part, if any, ends."""
        self.open_text = None
        self._entries.append(entry)
        return entry

    def thinking(self, text: str, signature: str, redacted: str) -> None:
        """A thinking delta: text, a signature that closes the open block, or a whole
        redacted block. Kept block by block, in arrival order: Anthropic checks each
        block against its own signature."""
        if redacted:
            self._open_thought = None
            self._begin(_Thought(redacted))
            return
        thought = self._open_thought
        if thought is None:
            thought = self._open_thought = self._begin(_Thought())
        if text:
            thought.texts.append(text)
        if signature:
            thought.signature += signature
            self._open_thought = None

    def call_start(self, start: ToolCallStart) -> None:
        """A call began; its index is the next one (the decoders number calls so)."""
        if start.kind == "function":
            call = _Call(start, self._local)
            self._local += 1
        else:
            call = _Call(start, len(self._calls))
        self._calls.append(call)
        self._begin(call)

    def call_arguments(self, index: int, fragment: str, parsed: bool) -> bool:
        """One argument fragment of call ``index``; False when no such call started."""
        if not 0 <= index < len(self._calls):
            return False
        call = self._calls[index]
        call.fragments.append(fragment)
        call.parsed = call.parsed or parsed
        return True

    def fragments(self, index: int) -> list[str] | None:
        """The fragment list of call ``index`` (None when no such call started): where
        :meth:`call_arguments` appends a fragment that is the model's text."""
        return self._calls[index].fragments if 0 <= index < len(self._calls) else None

    def call(self, index: int) -> Part | None:
        """Call ``index`` as it stands now, its arguments parsed strictly (None when no such
        call started): what the turn will hold for it if nothing more arrives for it."""
        return self._calls[index].part() if 0 <= index < len(self._calls) else None

    def call_end(self, index: int) -> None:
        """The provider closed call ``index``'s argument block."""
        if 0 <= index < len(self._calls):
            self._calls[index].closed = True

    def server_result(self, event: ServerToolResult) -> None:
        """A provider-run call's result: recorded on its call, and a part of its own when
        the wire carried a result block."""
        for call in self._calls:
            if call.id == event.tool_use_id:
                call.results.append(event.type)
        if event.block is not None:
            self._begin(
                ServerToolResultPart(
                    tool_use_id=event.tool_use_id, type=event.type, block=event.block
                )
            )

    def output_items(self, items: tuple[Mapping[str, Any], ...]) -> None:
        """The Responses API's own output items of the finished response."""
        self._items = items

    def parts(self) -> tuple[Part, ...]:
        """The parts, in the order they began; the output items last."""
        out: list[Part] = [
            entry if isinstance(entry, ServerToolResultPart) else entry.part()
            for entry in self._entries
        ]
        out.extend(ProviderItem(item=item) for item in self._items)
        return tuple(out)
