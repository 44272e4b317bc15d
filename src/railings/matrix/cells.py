"""The grid: fault classes x payload sizes x providers x {text, cut tool call}.

The fault classes and the expectation table, the acceptance rule written down once,
are in :mod:`railings.matrix.cases`; this module holds the rest of the grid.

With a tool call (the ``tool`` half of the grid) the turn says a little text,
calls ``shell`` with a complete ``{"command": "ls -la"}``, then starts a second
``shell`` call whose heredoc is the payload, and ``max_tokens`` cuts it in the
middle. On top of the expectation table: **the cut call is never executed** (checked
through a real dispatch with a spy ``shell`` tool), and the complete sibling
runs exactly when the turn is complete.

Sizes are characters of text (or of the cut call's arguments). The scripted
server streams them in deltas of ``chunk`` characters: larger chunks for the
larger sizes keep a 1 MB cell at some 64 events, so the whole grid runs in
seconds.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from railings.matrix.cases import (
    ATTEMPTS,
    FAULT_CASES,
    QUICK_FAULTS,
    Expect,
    FaultCase,
    Resuming,
    Shape,
)
from railings.providers import SPECS, ProviderSpec
from railings.providers.base import Framing
from railings.testing.script import Plan, Script, filler, plan_turn
from railings.testing.wires import kit_wire

__all__ = [
    "ATTEMPTS",
    "FAULT_CASES",
    "PROVIDERS",
    "QUICK_FAULTS",
    "SIBLING_COMMAND",
    "SIZES",
    "Cell",
    "Expect",
    "FaultCase",
    "Payload",
    "Provider",
    "Resuming",
    "Shape",
    "Size",
    "grid",
]


@dataclass(frozen=True, slots=True)
class Size:
    """A payload size: ``chars`` of text or arguments, streamed ``chunk`` chars per delta;
    ``drip`` is the piece size of the drip fault (one byte for the small size)."""

    name: str
    chars: int
    chunk: int
    drip: int


SIZES: dict[str, Size] = {
    s.name: s
    for s in (
        Size("small", 1024, 32, 1),
        Size("medium", 64 * 1024, 1024, 64),
        Size("large", 1024 * 1024, 16 * 1024, 1024),
    )
}


@dataclass(frozen=True, slots=True)
class Provider:
    """A wire format the matrix drives. ``base_path`` is what a ``base_url`` adds to the
    server's origin, in the official SDKs and in ClientConfig (OpenAI's has ``/v1``).
    ``numbered``: its events carry sequence numbers and its last events repeat the
    whole content, so a reordered or repeated delta can be noticed (or undone).
    ``lead`` is the number of events before the first content delta, ``seams`` the
    events that close one output item and open the next (Anthropic: block stop, block
    start, the empty first ``partial_json``): where a mid-stream fault lands depends
    on them. ``whole_calls``: the wire sends each call whole (Gemini, Ollama), so the
    call ``max_tokens`` cuts is never streamed and the middle is the text's."""

    name: str
    base_path: str
    numbered: bool = False
    lead: int = 1
    seams: int = 1
    whole_calls: bool = False  # calls arrive whole: a cut call is never sent
    framing: Framing = Framing.SSE


# Every wire format of the provider registry, as the matrix drives it: the path its
# base URL adds (OpenAI's ``/v1``), whether its events are numbered, and how the
# scripted server shapes its stream (the test kit's wire says). A new provider spec
# adds its column here.
def _provider(spec: ProviderSpec) -> Provider:
    wire = kit_wire(spec)
    return Provider(
        spec.name,
        spec.base_path,
        numbered=spec.numbered,
        lead=wire.scripted.lead,
        seams=wire.scripted.seams,
        whole_calls=wire.whole_calls,
        framing=spec.framing,
    )


PROVIDERS: dict[str, Provider] = {s.name: _provider(s) for s in SPECS}

# -- the payloads ------------------------------------------------------------------------

# Non-ASCII up front, so drip and corrupt cut through multi-byte UTF-8 sequences.
LEAD = "Réponse complète — naïve café, 日本語, ✓. "
TOOL_TEXT = "I'll list the directory, then save the notes."
SIBLING_COMMAND = "ls -la"


