"""The grid: fault classes x payload sizes x providers x {text, cut tool call}.

The expectation table is the acceptance rule, written down once. Each fault
class says what a correct client does when that fault hits a stream; the
judge (:mod:`railings.matrix.judge`) holds every cell to it.

======================  ==============================================================
fault class             expected outcome (railings client)
======================  ==============================================================
clean                   FULL: the proof arrives; the full text, exactly; one attempt
truncate_empty          RESENT: cut after the first event, which carries no content
                        (Empty): resent transparently, then the full text
truncate                PARTIAL: cut mid-content: returned as-is, marked interrupted,
                        never resent
drop_terminator         PARTIAL: every content byte may have arrived, but not the proof:
                        marked interrupted
idle                    PARTIAL: silent mid-content past the idle gap: IdleTimeout
reorder, duplicate      LIMIT: two content deltas swapped / one repeated, the proof
                        intact. Chat Completions and Messages carry no sequence
                        numbers, so no client can tell: reported, never a failure.
                        The Responses API numbers its events and repeats the content
                        at the end: there the full text, or a detected fault, is due
reset                   PARTIAL: TCP RST mid-content
close_after_terminator  PROVEN, THEN BROKEN: the whole stream and
                        its proof, then the connection breaks. The proof is data, not
                        the close: COMPLETE, the full text
drip                    FULL: the body in tiny pieces (events and UTF-8 split anywhere)
status_429, status_529  RETRIED: one 429 / 529 before the stream: retried, then full
status_429_always       RAISES: 429 on every attempt: a typed ``RateLimited`` once the
                        retry policy gives up
error_event             PARTIAL: a provider error event mid-content: marked
                        interrupted, the provider error kept
corrupt, corrupt_utf8   PARTIAL: broken JSON / invalid UTF-8 mid-content: malformed
cut_mid_event           PARTIAL: half an event-stream frame / NDJSON line, then a clean
                        end (Bedrock, Ollama)
corrupt_crc             PARTIAL: a frame whose message CRC does not match: malformed
                        (Bedrock)
drop_proof_only         PARTIAL: ``messageStop`` dropped, ``metadata`` still sent: usage
                        is not proof (Bedrock)
======================  ==============================================================

With a tool call (the ``tool`` half of the grid) the turn says a little text,
calls ``shell`` with a complete ``{"command": "ls -la"}``, then starts a second
``shell`` call whose heredoc is the payload, and ``max_tokens`` cuts it in the
middle. On top of the rule above: **the cut call is never executed** (checked
through a real dispatch with a spy ``shell`` tool), and the complete sibling
runs exactly when the turn is complete.

Sizes are characters of text (or of the cut call's arguments). The scripted
server streams them in deltas of ``chunk`` characters: larger chunks for the
larger sizes keep a 1 MB cell at some 64 events, so the whole grid runs in
seconds.
"""

from __future__ import annotations

import enum
import functools
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from railings.providers import SPECS, ProviderSpec
from railings.testing.script import Plan, Script, ScriptTurn, filler, plan_turn
from railings.testing.wires import kit_wire

__all__ = [
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
    "Shape",
    "Size",
    "grid",
]


class Expect(enum.Enum):
    """What a correct client makes of a stream hit by one fault class."""

    FULL = "full"
    RESENT = "resent"
    RETRIED = "retried"
    PARTIAL = "partial"
    RAISES = "raises"
    COUNTEREXAMPLE = "counterexample"
    LIMIT = "limit"


@dataclass(frozen=True, slots=True)
class Shape:
    """Where in a stream a fault acts: ``mid`` is an event in the middle of the content."""

    mid: int
    drip: int = 1
    lead: int = 1  # events before the first content delta (the provider's)


@dataclass(frozen=True, slots=True)
class FaultCase:
    """One row of the expectation table. ``spec(shape)`` is the fault proxy's spec."""

    name: str
    spec: Callable[[Shape], str]
    expect: Expect
    detail: str  # the expected outcome in a few words (the module docstring says more)
    error: str | None = None  # PARTIAL: the turn's error kind or the interruption's class;
    #                           RETRIED/RESENT: the class of the first attempt's error;
    #                           RAISES: the class raised
    idle: float | None = None  # this case needs a short idle gap (seconds)
    quick: bool = False
    providers: frozenset[str] | None = None  # the wires it applies to (None: every one)


