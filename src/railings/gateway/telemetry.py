"""OpenTelemetry spans for model calls: optional, and a no-op when absent or unconfigured.

With the ``otel`` extra (``opentelemetry-api``) each proxied model call is one
span of kind CLIENT named ``{operation} {model}``, with the GenAI semantic
conventions' attributes and railings' own. Which exporter receives the spans is
the application's choice, made the standard way: an SDK configured in code, or
``opentelemetry-instrument`` reading the ``OTEL_*`` environment variables.
Without ``opentelemetry-api`` installed, :func:`record_span` does nothing.

The API's default tracer is itself a no-op until an SDK is installed and
configured, so an installed but unconfigured API costs one attribute dict per
call.
"""

from __future__ import annotations

import time
from typing import Any

from railings._extras import missing
from railings.gateway.record import TurnRecord

__all__ = ["GEN_AI_PROVIDERS", "record_span", "span_attributes"]

# railings' wire names -> the GenAI conventions' ``gen_ai.provider.name`` values.
GEN_AI_PROVIDERS = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic"}
_OPERATIONS = {"openai": "chat", "openai-responses": "chat", "anthropic": "chat"}
_AVAILABLE = not missing("opentelemetry")


def span_attributes(record: TurnRecord) -> dict[str, Any]:
    """The span's attributes for one finished turn (only those with a value)."""
    turn = record.turn
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": _OPERATIONS.get(record.provider, "chat"),
        "gen_ai.provider.name": GEN_AI_PROVIDERS.get(record.provider, record.provider),
        "railings.outcome": record.outcome or "",
        "railings.tool_calls.rejected": len(record.rejected),
        "railings.upstream.attempts": record.attempts,
    }
    if record.model:
        attrs["gen_ai.request.model"] = record.model
    if record.status is not None:
        attrs["http.response.status_code"] = record.status
    if record.first_byte is not None:
        attrs["gen_ai.response.time_to_first_chunk"] = record.first_byte
    if turn is not None:
        attrs["railings.termination"] = turn.termination.value
        attrs["railings.truncated"] = turn.truncated
        if turn.model:
            attrs["gen_ai.response.model"] = turn.model
        if turn.message_id:
            attrs["gen_ai.response.id"] = turn.message_id
        if turn.stop_reason_wire:
            attrs["gen_ai.response.finish_reasons"] = (turn.stop_reason_wire,)
        usage = turn.usage
        if usage is not None and usage.input_tokens is not None:
            attrs["gen_ai.usage.input_tokens"] = usage.input_tokens
        if usage is not None and usage.output_tokens is not None:
            attrs["gen_ai.usage.output_tokens"] = usage.output_tokens
    if record.error:
        attrs["error.type"] = record.outcome or "error"
    return attrs


def record_span(record: TurnRecord, tracer: Any = None) -> None:
    """Emit the span of a finished turn, start and end time as measured.

    ``tracer``: an OpenTelemetry tracer; default the global provider's
    ``railings.gateway`` tracer (a no-op until an SDK is configured).
    """
    if tracer is None:
        if not _AVAILABLE:
            return
        from opentelemetry import trace

        tracer = trace.get_tracer("railings.gateway")
    attrs = span_attributes(record)
    name = f"{attrs['gen_ai.operation.name']} {record.model or ''}".strip()
    start_ns = int(record.started_at * 1e9)
    end_ns = start_ns + int((record.duration or 0.0) * 1e9)
    from opentelemetry.trace import SpanKind, Status, StatusCode

    span = tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attrs, start_time=start_ns)
    if record.error or record.outcome not in ("complete", None):
        span.set_status(Status(StatusCode.ERROR, record.error or record.outcome or ""))
    span.end(end_time=end_ns if record.duration is not None else time.time_ns())
