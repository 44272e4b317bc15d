"""The probe's report for a person (a table of at most 80 columns), for a program (JSON),
and the profile file it writes (TOML, as :func:`railings.profiles.load` reads it)."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from railings.probe.battery import Ask, budget
from railings.probe.findings import Findings
from railings.turn.profile import RULES, Profile

__all__ = ["WIDTH", "plan_lines", "table", "to_json", "to_toml"]

WIDTH = 80
_TOPIC, _SEEN = 12, 36  # the third column takes the rest


def plan_lines(asks: tuple[Ask, ...], where: str) -> list[str]:
    """What will be sent, before anything is: each request and its output limit."""
    lines = [f"{len(asks)} requests to {where}, at most {budget(asks)} output tokens in all:"]
    lines += [f"  {n}. {ask.label}, max_tokens {ask.max_tokens}" for n, ask in enumerate(asks, 1)]
    return lines


def _seconds(value: float | None) -> str:
    # Report only: coarse, so the same endpoint reads the same from run to run.
    if value is None:
        return "none"
    return "< 1 s" if value < 1 else f"{value:.1f} s"


def table(found: Findings) -> list[str]:
    """The report, one screen: what was seen, what railings will do, what it cost."""
    rest = WIDTH - _TOPIC - _SEEN - 2
    lines = [f"{'':<{_TOPIC}}{'seen':<{_SEEN}}  railings will", "-" * WIDTH]
    for row in found.rows:
        seen = textwrap.wrap(row.seen, _SEEN) or [""]
        does = textwrap.wrap(row.does, rest) or [""]
        for i in range(max(len(seen), len(does))):
            topic = row.topic if i == 0 else ""
            left = seen[i] if i < len(seen) else ""
            right = does[i] if i < len(does) else ""
            lines.append(f"{topic:<{_TOPIC}}{left:<{_SEEN}}  {right}".rstrip())
    lines.append("-" * WIDTH)
    timing = found.timing
    lines.append(
        f"timing      first byte {_seconds(timing.get('first_byte'))}, first content "
        f"{_seconds(timing.get('first_content'))}, longest gap "
        f"{_seconds(timing.get('largest_gap'))}"
    )
    lines.append(
        f"cost        {found.requests} requests, {found.input_tokens} input and "
        f"{found.output_tokens} output tokens (from usage)"
    )
    rules = found.profile.rules()
    lines.append(f"profile     {', '.join(_rule(found.profile, r) for r in rules) or 'no rule'}")
    lines += [f"!! {warning}" for warning in found.warnings]
    return lines


def _rule(profile: Profile, rule: str) -> str:
    if rule == "first_content":
        return f"first_content = {profile.first_content:g}"
    return f"{rule} = true"


def to_json(found: Findings, *, url: str, model: str, out: str | None) -> dict[str, Any]:
    """The report as one JSON object (``railings probe --json``)."""
    return {
        "url": url,
        "wire": found.profile.wire,
        "model": model,
        "findings": [{"topic": r.topic, "seen": r.seen, "railings": r.does} for r in found.rows],
        "warnings": found.warnings,
        "cost": {
            "requests": found.requests,
            "input_tokens": found.input_tokens,
            "output_tokens": found.output_tokens,
        },
        "timing_seconds": found.timing,
        "profile": {"file": out, "rules": found.profile.rules()},
    }


def _string(text: str) -> str:
    # A JSON string with only ASCII in it is a TOML basic string.
    return json.dumps(text, ensure_ascii=True)


def to_toml(profile: Profile) -> str:
    """``profile`` as a TOML file :func:`railings.profiles.load` reads back equal."""
    lines = [f"name = {_string(profile.name)}"]
    if profile.wire is not None:
        lines.append(f"wire = {_string(profile.wire)}")
    lines.append(f"base_urls = [{', '.join(_string(u) for u in profile.base_urls)}]")
    if profile.models:
        lines.append(f"models = [{', '.join(_string(m) for m in profile.models)}]")
    if profile.structural:
        lines.append("structural = true")
    if profile.first_content is not None:
        lines.append(f"first_content = {float(profile.first_content)!r}")
    if profile.misreports_length:
        lines.append("misreports_length = true")
    if profile.proof is not None:
        lines.append(f"proof = {_string(profile.proof)}")
    for rule in RULES:
        seen = profile.evidence.get(rule)
        if seen is None:
            continue
        lines += [
            "",
            f"[evidence.{rule}]",
            f"observed = {_string(seen.observed)}",
            f"seen = {seen.seen}",
            f"date = {_string(seen.date)}",
            f"source = {_string(seen.source)}",
        ]
    return "\n".join(lines) + "\n"