FAULT_CASES: tuple[FaultCase, ...] = (
    FaultCase("clean", lambda s: "none", Expect.FULL, "full text", quick=True),
    FaultCase(
        "truncate_empty",
        # After the first event where it carries no content; before it, on a wire whose
        # first event already does (Gemini, Ollama).
        lambda s: f"truncate:events={min(s.lead, 1)},times=1",
        Expect.RESENT,
        "Empty: resent, full text",
        error="StreamInterrupted",
        quick=True,
    ),
    FaultCase(
        "truncate",
        lambda s: f"truncate:events={s.mid}",
        Expect.PARTIAL,
        "Partial, marked",
        quick=True,
    ),
    FaultCase(
        "drop_terminator",
        lambda s: "drop_terminator",
        Expect.PARTIAL,
        "Partial, marked",
        quick=True,
    ),
    FaultCase(
        "idle",
        lambda s: f"idle:events={s.mid},seconds=30",
        Expect.PARTIAL,
        "Partial: IdleTimeout",
        error="IdleTimeout",
        idle=0.5,
        quick=True,
    ),
    FaultCase("reorder", lambda s: f"reorder:event={s.mid}", Expect.LIMIT, "undetectable"),
    FaultCase("duplicate", lambda s: f"duplicate:event={s.mid}", Expect.LIMIT, "undetectable"),
    FaultCase("reset", lambda s: f"reset:events={s.mid}", Expect.PARTIAL, "Partial, marked"),
    FaultCase(
        "close_after_terminator",
        lambda s: "close_after_terminator",
        Expect.COUNTEREXAMPLE,
        "complete: proof seen",
        quick=True,
    ),
    FaultCase("drip", lambda s: f"drip:delay=0,size={s.drip}", Expect.FULL, "full text"),
    FaultCase(
        "status_429",
        lambda s: "status:code=429,retry_after_ms=10,times=1",
        Expect.RETRIED,
        "retried: full text",
        error="RateLimited",
        quick=True,
    ),
    # Any retryable provider error: railings names an OpenAI-shaped 529 ServerError
    # (its body says "server_error"), an Anthropic one Overloaded.
    FaultCase(
        "status_529",
        lambda s: "status:code=529,retry_after_ms=10,times=1",
        Expect.RETRIED,
        "retried: full text",
        error="ProviderError",
    ),
    FaultCase(
        "status_429_always",
        lambda s: "status:code=429,retry_after_ms=10",
        Expect.RAISES,
        "raises RateLimited",
        error="RateLimited",
    ),
    FaultCase(
        "error_event",
        lambda s: f"error_event:events={s.mid}",
        Expect.PARTIAL,
        "Partial: provider error",
        error="provider_error",
        quick=True,
    ),
    FaultCase(
        "corrupt",
        lambda s: f"corrupt:event={s.mid},kind=json",
        Expect.PARTIAL,
        "Partial: malformed",
        error="malformed_stream",
    ),
    FaultCase(
        "corrupt_utf8",
        lambda s: f"corrupt:event={s.mid},kind=utf8",
        Expect.PARTIAL,
        "Partial: malformed",
        error="malformed_stream",
    ),
    # The framing's own faults, on the wires that are not SSE: half an event-stream
    # frame or NDJSON line, then a clean end; a frame whose CRC does not match; the
    # proof dropped alone, so Bedrock's ``metadata`` (usage) still arrives after it.
    FaultCase(
        "cut_mid_event",
        lambda s: f"cut_mid_event:event={s.mid}",
        Expect.PARTIAL,
        "Partial, marked",
        providers=frozenset({"bedrock", "ollama"}),
    ),
    FaultCase(
        "corrupt_crc",
        lambda s: f"corrupt:event={s.mid},kind=crc",
        Expect.PARTIAL,
        "Partial: malformed",
        error="malformed_stream",
        providers=frozenset({"bedrock"}),
    ),
    FaultCase(
        "drop_proof_only",
        lambda s: "drop_terminator:rest=keep",
        Expect.PARTIAL,
        "Partial, marked",
        providers=frozenset({"bedrock"}),
    ),
)
QUICK_FAULTS: tuple[str, ...] = tuple(f.name for f in FAULT_CASES if f.quick)


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


# Every wire format of the provider registry, as the matrix drives it: the path its
# base URL adds (OpenAI's ``/v1``), whether its events are numbered, and how the
# scripted server shapes its stream (the test kit's wire says). A new provider spec
# adds its column here.
def _provider(spec: ProviderSpec) -> Provider:
    wire = kit_wire(spec)
    return Provider(
        spec.name,
        urlsplit(spec.default_base_url).path.rstrip("/"),
        numbered=spec.numbered,
        lead=wire.scripted.lead,
        seams=wire.scripted.seams,
        whole_calls=wire.whole_calls,
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
        if not self.plan.calls or provider.whole_calls:
            return Shape(mid=lead + max(1, text // 2), drip=self.size.drip, lead=lead)
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
    plan = plan_turn(_only_turn(script), max_tokens, lambda: "call_matrix")
    return Payload(size, tool, script, max_tokens, plan)


def _only_turn(script: Script) -> ScriptTurn:
    return script.turns[0]


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
        if f.providers is None or p.name in f.providers
        for t in tool_values
        for s in chosen_sizes
    ]
