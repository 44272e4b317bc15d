"""What the battery's answers show, what railings does with it, and the profile it
supports.

Each finding is decided from the turns railings' reader assembled (its termination,
stop reason and where it came from, usage) and the verdicts it gave, never from the
wire read again. The profile sets only what the evidence supports: ``structural`` when
every complete answer sent a stop reason before its proof, ``first_content`` when
keep-alives came before the first event; a rule the evidence argues against is
written as evidence without the rule ("not set: ..."); nothing else, ever. Where the
proof carries the stop reason itself (Responses' ``response.completed``, Gemini's
``finishReason``, Bedrock's ``messageStop``), ``structural`` could change no verdict:
the report says so, and the file holds neither the rule nor evidence about it (a
profile's evidence is what was observed to bear on a rule, and nothing observed could
bear on this one).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from railings.probe.send import KEEPALIVES, Observation
from railings.providers import spec
from railings.stops import Stop, StopSource
from railings.turn.model import Outcome, Termination, UsageSource
from railings.turn.profile import STOP_THEN_USAGE, Evidence, Profile

Noted = Callable[[str, int], Evidence]  # what was observed, how many times -> the evidence

__all__ = ["NO_PROOF", "Finding", "Findings", "findings", "profile_name"]

NO_PROOF = "no termination proof: railings will call every answer interrupted"
# The keep-alives' wait is stretched this much, and never below the floor: a queue that
# made one probe wait a second can make a busy hour's request wait far longer.
FIRST_CONTENT_FLOOR = 600.0
FIRST_CONTENT_FACTOR = 4
# What one probe may ever write: a server that waits longer before a keep-alive cannot
# stretch the clock further (30 minutes: the longest wait a provider documents closing).
FIRST_CONTENT_CEILING = 1800.0


def _words(provider: str) -> tuple[str, str]:
    """The wire's proof and what its own API sends before it, in its own words
    (``[DONE]``, ``finish_reason``), from its spec's ``a `finish_reason``` (empty where
    the proof carries the stop reason); a proof that is a field's last value is named by
    the field (Gemini's ``finishReason``, Ollama's ``done``)."""
    proof = spec(provider).proof
    names = proof.data | proof.events | proof.types or (proof.fields & proof.markers)
    return min(names or proof.fields), proof.structure.replace("`", "")[2:]


@dataclass(frozen=True, slots=True)
class Finding:
    """One row of the report: what was ``seen``, and what railings ``does`` with it."""

    topic: str
    seen: str
    does: str


@dataclass(slots=True)
class Findings:
    """Everything the battery showed, the profile it supports and what it cost."""

    rows: list[Finding]
    profile: Profile
    warnings: list[str] = field(default_factory=list)
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    timing: dict[str, float | None] = field(default_factory=dict)


def profile_name(url: str) -> str:
    """A profile's (and its file's) name from the URL's host: ``api.example.com`` ->
    ``api-example-com``."""
    host = urlsplit(url).hostname or "endpoint"
    return re.sub(r"[^A-Za-z0-9]+", "-", host).strip("-") or "endpoint"


def _public(url: str) -> str:
    """``url`` as a profile file may keep it: without the user name and password of its
    userinfo, which are a credential the client sends (and a profile matching only URLs
    that carry it would match nothing else)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def findings(
    seen: list[Observation], *, provider: str, url: str, base_url: str, today: str
) -> Findings:
    """The findings of one run of the battery against ``url`` (module docstring)."""
    proof, stop = _words(provider)
    url, base_url = _public(url), _public(base_url)
    source = f"railings probe {url}"

    def noted(observed: str, times: int) -> Evidence:
        """An entry of this run's evidence: its date and source are the run's."""
        return Evidence(observed=observed, seen=times, date=today, source=source)

    rows: list[Finding] = []
    warnings: list[str] = []
    evidence: dict[str, Evidence] = {}
    total = len(seen)
    complete = [o for o in seen if o.turn.termination is Termination.CLEAN]
    # Complete with a stop reason after the last content: as a structural profile judges.
    said = [o for o in complete if o.structured]

    # Never the wire's proof, and every answer that asked for usage ended the same way
    # instead: the one ending a profile may name (one that did not ask has no usage).
    asked = [o for o in seen if o.ask.include_usage]
    named = bool(asked) and all(o.named_ending for o in asked)
    if not complete and named:
        rows.append(
            Finding(
                "proof",
                f"no {proof}; {stop}, usage, close on {len(asked)} of {len(asked)}",
                "profile: that ending is the proof",
            )
        )
        evidence["proof"] = noted(
            f"no {proof} on any answer; every one that asked for usage ended "
            f"with a {stop}, then a usage report, then the server's clean close",
            len(asked),
        )
    elif not complete:
        warnings.append(NO_PROOF)
        evidence["structural"] = noted(
            f"not set: none of {total} answers ended with {proof}, and no rule "
            "can make an answer without its proof complete",
            total,
        )
        rows.append(
            Finding("proof", f"no {proof} on any of {total}", "call every answer interrupted")
        )
    else:
        does = "end a turn only on it"
        if len(complete) < total:
            does = f"call the {total - len(complete)} without it interrupted"
        rows.append(Finding("proof", f"{proof} on {len(complete)} of {total}", does))
    carried = not spec(provider).proof.structure  # the proof is the stop reason
    structural = not carried and bool(complete) and len(said) == len(complete)
    if carried and complete:
        rows.append(
            Finding(
                "stop reason",
                f"carried by {proof}: {len(said)} of {len(complete)}",
                "no rule: the proof is the stop reason",
            )
        )
    elif structural:
        rows.append(
            Finding(
                "stop reason",
                f"{stop} before {proof}: {len(said)} of {len(complete)}",
                f"profile: {proof} alone is no proof",
            )
        )
        evidence["structural"] = noted(
            f"{stop} before {proof} on every complete answer",
            len(said),
        )
    elif complete:
        missing = len(complete) - len(said)
        rows.append(
            Finding(
                "stop reason",
                f"{stop} missing on {missing} of {len(complete)}",
                f"take {proof} alone as the proof (no rule)",
            )
        )
        evidence["structural"] = noted(
            f"not set: {missing} of {len(complete)} complete answers ended with "
            f"{proof} and no {stop}",
            len(complete),
        )

    for obs in (o for o in seen if o.ask.cut):
        rows.append(_cut(obs, evidence, noted))
    rows.append(_usage(seen, provider))
    first_content = _keepalives(seen, rows, evidence, noted, provider)
    rows.extend(_http(seen, tls=url.startswith("https://")))
    profile = Profile(
        name=profile_name(url),
        wire=provider,
        base_urls=(base_url,),
        structural=structural,
        first_content=first_content,
        proof=STOP_THEN_USAGE if "proof" in evidence else None,
        evidence=evidence,
    )
    return Findings(
        rows=rows,
        profile=profile,
        warnings=warnings,
        requests=total,
        input_tokens=sum(_reported_input(o) for o in seen),
        output_tokens=sum(o.turn.peak_output_tokens or 0 for o in seen),
        timing={
            "first_byte": max(o.first_byte for o in seen),
            "first_content": max((o.first_content or 0.0) for o in seen),
            "largest_gap": max(o.largest_gap for o in seen),
        },
    )


