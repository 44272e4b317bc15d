"""The acceptance rule, cell by cell: an :class:`Observation` against the expectation table.

Two rule books. The railings client is held to the whole rule (exact text,
attempt counts, the error it names, what the spy ran); its failures decide
the exit code. An official SDK has no notion of proof, so it is asked one
question: *did it notice?* -- it raised, or it handed
the application a result without a word. Its cells are informative.

The reference is what the server sent: the scripted server's own plan (after
``max_tokens``), or, against a real endpoint, the upstream body the proxy read
(decoded once by the core reader; a kept response read again, its streams spliced).
A client that resumes kept responses is held to the resume column of the table.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from railings.matrix.cells import ATTEMPTS, Cell, Expect, Shape
from railings.matrix.observation import Observation
from railings.testing.script import Plan
from railings.turn.model import Turn

__all__ = ["Judgement", "RefCall", "Reference", "Status", "judge_railings", "judge_sdk"]


class Status(enum.Enum):
    """A cell's verdict: PASS, FAIL, or LIMIT (a fault the wire format cannot show)."""

    PASS = "pass"
    FAIL = "fail"
    LIMIT = "limit"  # the wire format cannot show this fault; reported, never a failure


@dataclass(frozen=True, slots=True)
class RefCall:
    """One tool call the server sent: its name, its argument text, and whether it was complete
    (not cut by ``max_tokens``)."""

    name: str
    arguments: str
    complete: bool


@dataclass(frozen=True, slots=True)
class Reference:
    """What the server sent for this cell (before the fault)."""

    text: str
    calls: tuple[RefCall, ...]
    stop_reason: str | None  # Anthropic vocabulary
    truncated: bool

    @classmethod
    def from_plan(cls, plan: Plan, *, whole_calls: bool = False) -> Reference:
        """The reference of the embedded server: its own plan, after ``max_tokens``. On a
        wire that sends calls whole (``whole_calls``) the cut call is never sent, and the
        calls of a truncated turn are not complete: a server-parsed call proves nothing
        about its own end (it may have been repaired), so a correct dispatch runs none."""
        return cls(
            plan.text,
            tuple(
                RefCall(c.name, c.arguments, c.complete and not (whole_calls and plan.truncated))
                for c in plan.calls
                if c.complete or not whole_calls
            ),
            plan.stop_reason,
            plan.truncated,
        )

    @classmethod
    def from_turn(cls, turn: Turn) -> Reference:
        """The reference of a real endpoint: its body as the core reader assembled it; a call is
        complete when its arguments closed and parsed."""
        calls = tuple(
            RefCall(c.name, c.raw_arguments, c.arguments is not None and c.closed)
            for c in turn.tool_calls
        )
        return cls(turn.text, calls, turn.stop_reason, turn.truncated)

    @property
    def complete_commands(self) -> list[str]:
        """The commands a correct dispatch runs: those of complete calls only."""
        out: list[str] = []
        for call in self.calls:
            if call.complete:
                try:
                    command = json.loads(call.arguments).get("command")
                except (ValueError, AttributeError):
                    continue
                if isinstance(command, str):
                    out.append(command)
        return out

    @property
    def size(self) -> int:
        """Characters of content sent: the text and every call's arguments."""
        return len(self.text) + sum(len(c.arguments) for c in self.calls)


