"""Stop reasons: one normalized vocabulary, derivation when the wire is silent, and the
truncation predicate with its provider exemption table.

Normalization (wire spelling -> railings):

============================================  ===============
``length``, ``max_tokens``, ``max_output_tokens``  ``max_tokens``
``stop``, ``end_turn``                              ``end_turn``
``tool_calls``, ``function_call``, ``tool_use``     ``tool_use``
``content_filter``, ``stop_sequence``,              kept as is
``refusal``, ``pause_turn``
``model_context_window_exceeded`` (Bedrock,         ``max_tokens``
Anthropic)
Gemini ``SAFETY``, ``RECITATION``, ``LANGUAGE``,     ``content_filter``
``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII``,
``IMAGE_*``, ``JAILBREAK``; Bedrock
``guardrail_intervened``, ``content_filtered``
Gemini ``MALFORMED_FUNCTION_CALL``,                  ``malformed_tool_use``
``UNEXPECTED_TOOL_CALL``, ``TOO_MANY_TOOL_CALLS``;
Bedrock ``malformed_tool_use``
``completed`` (Responses API status)               ``tool_use`` if the turn has tool
                                                    calls, else ``end_turn``
anything else (Gemini ``OTHER``, Ollama             lowercased as is
``load`` / ``unload``)
============================================  ===============

Spellings are matched case-insensitively (Gemini's are upper case).

``model_context_window_exceeded`` is an output-limit cut: the model stopped because
the context window filled while it was writing (AWS: "the model stopped generating
because it reached the context window limit"; Anthropic documents the same stop
reason as "the response reached the model's context window limit" and tells clients
to handle it as they handle ``max_tokens``). A call in flight was cut exactly as
``max_tokens`` cuts one, so the truncation gate applies to it.

``malformed_tool_use`` says the model tried to call a tool and wrote the call wrong
(Bedrock; Gemini's ``MALFORMED_FUNCTION_CALL``): no call of such a turn is executed,
whatever its arguments look like (:mod:`railings.turn.verdict`).

A turn that asks the client to act is never ``end_turn``: a natural stop (``stop``,
``end_turn``, ``completed``) in a turn with local calls is ``tool_use`` -- some
OpenAI-compatible servers send ``finish_reason: "stop"`` beside their tool calls, and
an agent told "finished" would leave the model waiting for results.
"""

from __future__ import annotations

from collections.abc import Set
from enum import StrEnum

from railings.turn.limit import reached_limit

__all__ = [
    "DEFAULT_EXEMPTIONS",
    "MAX_TOKENS",
    "Stop",
    "StopSource",
    "derive_stop_reason",
    "is_truncated",
    "normalize_stop_reason",
]


class Stop(StrEnum):
    """A normalized stop reason (the right column of the module table). A ``StrEnum``:
    each member is its string, so ``turn.stop_reason == "max_tokens"`` and the JSON
    report read the same as before the enum."""

    MAX_TOKENS = "max_tokens"
    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    CONTENT_FILTER = "content_filter"
    STOP_SEQUENCE = "stop_sequence"
    REFUSAL = "refusal"
    PAUSE_TURN = "pause_turn"
    MALFORMED_TOOL_USE = "malformed_tool_use"


class StopSource(StrEnum):
    """Where a turn's stop reason came from: the WIRE said it, or railings DERIVED it
    from the turn (the derivation rule, :func:`derive_stop_reason`)."""

    WIRE = "wire"
    DERIVED = "derived"


MAX_TOKENS = Stop.MAX_TOKENS