def cut_command(chars: int) -> str:
    """The command of the call that ``max_tokens`` cuts: a heredoc of ``chars`` characters."""
    return "cat > notes.txt <<'EOF'\n" + filler(chars) + "\nEOF"


@dataclass(frozen=True, slots=True)
class Payload:
    """What the scripted model says in one (size, tool) combination, and what arrives.

    ``plan`` is the scripted server's own plan after ``max_tokens``: the reference
    every client's result is compared with."""

    size: Size
    tool: bool
    script: Script
    max_tokens: int
    plan: Plan

    def shape(self, provider: Provider) -> Shape:
        """``mid``: an event in the middle of the content deltas -- of the text, or of
        the cut call's arguments (the payload) when there is a tool call."""
        chunk = self.size.chunk
        text = math.ceil(len(self.plan.text) / chunk)
        lead = provider.lead
        if not self.plan.calls:
            return Shape(mid=lead + max(1, text // 2), drip=self.size.drip, lead=lead)
        if provider.whole_calls:
            # The text, then each sent call whole: the second of those events, so one
            # event of content came before it and one more (the proof) comes after.
            events = text + sum(1 for c in self.plan.calls if c.complete)
            return Shape(mid=lead + max(2, events // 2 + 1), drip=self.size.drip, lead=lead)
        *before, cut = self.plan.calls
        ahead = text + sum(provider.seams + math.ceil(len(c.arguments) / chunk) for c in before)
        middle = max(1, math.ceil(len(cut.arguments) / chunk) // 2)
        mid = lead + ahead + provider.seams + middle
        return Shape(mid=mid, drip=self.size.drip, lead=lead)


@functools.cache
def payload(size: Size, tool: bool) -> Payload:
    """The script and the reference plan for ``size`` (cached: a 1 MB filler costs)."""
    if tool:
        calls = [
            {"name": "shell", "arguments": {"command": SIBLING_COMMAND}},
            {"name": "shell", "arguments": {"command": cut_command(size.chars)}},
        ]
        sent = len(TOOL_TEXT) + sum(
            len(json.dumps(c["arguments"], ensure_ascii=False)) for c in calls[:1]
        )
        # Cut the second call in the middle of its heredoc.
        max_tokens = math.ceil((sent + size.chars // 2) / 4)
        turn: dict[str, object] = {"text": TOOL_TEXT, "tool_calls": calls}
    else:
        turn = {"text": LEAD + filler(size.chars - len(LEAD))}
        max_tokens = math.ceil(size.chars / 4) + 64  # room: not truncated
    script = Script.from_dict(
        {"model": "railings-matrix", "seed": 7, "chunk_size": size.chunk, "turns": [turn]}
    )
    plan = plan_turn(script.turns[0], max_tokens, lambda: "call_matrix")
    return Payload(size, tool, script, max_tokens, plan)


# -- cells -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cell:
    """One point of the grid: a fault class, a size, a provider, with or without the tool."""

    fault: FaultCase
    size: Size
    provider: Provider
    tool: bool

    @property
    def key(self) -> tuple[str, str, str, bool]:
        """The cell's names (fault, size, provider, tool): what tells two cells apart."""
        return (self.fault.name, self.size.name, self.provider.name, self.tool)

    def spec(self, shape: Shape) -> str:
        """The fault proxy's spec for this cell's fault, placed by ``shape`` in its stream."""
        return self.fault.spec(shape)


def grid(
    faults: Sequence[str] | None = None,
    sizes: Sequence[str] | None = None,
    providers: Sequence[str] | None = None,
    tools: Iterable[bool] = (False, True),
) -> list[Cell]:
    """Every cell for the chosen names (None: all), in table order."""
    by_name = {f.name: f for f in FAULT_CASES}
    chosen_faults = [by_name[n] for n in faults] if faults is not None else list(FAULT_CASES)
    chosen_sizes = [SIZES[n] for n in sizes] if sizes is not None else list(SIZES.values())
    chosen_providers = (
        [PROVIDERS[n] for n in providers] if providers is not None else list(PROVIDERS.values())
    )
    tool_values = tuple(tools)
    return [
        Cell(f, s, p, t)
        for f in chosen_faults
        for p in chosen_providers
        if f.framings is None or p.framing in f.framings
        for t in tool_values
        for s in chosen_sizes
    ]
