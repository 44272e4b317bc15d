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

The resume column. A client that asks the provider to keep each response
(``railings+resume``: OpenAI Responses with ``background: true``) reads a broken stream
again, ``GET /v1/responses/{id}?stream=true&starting_after=N``, N the last event it read
whole, and the fault proxy applies the cell's fault to each of those streams as to the
first, counting their events from 1. A fault at event K thus costs every attempt the
event it breaks: each attempt *gains* g whole events, and the resume points are g - 1,
2g - 1, ... in the response's own numbering. A resume is an attempt of the retry
policy (``ATTEMPTS``), so the stream's N events are read to the proof when the attempts
reach it; past them the turn stays Partial, kept, never resent. The matrix puts K in
the middle of the content, so N <= 2K on the Responses wire and every size finishes in
two attempts (three where g = K - 1 and N > 2g, or where a reset lost events). Against
a real endpoint K is a guess and the stream longer: there the attempts may run out,
each having gained g events, and a Partial with those points is right.
Where a row is not listed, the resume column expects what the table above says.

======================  ==============================================================
fault class             expected outcome (railings+resume)
======================  ==============================================================
truncate_empty          RESUMED: cut after ``response.created`` (Empty, but its id is
                        known), once: read again after event 0, g = 1, points (0,)
truncate                RESUMED: each stream cut after K events: g = K
idle                    RESUMED: silent after K events of each stream: g = K, one idle
                        gap per resume
reset                   RESUMED: RST after K events of each stream: g <= K, since a
                        reset discards what the client had not read yet (timing, not
                        events); a Partial once every attempt was spent resuming is
                        right too
corrupt, corrupt_utf8   RESUMED: event K of each stream malformed: g = K - 1
reorder                 RESUMED: events K and K + 1 swapped in each stream: the
                        ``sequence_number`` gap at K + 1: g = K - 1
duplicate               RESUMED: event K of each stream repeated: g = K
drop_terminator         STALLED: the first stream ends cleanly after all the content
                        but the proof; each stream read again holds only the proof,
                        dropped again: no event, no progress. Resumed from the same
                        point (N - 2) until the attempts are spent, then Partial
error_event             PARTIAL, as above: the provider's error event is final (the
                        response failed on the server): never resumed
clean, drip, status_*,  as above: no stream broke, or the proof arrived first, or
close_after_terminator  none began (a status answers the POST: nothing was kept yet,
                        and the request is resent)
cut_mid_event,          (never run: no wire of these framings keeps responses) RESUMED,
corrupt_crc             g = K - 1; drop_proof_only: STALLED
======================  ==============================================================
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, replace

from railings.providers.base import Framing

__all__ = ["ATTEMPTS", "FAULT_CASES", "QUICK_FAULTS", "Expect", "FaultCase", "Resuming", "Shape"]

# The attempts of the retry policy every railings client of the matrix runs with: a
# resume is one of them, so the resume column's expectations count them.
ATTEMPTS = 4


class Expect(enum.Enum):
    """What a correct client makes of a stream hit by one fault class."""

    FULL = "full"
    RESENT = "resent"
    RETRIED = "retried"
    PARTIAL = "partial"
    RAISES = "raises"
    COUNTEREXAMPLE = "counterexample"
    LIMIT = "limit"
    RESUMED = "resumed"  # read again from the kept response: the full text, generated once
    STALLED = "stalled"  # resumed without progress until the attempts are spent: Partial


@dataclass(frozen=True, slots=True)
class Shape:
    """Where in a stream a fault acts: ``mid`` is an event in the middle of the content."""

    mid: int
    drip: int = 1
    lead: int = 1  # events before the first content delta (the provider's)


