"""Stop reasons: normalization, derivation when the wire is silent, and the
truncation predicate.

Each provider module owns its wire's spellings (its public ``STOP_REASONS``, the
spec's ``stop_reasons.wire``); this module normalizes with their union, which it reads
from the registry (:func:`railings.providers.stop_reasons`), and the normalized
vocabulary itself (:class:`Stop`) is :mod:`railings.stops`, below both. Together the
providers' tables say (wire spelling -> railings):

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
``completed`` (Responses API status, a           ``tool_use`` if the turn has tool
spec's ``derived`` spelling)                     calls, else ``end_turn``
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

from collections.abc import Mapping

from railings.providers import derived_stop_reasons, stop_reasons
from railings.stops import Stop, StopSource
from railings.turn.limit import reached_limit

__all__ = [
    "MAX_TOKENS",
    "TABLE",
    "Stop",
    "StopSource",
    "derive_stop_reason",
    "is_truncated",
    "normalize_stop_reason",
]

MAX_TOKENS = Stop.MAX_TOKENS

# The normalization table: every provider's spellings (each provider module's
# ``STOP_REASONS``, through its spec), lower-cased, from the registry.
TABLE: Mapping[str, Stop] = stop_reasons()
# Spellings whose meaning the turn decides: the Responses status ``completed``.
_DERIVED: frozenset[str] = derived_stop_reasons()


def normalize_stop_reason(wire: str, *, saw_tool_use: bool = False) -> str:
    """The railings spelling of a wire stop reason (see the module table): a :class:`Stop`
    for every spelling the table knows, an unknown one lowercased as is."""
    lowered = wire.strip().lower()
    if lowered in _DERIVED:
        return Stop.TOOL_USE if saw_tool_use else Stop.END_TURN
    normalized = TABLE.get(lowered, lowered)
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
    stop_reason: str | None, *, output_tokens: int | None = None, max_tokens: int | None = None
) -> bool:
    """True when the output limit cut the turn: the stop reason says so, or the billed
    output reached the requested limit whatever the stop reason says
    (:func:`railings.turn.limit.reached_limit`: servers report ``tool_calls`` for turns
    ``max_tokens`` cut). Nothing here waives a cut: an endpoint that misreports
    ``length`` says so in its profile (``misreports_length``), which spares a text answer
    the report and never lets a cut call run."""
    return stop_reason == MAX_TOKENS or reached_limit(output_tokens, max_tokens)
