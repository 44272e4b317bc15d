"""OpenTelemetry spans for model calls and agent runs: optional, a no-op when absent.

With the ``otel`` extra (``opentelemetry-api``) each model call -- one turn of the
transport, one proxied call of the gateway -- is one span of kind CLIENT named
``{operation} {model}``, with the GenAI semantic conventions' attributes
(``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.response.finish_reasons``,
``gen_ai.usage.input_tokens`` / ``output_tokens``, time to first chunk) and railings'
own (``railings.termination``, ``railings.outcome``, ``railings.truncated``,
``railings.tool_calls.rejected``, the usage's provenance). The GenAI usage attributes
carry only counts the provider reported, as the conventions mean them; each count's
source is ``railings.usage.input_source`` / ``output_source`` (``reported``,
``estimated``, ``unknown``), and an estimated count is
``railings.usage.estimated_input_tokens`` / ``estimated_output_tokens``, with the method
that made it in ``railings.usage.method`` (:mod:`railings.turn.usage`). An agent run
is one ``invoke_agent`` span around its model calls. Which exporter receives them is
the application's choice, made the standard way: an SDK configured in code, or
``opentelemetry-instrument`` reading the ``OTEL_*`` environment variables. Without
``opentelemetry-api``, nothing here does anything; the API's default tracer is itself a
no-op until an SDK is configured.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from railings._extras import missing
from railings.providers import SPECS
from railings.turn.model import Turn, Usage, UsageSource

__all__ = [
    "GEN_AI_PROVIDERS",
    "CallFacts",
    "agent_span",
    "record_span",
    "span_attributes",
    "tracing",
    "usage_attributes",
]

# railings' wire names -> the GenAI conventions' ``gen_ai.provider.name`` values.
GEN_AI_PROVIDERS: dict[str, str] = {s.name: s.gen_ai_name for s in SPECS}
_AVAILABLE = not missing("opentelemetry")


@dataclass(slots=True)
class CallFacts:
    """What one finished model call looked like, whoever made it (transport or gateway)."""

    provider: str
    model: str | None
    started_at: float  # epoch seconds
    duration: float | None = None
    first_chunk: float | None = None  # seconds after the start
    status: int | None = None
    outcome: str | None = None  # complete, partial, empty, refused, error...
    attempts: int = 0
    rejected: int = 0  # tool calls the verdict rejected as cut by the output limit
    error: str | None = None
    turn: Turn | None = None
    profile: str | None = None  # the endpoint profile that judged it (railings.profiles.label)


def span_attributes(facts: CallFacts) -> dict[str, Any]:
    """The span's attributes for one finished call (only those with a value)."""
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": GEN_AI_PROVIDERS.get(facts.provider, facts.provider),
        "railings.outcome": facts.outcome or "",
        "railings.tool_calls.rejected": facts.rejected,
        "railings.upstream.attempts": facts.attempts,
    }
    if facts.profile is not None:
        attrs["railings.profile"] = facts.profile
    if facts.model:
        attrs["gen_ai.request.model"] = facts.model
    if facts.status is not None:
        attrs["http.response.status_code"] = facts.status
    if facts.first_chunk is not None:
        attrs["gen_ai.response.time_to_first_chunk"] = facts.first_chunk
    turn = facts.turn
    if turn is not None:
        attrs["railings.termination"] = turn.termination.value
        attrs["railings.truncated"] = turn.truncated
        if turn.model:
            attrs["gen_ai.response.model"] = turn.model
        if turn.message_id:
            attrs["gen_ai.response.id"] = turn.message_id
        if turn.stop_reason_wire:
            attrs["gen_ai.response.finish_reasons"] = (turn.stop_reason_wire,)
        attrs.update(usage_attributes(turn.usage))
    if facts.error:
        attrs["error.type"] = facts.outcome or "error"
    return attrs


def usage_attributes(usage: Usage) -> dict[str, Any]:
    """A turn's usage as span attributes: a reported count under the GenAI name, an
    estimated one under railings' own with its method, and each count's source."""
    attrs: dict[str, Any] = {}
    for direction, tokens, source in (
        ("input", usage.input_tokens, usage.input_source),
        ("output", usage.output_tokens, usage.output_source),
    ):
        attrs[f"railings.usage.{direction}_source"] = source.value
        if source is UsageSource.REPORTED:
            attrs[f"gen_ai.usage.{direction}_tokens"] = tokens
        elif source is UsageSource.ESTIMATED:
            attrs[f"railings.usage.estimated_{direction}_tokens"] = tokens
    if usage.method is not None:
        attrs["railings.usage.method"] = usage.method
    return attrs


def tracing(tracer: Any = None) -> bool:
    """Whether a span could be recorded: a tracer was given, or the API is installed."""
    return tracer is not None or _AVAILABLE


def _tracer(tracer: Any, name: str) -> Any:
    if tracer is not None or not _AVAILABLE:
        return tracer
    from opentelemetry import trace

    return trace.get_tracer(name)


def record_span(facts: CallFacts, tracer: Any = None, *, scope: str = "railings") -> None:
    """Emit the span of a finished call, its start and end as measured.

    ``tracer``: an OpenTelemetry tracer; default the global provider's tracer named
    ``scope`` (a no-op until an SDK is configured; nothing at all without the API).
    """
    tracer = _tracer(tracer, scope)
    if tracer is None:
        return
    from opentelemetry.trace import SpanKind, Status, StatusCode

    attrs = span_attributes(facts)
    name = f"chat {facts.model or ''}".strip()
    start_ns = int(facts.started_at * 1e9)
    span = tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attrs, start_time=start_ns)
    if facts.error or facts.outcome not in ("complete", None):
        span.set_status(Status(StatusCode.ERROR, facts.error or facts.outcome or ""))
    end_ns = start_ns + int(facts.duration * 1e9) if facts.duration is not None else None
    span.end(end_time=end_ns if end_ns is not None else time.time_ns())


@contextlib.contextmanager
def agent_span(model: str | None, tracer: Any = None) -> Iterator[Any]:
    """One ``invoke_agent`` span around an agent run; its model calls become its children."""
    tracer = _tracer(tracer, "railings.agent")
    if tracer is None:
        yield None
        return
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "railings"}
    if model:
        attrs["gen_ai.request.model"] = model
    with tracer.start_as_current_span("invoke_agent railings", attributes=attrs) as span:
        yield span
