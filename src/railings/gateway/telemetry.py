"""The gateway's spans: one per proxied model call, through :mod:`railings.telemetry`.

With the ``otel`` extra each call the gateway judged is one CLIENT span with the GenAI
attributes and railings' own, named ``chat {model}``; without it, nothing happens.
"""

from __future__ import annotations

from typing import Any

from railings.gateway.record import TurnRecord
from railings.telemetry import GEN_AI_PROVIDERS, CallFacts
from railings.telemetry import record_span as _record
from railings.telemetry import span_attributes as _attributes

__all__ = ["GEN_AI_PROVIDERS", "facts_of", "record_span", "span_attributes"]


def facts_of(record: TurnRecord) -> CallFacts:
    """The call facts of one proxied turn."""
    return CallFacts(
        provider=record.provider,
        model=record.model,
        started_at=record.started_at,
        duration=record.duration,
        first_chunk=record.first_byte,
        status=record.status,
        outcome=record.outcome,
        attempts=record.attempts,
        rejected=len(record.rejected),
        error=record.error,
        turn=record.turn,
        profile=record.profile,
    )


def span_attributes(record: TurnRecord) -> dict[str, Any]:
    """The span's attributes for one finished proxied turn."""
    return _attributes(facts_of(record))


def record_span(record: TurnRecord, tracer: Any = None) -> None:
    """Emit the span of a finished proxied turn (default tracer: ``railings.gateway``)."""
    _record(facts_of(record), tracer, scope="railings.gateway")
