"""Stop reasons: one normalized vocabulary, derivation when the wire is silent, and the
truncation predicate with its provider exemption table.

Normalization (wire spelling -> railings):

============================================  ===============
``length``, ``max_tokens``, ``max_output_tokens``  ``max_tokens``
``stop``, ``end_turn``                              ``end_turn``
``tool_calls``, ``function_call``, ``tool_use``     ``tool_use``
``content_filter``, ``stop_sequence``,              kept as is
``refusal``, ``pause_turn``
``completed`` (Responses API status)               ``tool_use`` if the turn has tool
                                                    calls, else ``end_turn``
anything else                                       lowercased as is
============================================  ===============

A turn that asks the client to act is never ``end_turn``: a natural stop (``stop``,
``end_turn``, ``completed``) in a turn with local calls is ``tool_use`` -- some
OpenAI-compatible servers send ``finish_reason: "stop"`` beside their tool calls, and
an agent told "finished" would leave the model waiting for results.
"""

from __future__ import annotations

from collections.abc import Set

__all__ = [
    "DEFAULT_EXEMPTIONS",
    "MAX_TOKENS",
    "derive_stop_reason",
    "is_truncated",
    "normalize_stop_reason",
]

MAX_TOKENS = "max_tokens"

_TABLE: dict[str, str] = {
    "length": MAX_TOKENS,
    "max_tokens": MAX_TOKENS,
    "max_output_tokens": MAX_TOKENS,
    "stop": "end_turn",
    "end_turn": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "tool_use": "tool_use",
    "content_filter": "content_filter",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "pause_turn": "pause_turn",
}

# Providers known to report a length stop on turns that ended normally. The truncation
# gate stays open for them. Deliberately empty: an entry needs a caught repeat offender,
# not a suspicion. Callers pass their own set to is_truncated() to extend it.
DEFAULT_EXEMPTIONS: frozenset[str] = frozenset()


def normalize_stop_reason(wire: str, *, saw_tool_use: bool = False) -> str:
    """The railings spelling of a wire stop reason (see the module table)."""
    lowered = wire.strip().lower()
    if lowered == "completed":
        return "tool_use" if saw_tool_use else "end_turn"
    normalized = _TABLE.get(lowered, lowered)
    if normalized == "end_turn" and saw_tool_use:
        return "tool_use"  # the turn asks the client to act (module docstring)
    return normalized


def derive_stop_reason(
    *, saw_tool_use: bool, output_tokens: int | None, max_tokens: int | None
) -> str:
    """What this layer can prove when the wire said nothing (the derivation rule, in order).

    Billed output at or above the requested limit is hard evidence of truncation,
    since providers stop exactly at the limit; then a tool call means ``tool_use``;
    else ``end_turn``. A turn that ends naturally exactly at the limit is reported as
    ``max_tokens``: harmless, because the gate only rejects calls whose arguments
    do not parse.
    """
    if max_tokens and max_tokens > 0 and output_tokens is not None and output_tokens >= max_tokens:
        return MAX_TOKENS
    if saw_tool_use:
        return "tool_use"
    return "end_turn"


def is_truncated(
    stop_reason: str | None, service: str | None, exemptions: Set[str] = DEFAULT_EXEMPTIONS
) -> bool:
    """True when the turn was cut by the output limit and its service is not exempt."""
    if stop_reason != MAX_TOKENS:
        return False
    return not (service is not None and service.lower() in exemptions)