def _cut(obs: Observation, evidence: dict[str, Evidence], noted: Noted) -> Finding:
    turn, limit = obs.turn, obs.ask.max_tokens
    what = "call cut" if obs.ask.cuts_call else "text cut"
    said = turn.stop_reason_wire if turn.stop_reason_source is StopSource.WIRE else None
    at_cap = (turn.peak_output_tokens or 0) >= limit
    seen = f"stop reason {said or 'none'}, usage {turn.peak_output_tokens or 'none'} of {limit}"
    if turn.outcome is not Outcome.COMPLETE:
        return Finding(what, seen + ", no proof", "reject every call: interrupted")
    if not obs.ask.cuts_call:
        does = "mark it truncated" if turn.truncated else "see no cut (nothing to gate)"
        return Finding(what, seen, does)
    if not turn.tool_calls:
        return Finding(what, seen + ", no call", "nothing to gate (no call came)")
    refused = all(not v.execute for v in obs.verdicts)
    if said is not None and turn.stop_reason != Stop.MAX_TOKENS and at_cap:
        # vLLM's quirk: the billed output is the evidence railings goes by.
        evidence["misreports_length"] = noted(
            f"not set: a call the output limit cut was reported as {said}; "
            "railings reads the cut from usage at the limit",
            1,
        )
        return Finding(what, seen, "refuse the call: usage at the limit" if refused else "RUN IT")
    return Finding(what, seen, "refuse the cut call" if refused else "RUN THE CUT CALL")


