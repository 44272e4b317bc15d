"""The normalized stop reasons: the vocabulary every wire's spellings map into.

Each provider spec owns its wire's table of spellings -> :class:`Stop`
(``ProviderSpec.stop_reasons``); the turn layer (:mod:`railings.turn.stop_reason`)
normalizes with the union the registry gives it, derives a stop reason when the wire
said none, and decides truncation. This module sits below both, so that a provider
never imports the turn layer to name a stop reason.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Stop", "StopSource"]


class Stop(StrEnum):
    """A normalized stop reason (the right column of the table in
    :mod:`railings.turn.stop_reason`). A ``StrEnum``: each member is its string, so
    ``turn.stop_reason == "max_tokens"`` and the JSON report read the same as before
    the enum."""

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
    from the turn (the derivation rule, :func:`railings.turn.stop_reason.derive_stop_reason`)."""

    WIRE = "wire"
    DERIVED = "derived"
