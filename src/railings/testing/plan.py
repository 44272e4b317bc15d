"""What one response carries: a script turn with the output limit applied, and how each
wire spells its stop reason.

:func:`plan_turn` applies the token rule of :mod:`railings.testing.script` (one token
per 4 characters, output cut at exactly ``4 * max_tokens`` characters) and gives a
provider-neutral :class:`Plan`; the wire modules (``wire_openai``, ``wire_anthropic``,
``wire_responses``) render it. The stop-reason spellings are the inverse of each
provider spec's map (:mod:`railings.providers`), never a copy of their own.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from railings.providers import anthropic, openai_chat, openai_responses, stop_reason_on
from railings.providers.base import compact_json as compact  # the APIs' own JSON spelling
from railings.turn.repair import RepairPolicy, parse_arguments

if TYPE_CHECKING:
    from railings.testing.script import ScriptTurn

__all__ = [
    "TOKEN_CHARS",
    "Plan",
    "PlannedCall",
    "anthropic_stop_reason",
    "assistant_turns",
    "compact",
    "count_tokens",
    "openai_finish_reason",
    "pieces",
    "plan_turn",
    "positive_int",
    "responses_status",
]

TOKEN_CHARS = 4


def count_tokens(chars: int) -> int:
    """How many tokens ``chars`` characters count as: ``ceil(chars / 4)``."""
    return math.ceil(chars / TOKEN_CHARS)


def pieces(s: str, size: int) -> Iterator[str]:
    """``s`` in deltas of ``size`` characters, as a stream sends it."""
    for start in range(0, len(s), size):
        yield s[start : start + size]


def positive_int(value: object) -> bool:
    """True for an integer of at least 1 (an output limit a request may carry; a bool is
    not one, though Python counts it as an int)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """One call as the response sends it: ``arguments`` as far as the output limit let
    them go, ``complete`` False when it cut them; ``id`` the script's or a fresh one."""

    index: int
    id: str
    name: str
    arguments: str
    complete: bool
    type: str = "function"
    object_arguments: bool = False

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a server that parses the model's text sends them: the text
        parsed, and a cut one *repaired* (closed) the way such servers do -- which is
        exactly why an object on the wire proves nothing about completeness."""
        parsed = parse_arguments(self.arguments, RepairPolicy.REPAIR_ALLOWED)
        return {} if parsed is None else parsed.value


@dataclass(frozen=True, slots=True)
class Plan:
    """What one response carries once ``max_tokens`` has been applied (provider-neutral)."""

    thinking: str
    text: str
    calls: tuple[PlannedCall, ...]
    stop_reason: str  # Anthropic vocabulary, or a forced value sent verbatim
    output_tokens: int
    truncated: bool
    thinking_complete: bool = True
    text_complete: bool = True
    stop_reason_sent: bool = True  # False: the wire says null (quirk ``null_stop_reason``)

    def whole_calls(self) -> list[tuple[PlannedCall, dict[str, Any]]]:
        """The calls a wire that sends calls parsed can express, each with its arguments
        as an object (none: ``{}``): a call the output limit cut, or whose text is no
        JSON object, is left out."""
        out: list[tuple[PlannedCall, dict[str, Any]]] = []
        for call in self.calls:
            if not call.complete:
                continue
            try:
                args = json.loads(call.arguments) if call.arguments.strip() else {}
            except ValueError:
                continue
            if isinstance(args, dict):
                out.append((call, args))
        return out


def plan_turn(turn: ScriptTurn, max_tokens: int | None, new_id: Callable[[], str]) -> Plan:
    """Apply the token rule (module docstring) to ``turn``."""
    budget = None if max_tokens is None else max(0, max_tokens) * TOKEN_CHARS
    used = 0
    truncated = False

    def take(s: str) -> tuple[str, bool]:
        nonlocal used, truncated
        if budget is None or used + len(s) <= budget:
            used += len(s)
            return s, True
        room = budget - used
        used = budget
        truncated = True
        return s[:room], False

    thinking, thinking_done = take(turn.thinking)
    text, text_done = ("", False) if truncated else take(turn.text)
    calls: list[PlannedCall] = []
    for i, spec in enumerate(turn.tool_calls):
        if truncated or (budget is not None and used >= budget and spec.arguments):
            truncated = True  # no room left to start this call: it is never sent
            break
        args, done = take(spec.arguments)
        calls.append(
            PlannedCall(
                i, spec.id or new_id(), spec.name, args, done, spec.type, spec.object_arguments
            )
        )
    if turn.stop_reason is not None:
        stop = turn.stop_reason
    elif truncated:
        stop = turn.quirks.cut_stop_reason or "max_tokens"
    else:
        stop = "tool_use" if calls else "end_turn"
    return Plan(
        thinking,
        text,
        tuple(calls),
        stop,
        count_tokens(used),
        truncated,
        thinking_done,
        text_done,
        stop_reason_sent=not turn.quirks.null_stop_reason,
    )


def openai_finish_reason(stop: str) -> str:
    """The Chat Completions ``finish_reason`` for a stop reason of either vocabulary; an
    unknown one verbatim (the inverse of the spec's stop-reason map)."""
    return stop_reason_on(openai_chat.SPEC, stop) or stop


def responses_status(stop: str) -> tuple[str, str | None]:
    """The Responses API's ``(status, incomplete_details.reason)`` for a stop reason (the
    inverse of the spec's stop-reason map); an unknown one is an incomplete with that
    reason verbatim."""
    wire = stop_reason_on(openai_responses.SPEC, stop)
    if wire == openai_responses.COMPLETED_STATUS:
        return wire, None
    return "incomplete", wire or stop


def _assistant_item(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    if item.get("role") == "assistant":
        return True
    kind = item.get("type")
    return isinstance(kind, str) and (
        kind in ("reasoning", "mcp_approval_request") or kind.endswith("_call")
    )


def assistant_turns(items: Any) -> int:
    """How many assistant turns a Responses ``input`` holds: runs of consecutive
    assistant items (module docstring). A string ``input`` is one user message."""
    if not isinstance(items, list):
        return 0
    turns, inside = 0, False
    for item in items:
        assistant = _assistant_item(item)
        if assistant and not inside:
            turns += 1
        inside = assistant
    return turns


def anthropic_stop_reason(stop: str) -> str:
    """The Messages API ``stop_reason`` for a stop reason of either vocabulary; an unknown
    one verbatim (the inverse of the spec's stop-reason map)."""
    return stop_reason_on(anthropic.SPEC, stop) or stop