@dataclass(slots=True)
class Judgement:
    """One cell judged: its status, a label for the table and each broken rule, in words."""

    status: Status
    label: str  # a few words for the table
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The judgement for ``--json``: ``status``, ``label``, ``problems``."""
        return {"status": self.status.value, "label": self.label, "problems": self.problems}


@dataclass(frozen=True, slots=True)
class ProxyFacts:
    """What the fault proxy saw: requests, and what the fault did to each."""

    requests: int
    actions: tuple[str, ...]

    @property
    def fault_acted(self) -> bool:
        return bool(self.actions) and not self.actions[0].startswith("passed through")


# -- content ---------------------------------------------------------------------------------


def _same(obs: Observation, ref: Reference) -> bool:
    return obs.text == ref.text and [a for _, a in obs.calls] == [c.arguments for c in ref.calls]


def _prefix(obs: Observation, ref: Reference) -> bool:
    """Everything the client has is the start of what was sent (nothing made up)."""
    if not ref.text.startswith(obs.text) or len(obs.calls) > len(ref.calls):
        return False
    return all(c.arguments.startswith(a) for (_, a), c in zip(obs.calls, ref.calls, strict=False))


def _share(obs: Observation, ref: Reference) -> str:
    got = len(obs.text) + sum(len(a) for _, a in obs.calls)
    if got == 0:
        return "empty"
    if _same(obs, ref):
        return "all content"
    if _prefix(obs, ref):
        return f"{100 * got // max(ref.size, 1)}% of the content"
    return "altered content"


def _executed_only_complete(obs: Observation, ref: Reference, problems: list[str]) -> None:
    """The rule that never bends: the spy ran nothing but complete calls, each once."""
    allowed = ref.complete_commands
    for command in obs.executed or ():
        if command in allowed:
            allowed.remove(command)
        else:
            problems.append(f"EXECUTED a cut or unfinished tool call ({len(command)} chars)")


# -- railings --------------------------------------------------------------------------------


def judge_railings(
    cell: Cell,
    obs: Observation,
    ref: Reference | None,
    proxy: ProxyFacts,
    *,
    known_shape: bool = True,
    shape: Shape | None = None,
) -> Judgement:
    """The whole rule (module docstring of :mod:`railings.matrix.cases`); ``shape`` is
    where the cell's fault acted (the resume column's points are counted from it).

    ``known_shape`` False (a real endpoint): where the middle of the content is, is a
    guess, so a mid-stream fault may land before any content. Then every attempt is
    Empty, is resent, and the retries end in a typed error: detected too."""
    case, tool = cell.fault, cell.tool
    problems: list[str] = []
    expect = case.expect
    if ref is not None:
        _executed_only_complete(obs, ref, problems)
    if case.name != "clean" and not proxy.fault_acted:
        acted = ", ".join(proxy.actions) or "nothing"
        problems.append(f"the fault did not act (proxy: {acted})")

    if expect is Expect.RAISES:
        if obs.returned:
            problems.append(f"returned a {obs.outcome} turn instead of raising {case.error}")
        elif case.error not in obs.lineage:
            problems.append(f"raised {obs.raised}, expected {case.error}")
        return _verdict(problems, f"raises {case.error}")

    if not obs.returned:
        if (
            not known_shape
            and expect in (Expect.PARTIAL, Expect.RESUMED, Expect.STALLED)
            and "RemoteError" in obs.lineage
            and not obs.executed
        ):
            return _verdict(problems, f"Empty each time: {obs.raised}")
        problems.append(f"raised {obs.raised}: {obs.message}")
        return _verdict(problems, "raised")

    if expect is Expect.LIMIT:
        return _limit(obs, ref, problems, numbered=cell.provider.numbered)

    if expect is Expect.PARTIAL:
        _kept_partial(obs, ref, problems)
        if obs.attempts != 1:
            problems.append(f"{obs.attempts} attempts: a Partial is never resent")
        if case.error and case.error not in (obs.error_kind, *obs.interruption):
            problems.append(
                f"ended as {obs.error_kind} / {_first(obs.interruption)}, expected {case.error}"
            )
        return _verdict(problems, case.detail)

    if expect in (Expect.RESUMED, Expect.STALLED):
        return _resumes(cell, obs, ref, problems, shape=shape, known_shape=known_shape)

    # FULL, RESENT, RETRIED, COUNTEREXAMPLE: the whole answer, proven.
    _whole(obs, ref, problems, tool=tool)
    wanted = 2 if expect in (Expect.RESENT, Expect.RETRIED) else 1
    if obs.attempts != wanted:
        problems.append(f"{obs.attempts} attempts, expected {wanted}")
    if (
        expect in (Expect.RESENT, Expect.RETRIED)
        and case.error
        and not (obs.retried and case.error in obs.retried[0])
    ):
        problems.append(
            f"the first attempt failed with {[r[0] for r in obs.retried]}, expected {case.error}"
        )
    if expect is Expect.COUNTEREXAMPLE and not any(
        "after the terminator" in a for a in proxy.actions
    ):
        problems.append("the connection did not break after the proof")
    return _verdict(problems, case.detail)


def _whole(obs: Observation, ref: Reference | None, problems: list[str], *, tool: bool) -> None:
    """The whole answer, proven: complete, exactly what was sent, the complete calls run."""
    if obs.outcome != "complete":
        problems.append(f"outcome {obs.outcome}: {obs.message}")
    if ref is not None and not _same(obs, ref):
        problems.append(f"returned {_share(obs, ref)}, not the full text")
    if ref is not None and obs.truncated != ref.truncated:
        problems.append(f"truncated={obs.truncated}, the server sent truncated={ref.truncated}")
    if tool and ref is not None and sorted(obs.executed or ()) != sorted(ref.complete_commands):
        problems.append(
            f"the spy ran {len(obs.executed or ())} call(s), expected the "
            f"{len(ref.complete_commands)} complete one(s)"
        )


def _kept_partial(obs: Observation, ref: Reference | None, problems: list[str]) -> None:
    """A Partial kept as-is: marked interrupted, nothing in it made up, no tool run."""
    if obs.outcome != "partial" or not obs.interrupted:
        problems.append(f"outcome {obs.outcome}, expected a Partial marked interrupted")
    if ref is not None and not _prefix(obs, ref):
        problems.append("the partial content is not what was sent")
    if obs.executed:
        problems.append("a tool ran from an interrupted turn")


def _resumes(
    cell: Cell,
    obs: Observation,
    ref: Reference | None,
    problems: list[str],
    *,
    shape: Shape | None,
    known_shape: bool,
) -> Judgement:
    """The resume column (:mod:`railings.matrix.cases`): each attempt after the first read
    the kept response again (none a resend), generated once. RESUMED: the full text, the
    points g - 1, 2g - 1, ...; Partial only with the attempts spent where the stream may
    not fit them (a real endpoint, a reset). STALLED: one point, the attempts spent."""
    case, row, points = cell.fault, cell.fault.resuming, obs.resumed
    if not points:
        problems.append(f"never resumed: {obs.attempts} attempt(s), outcome {obs.outcome}")
    elif obs.attempts != len(points) + 1:
        problems.append(f"{obs.attempts} attempts for {len(points)} resume(s): a resend")
    if obs.generations not in (None, 1):
        problems.append(f"generated {obs.generations} times: a kept response was generated again")
    if case.error and points and not (obs.retried and case.error in obs.retried[0]):
        broke = obs.retried[0][0] if obs.retried else None
        problems.append(f"the first attempt broke with {broke}, expected {case.error}")
    if case.expect is Expect.STALLED:
        _kept_partial(obs, ref, problems)
        if len(set(points)) > 1:
            problems.append(f"resumed after events {points}: progress, yet the proof is dropped")
        if obs.attempts != ATTEMPTS:
            problems.append(f"{obs.attempts} attempts, expected all {ATTEMPTS} spent resuming")
        return _verdict(problems, case.detail)
    if row is not None and row.gain is not None and shape is not None and points:
        gain = row.gain(shape)
        if not _follows(points, gain, exact=row.exact):
            each = "" if row.exact else "at most "
            problems.append(f"resumed after events {points}: each attempt gains {each}{gain}")
    if obs.outcome == "complete":
        _whole(obs, ref, problems, tool=cell.tool)
        return _verdict(problems, case.detail)
    _kept_partial(obs, ref, problems)
    if known_shape and (row is None or row.exact):
        problems.append(f"Partial after resumes at events {points}: the stream fits the attempts")
    elif obs.attempts != ATTEMPTS:
        problems.append(f"Partial after {obs.attempts} attempts of {ATTEMPTS}")
    return _verdict(problems, f"Partial: resumed {len(points)}x, attempts spent")


def _follows(points: list[int], gain: int, *, exact: bool) -> bool:
    """Are ``points`` those of attempts that each read ``gain`` events whole (or at most)?"""
    if exact:
        return points == [(n + 1) * gain - 1 for n in range(len(points))]
    steps = [b - a for a, b in zip([-1, *points], points, strict=False)]
    return all(0 <= step <= gain for step in steps)


def _first(names: list[str]) -> str | None:
    return names[0] if names else None


def _limit(
    obs: Observation, ref: Reference | None, problems: list[str], *, numbered: bool
) -> Judgement:
    """Reorder / duplicate. Returning exactly what was sent, or noticing, is right
    everywhere; returning altered content is the wire's limit, unless the wire numbers
    its events (then it is a failure)."""
    if problems:
        return _verdict(problems, "failed")
    if obs.outcome != "complete":
        return Judgement(Status.PASS, "detected")
    if ref is not None and _same(obs, ref):
        return Judgement(Status.PASS, "full text")
    if numbered:
        return Judgement(
            Status.FAIL,
            "altered content",
            ["complete with altered content, though the wire numbers its events"],
        )
    return Judgement(Status.LIMIT, "undetectable", ["complete, proof seen, content differs"])


def _verdict(problems: list[str], label: str) -> Judgement:
    if problems:
        return Judgement(Status.FAIL, problems[0], problems)
    return Judgement(Status.PASS, label)


# -- the official SDKs -----------------------------------------------------------------------


def judge_sdk(cell: Cell, obs: Observation, ref: Reference | None, proxy: ProxyFacts) -> Judgement:
    """Did the SDK notice? (Informative: never the exit code.)"""
    expect = cell.fault.expect
    if proxy.requests == 0:
        return Judgement(Status.FAIL, f"{obs.raised} before any request", [obs.message])
    if not obs.returned:
        # The label is the class the application sees: raising is how an SDK notices.
        name = (obs.raised or "?").rpartition(".")[2]
        if expect in (Expect.FULL, Expect.RETRIED, Expect.COUNTEREXAMPLE):
            lost = "a complete answer lost" if expect is Expect.COUNTEREXAMPLE else obs.message
            return Judgement(Status.FAIL, name, [f"raised {obs.raised}: {lost}"])
        return Judgement(Status.PASS, name, [f"raised {obs.raised}"])
    share = _share(obs, ref) if ref is not None else "a result"
    if obs.notes.get("error_event") and expect in (Expect.PARTIAL, Expect.RAISES):
        # Not silent: the application got a typed error event (and must look for it).
        return Judgement(
            Status.PASS,
            f"yielded {obs.notes['error_event']} event",
            [f"returned {share} and an error event, without raising"],
        )
    if expect is Expect.LIMIT:
        if share == "all content":
            return Judgement(Status.PASS, "full text")
        if cell.provider.numbered:
            return Judgement(
                Status.FAIL,
                "UNDETECTED: altered content",
                ["returned altered content, though the wire numbers its events"],
            )
        return Judgement(Status.LIMIT, "undetectable")
    if expect in (Expect.PARTIAL, Expect.RAISES) or share != "all content":
        return Judgement(
            Status.FAIL, f"UNDETECTED: {_kind(share)}", [f"returned {share} without a word"]
        )
    return Judgement(Status.PASS, "full text")


def _kind(share: str) -> str:
    """The table's words for what an SDK returned: exact shares go to the JSON."""
    if share == "all content":
        return "all content, no proof"
    return "partial content" if share.endswith("% of the content") else share