@dataclass(frozen=True, slots=True)
class Resuming:
    """A row of the resume column: what a client that resumes kept responses makes of the
    fault when the proxy applies it to every stream of the response (module docstring).
    ``gain(shape)``: the events each attempt reads whole (RESUMED), exactly, or at most
    when not ``exact`` (a reset)."""

    expect: Expect
    detail: str
    gain: Callable[[Shape], int] | None = None
    exact: bool = True
    error: str | None = None  # RESUMED: the class of the first attempt's interruption


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
    resuming: Resuming | None = None  # the resume column's row (None: as above)

    def when_resumed(self) -> FaultCase:
        """This case as the resume column expects it: a client that resumes kept
        responses is held to ``resuming`` where there is one."""
        row = self.resuming
        if row is None:
            return self
        return replace(self, expect=row.expect, detail=row.detail, error=row.error)


_RESUMED = "resumed: full text"
_STALLED = Resuming(Expect.STALLED, "Partial: resumed in vain")


def _resumed(
    gain: Callable[[Shape], int],
    *,
    detail: str = _RESUMED,
    exact: bool = True,
    error: str = "StreamInterrupted",
) -> Resuming:
    return Resuming(Expect.RESUMED, detail, gain, exact, error)


def _corrupt(name: str, kind: str, framings: frozenset[Framing] | None = None) -> FaultCase:
    """Event K of the stream malformed (``kind``: broken JSON, invalid UTF-8, a frame
    whose CRC does not match)."""
    return FaultCase(
        name,
        lambda s: f"corrupt:event={s.mid},kind={kind}",
        Expect.PARTIAL,
        "Partial: malformed",
        error="malformed_stream",
        framings=framings,
        resuming=_resumed(lambda s: s.mid - 1),
    )


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
        resuming=_resumed(lambda s: 1, detail="Empty: resumed, full text"),
    ),
    FaultCase(
        "truncate",
        lambda s: f"truncate:events={s.mid}",
        Expect.PARTIAL,
        "Partial, marked",
        quick=True,
        resuming=_resumed(lambda s: s.mid),
    ),
    FaultCase(
        "drop_terminator",
        lambda s: "drop_terminator",
        Expect.PARTIAL,
        "Partial, marked",
        quick=True,
        resuming=_STALLED,
    ),
    FaultCase(
        "idle",
        lambda s: f"idle:events={s.mid},seconds=30",
        Expect.PARTIAL,
        "Partial: IdleTimeout",
        error="IdleTimeout",
        idle=0.5,
        quick=True,
        resuming=_resumed(lambda s: s.mid, error="IdleTimeout"),
    ),
    FaultCase(
        "reorder",
        lambda s: f"reorder:event={s.mid}",
        Expect.LIMIT,
        "undetectable",
        resuming=_resumed(lambda s: s.mid - 1),
    ),
    FaultCase(
        "duplicate",
        lambda s: f"duplicate:event={s.mid}",
        Expect.LIMIT,
        "undetectable",
        resuming=_resumed(lambda s: s.mid),
    ),
    FaultCase(
        "reset",
        lambda s: f"reset:events={s.mid}",
        Expect.PARTIAL,
        "Partial, marked",
        resuming=_resumed(lambda s: s.mid, exact=False),
    ),
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
    _corrupt("corrupt", "json"),
    _corrupt("corrupt_utf8", "utf8"),
    # The framing's own faults, on the wires that are not SSE: half an event-stream
    # frame or NDJSON line, then a clean end; a frame whose CRC does not match; the
    # proof dropped alone, so Bedrock's ``metadata`` (usage) still arrives after it.
    FaultCase(
        "cut_mid_event",
        lambda s: f"cut_mid_event:event={s.mid}",
        Expect.PARTIAL,
        "Partial, marked",
        framings=frozenset({Framing.EVENTSTREAM, Framing.NDJSON}),
        resuming=_resumed(lambda s: s.mid - 1),
    ),
    _corrupt("corrupt_crc", "crc", frozenset({Framing.EVENTSTREAM})),
    FaultCase(
        "drop_proof_only",
        lambda s: "drop_terminator:rest=keep",
        Expect.PARTIAL,
        "Partial, marked",
        framings=frozenset({Framing.EVENTSTREAM}),
        resuming=_STALLED,
    ),
)
QUICK_FAULTS: tuple[str, ...] = tuple(f.name for f in FAULT_CASES if f.quick)
