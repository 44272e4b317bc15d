"""One OpenTelemetry span per turn the client streams (see :mod:`railings.telemetry`)."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import Any

from railings.events import StreamEvent
from railings.redact import redact
from railings.telemetry import CallFacts, record_span, tracing
from railings.transport.config import ClientConfig
from railings.transport.stream import TurnStream
from railings.turn.verdict import RejectReason, judge

__all__ = ["recording", "traced"]


async def traced(
    stream: TurnStream,
    events: AsyncGenerator[StreamEvent, None],
    config: ClientConfig,
    tracer: Any,
) -> AsyncGenerator[StreamEvent, None]:
    """``events`` as they come; then the call's span: provider, model, attempts, time to
    the first event, and the turn's outcome, stop reason, usage and rejected calls."""
    facts = CallFacts(config.provider, config.model, started_at=time.time())
    started = time.monotonic()
    try:
        async for event in events:
            if facts.first_chunk is None:
                facts.first_chunk = time.monotonic() - started
            yield event
    except GeneratorExit:  # the caller stopped reading: the outcome says "abandoned"
        raise
    except BaseException as exc:
        facts.error = redact(str(exc)) or type(exc).__name__
        raise
    finally:
        await events.aclose()
        facts.duration = time.monotonic() - started
        facts.attempts = stream.attempts
        if stream.done:
            turn = stream.turn
            facts.turn, facts.outcome = turn, turn.outcome.value
            facts.rejected = sum(1 for v in judge(turn) if v.reason is RejectReason.TRUNCATED)
        else:
            facts.outcome = "error" if facts.error else "abandoned"
        record_span(facts, tracer, scope="railings.transport")


def recording(tracer: Any) -> bool:
    """Whether a turn's span would be recorded: a tracer was given, or OpenTelemetry's
    global provider is a configured one. With the API alone every span is a
    non-recording no-op, so the turn's events skip the tracing layer."""
    if tracer is not None:
        return True
    if not tracing(None):
        return False
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
