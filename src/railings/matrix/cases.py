"""The fault classes of the matrix and what a correct client makes of each.

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

The matrix's cells (:mod:`railings.matrix.cells`) pair each case with a size, a
provider and the tool half of the grid; a case with ``framings`` runs only on the
wires of those framings (the event-stream and NDJSON faults).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from railings.providers.base import Framing

__all__ = ["FAULT_CASES", "QUICK_FAULTS", "Expect", "FaultCase", "Shape"]


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
    framings: frozenset[Framing] | None = None  # the framings it applies to (None: all)


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
        framings=frozenset({Framing.EVENTSTREAM, Framing.NDJSON}),
    ),
    FaultCase(
        "corrupt_crc",
        lambda s: f"corrupt:event={s.mid},kind=crc",
        Expect.PARTIAL,
        "Partial: malformed",
        error="malformed_stream",
        framings=frozenset({Framing.EVENTSTREAM}),
    ),
    FaultCase(
        "drop_proof_only",
        lambda s: "drop_terminator:rest=keep",
        Expect.PARTIAL,
        "Partial, marked",
        framings=frozenset({Framing.EVENTSTREAM}),
    ),
)
QUICK_FAULTS: tuple[str, ...] = tuple(f.name for f in FAULT_CASES if f.quick)