_TABLE: dict[str, Stop] = {
    "length": Stop.MAX_TOKENS,
    "max_tokens": Stop.MAX_TOKENS,
    "max_output_tokens": Stop.MAX_TOKENS,
    "stop": Stop.END_TURN,
    "end_turn": Stop.END_TURN,
    "tool_calls": Stop.TOOL_USE,
    "function_call": Stop.TOOL_USE,
    "tool_use": Stop.TOOL_USE,
    "content_filter": Stop.CONTENT_FILTER,
    "stop_sequence": Stop.STOP_SEQUENCE,
    "refusal": Stop.REFUSAL,
    "pause_turn": Stop.PAUSE_TURN,
    # The window filled while the model wrote: an output-limit cut (module docstring).
    "model_context_window_exceeded": Stop.MAX_TOKENS,
    # Gemini finishReason (lower-cased) and Bedrock stopReason: content filtering.
    "safety": Stop.CONTENT_FILTER,
    "recitation": Stop.CONTENT_FILTER,
    "language": Stop.CONTENT_FILTER,
    "blocklist": Stop.CONTENT_FILTER,
    "prohibited_content": Stop.CONTENT_FILTER,
    "spii": Stop.CONTENT_FILTER,
    "image_safety": Stop.CONTENT_FILTER,
    "image_prohibited_content": Stop.CONTENT_FILTER,
    "image_recitation": Stop.CONTENT_FILTER,
    "jailbreak": Stop.CONTENT_FILTER,
    "guardrail_intervened": Stop.CONTENT_FILTER,
    "content_filtered": Stop.CONTENT_FILTER,
    # The model's tool call was not well formed: none of the turn's calls runs.
    "malformed_tool_use": Stop.MALFORMED_TOOL_USE,
    "malformed_function_call": Stop.MALFORMED_TOOL_USE,
    "unexpected_tool_call": Stop.MALFORMED_TOOL_USE,
    "too_many_tool_calls": Stop.MALFORMED_TOOL_USE,
}

# Providers known to report a length stop on turns that ended normally. The truncation
# gate stays open for them. Deliberately empty: an entry needs a caught repeat offender,
# not a suspicion. Callers pass their own set to is_truncated() to extend it.
DEFAULT_EXEMPTIONS: frozenset[str] = frozenset()


def normalize_stop_reason(wire: str, *, saw_tool_use: bool = False) -> str:
    """The railings spelling of a wire stop reason (see the module table): a :class:`Stop`
    for every spelling the table knows, an unknown one lowercased as is."""
    lowered = wire.strip().lower()
    if lowered == "completed":
        return Stop.TOOL_USE if saw_tool_use else Stop.END_TURN
    normalized = _TABLE.get(lowered, lowered)
    if normalized == Stop.END_TURN and saw_tool_use:
        return Stop.TOOL_USE  # the turn asks the client to act (module docstring)
    return normalized


def derive_stop_reason(
    *, saw_tool_use: bool, output_tokens: int | None, max_tokens: int | None
) -> Stop:
    """What this layer can prove when the wire said nothing (the derivation rule, in order).

    Billed output at or above the requested limit is hard evidence of truncation,
    since providers stop exactly at the limit; then a tool call means ``tool_use``;
    else ``end_turn``. A turn that ends naturally exactly at the limit is reported as
    ``max_tokens``: harmless, because the gate only rejects calls whose arguments
    do not parse.
    """
    if reached_limit(output_tokens, max_tokens):
        return Stop.MAX_TOKENS
    if saw_tool_use:
        return Stop.TOOL_USE
    return Stop.END_TURN


def is_truncated(
    stop_reason: str | None,
    service: str | None,
    exemptions: Set[str] = DEFAULT_EXEMPTIONS,
    *,
    output_tokens: int | None = None,
    max_tokens: int | None = None,
) -> bool:
    """True when the output limit cut the turn and its service is not exempt: the stop
    reason says so, or the billed output reached the requested limit whatever the stop
    reason says (:func:`railings.turn.limit.reached_limit`: servers report ``tool_calls``
    for turns ``max_tokens`` cut)."""
    if stop_reason != MAX_TOKENS and not reached_limit(output_tokens, max_tokens):
        return False
    return not (service is not None and service.lower() in exemptions)