def _reported(obs: Observation) -> bool:
    """Did the answer report usage (either count; an estimate is not a report)?"""
    usage = obs.turn.usage
    return UsageSource.REPORTED in (usage.input_source, usage.output_source)


def _reported_input(obs: Observation) -> int:
    usage = obs.turn.usage
    if usage.input_source is not UsageSource.REPORTED:
        return 0  # what the probe spent is what the endpoint reported, never a guess
    return usage.input_tokens or 0


def _usage(seen: list[Observation], provider: str) -> Finding:
    # A wire that asks for usage (Chat's stream_options) is asked once without asking.
    chat = spec(provider).asks_for_usage
    asked = [o for o in seen if o.ask.include_usage or not chat]
    sent = sum(1 for o in asked if _reported(o))
    text = f"on {sent} of {len(asked)}"
    if chat:
        unasked = [o for o in seen if not o.ask.include_usage]
        alone = sum(1 for o in unasked if _reported(o))
        text = f"on {sent} of {len(asked)} asked, {alone} of {len(unasked)} unasked"
    cut = [o for o in seen if o.ask.cut]
    capped = sum(1 for o in cut if (o.turn.peak_output_tokens or 0) >= o.ask.max_tokens)
    text += f"; at the limit on {capped} of {len(cut)} cut"
    does = "read usage at the limit as truncation"
    if capped < len(cut):
        does = "go by the stop reason where usage is short"
    return Finding("usage", text, does)


def _keepalives(
    seen: list[Observation],
    rows: list[Finding],
    evidence: dict[str, Evidence],
    noted: Noted,
    provider: str,
) -> float | None:
    framing = spec(provider).framing
    kind = KEEPALIVES.get(framing)
    if kind is None:  # nothing to count, so nothing is invented
        none = f"not applicable: {framing.value} frames carry none"
        rows.append(Finding("keep-alives", none, "keep its clocks (no rule)"))
        return None
    comments = {p: sum(o.comments[p] for o in seen) for p in seen[0].comments}
    pings = {p: sum(o.pings[p] for o in seen) for p in seen[0].pings}
    shown = [f"{kind} {p}: {n}" for p, n in comments.items() if n]
    shown += [f"pings {p}: {n}" for p, n in pings.items() if n]
    waited = [o for o in seen if o.wait_before_first_event is not None]
    if not waited:
        does = "keep its clocks (no rule)"
        rows.append(Finding("keep-alives", "; ".join(shown) or "none", does))
        return None
    wait = max(o.wait_before_first_event or 0.0 for o in waited)
    first_content = min(
        FIRST_CONTENT_CEILING, max(FIRST_CONTENT_FLOOR, round(FIRST_CONTENT_FACTOR * wait))
    )
    evidence["first_content"] = noted(
        f"keep-alives before the first event on {len(waited)} of {len(seen)} "
        f"answers, the longest wait {wait:.1f} s",
        len(waited),
    )
    does = f"profile: wait {first_content:g} s for the first content"
    rows.append(Finding("keep-alives", "; ".join(shown), does))
    return float(first_content)


def _http(seen: list[Observation], *, tls: bool) -> list[Finding]:
    versions = ", ".join(sorted({o.http_version for o in seen}))
    if not tls:
        versions += " (HTTP/2 needs TLS)"
    codings = sorted({o.content_encoding for o in seen})
    offered = seen[0].accept_encoding or "nothing"
    return [
        Finding("HTTP", versions, "use it (no rule)"),
        Finding("coding", f"{', '.join(codings)} (offered {offered})", "decode it (no rule)"),
    ]
