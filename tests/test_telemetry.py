"""Spans from the transport and the agent, read back with the OpenTelemetry SDK's
in-memory exporter: one CLIENT span per model call, inside one ``invoke_agent`` span."""

from __future__ import annotations

import asyncio
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from railings.agent import Agent
from railings.dispatch import ToolRegistry, builtin_tools
from railings.messages import User
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.transport import AsyncProviderClient, ClientConfig, RetryPolicy

KEY = "sk-telemetry-test-key-0000"


def _tracing() -> tuple[object, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter


def _config(url: str) -> ClientConfig:
    return ClientConfig(
        provider="openai",
        model="scripted-1",
        base_url=url + "/v1",
        api_key=KEY,
        max_tokens=1024,
        retry=RetryPolicy(attempts=1),
    )


def test_each_turn_of_the_transport_is_one_span_with_the_genai_attributes() -> None:
    tracer, exporter = _tracing()
    with ScriptedServer(Script.text("Hello there.")) as server:

        async def go() -> None:
            async with AsyncProviderClient(_config(server.url), tracer=tracer) as client:
                await client.stream_turn([User("hi")]).result()

        asyncio.run(go())
    [span] = exporter.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert span.name == "chat scripted-1" and span.kind is SpanKind.CLIENT
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "scripted-1"
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs["gen_ai.usage.output_tokens"] > 0
    assert attrs["railings.outcome"] == "complete"
    assert attrs["railings.termination"] == "clean"
    assert attrs["railings.truncated"] is False
    assert attrs["gen_ai.response.time_to_first_chunk"] >= 0
    assert span.status.status_code is not StatusCode.ERROR
    assert KEY not in str(span.to_json())


def test_an_interrupted_turn_is_an_error_span() -> None:
    tracer, exporter = _tracing()
    with (
        ScriptedServer(Script.text("The first part arrives, the rest never does.")) as server,
        FaultProxy(server.url, "drop_terminator") as proxy,
    ):

        async def go() -> None:
            async with AsyncProviderClient(_config(proxy.url), tracer=tracer) as client:
                await client.stream_turn([User("hi")]).result()

        asyncio.run(go())
    [span] = exporter.get_finished_spans()
    assert dict(span.attributes or {})["railings.outcome"] == "partial"
    assert dict(span.attributes or {})["railings.termination"] == "abrupt"
    assert span.status.status_code is StatusCode.ERROR


def test_an_agent_run_is_one_span_around_its_model_calls(tmp_path: Path) -> None:
    tracer, exporter = _tracing()
    with ScriptedServer(Script.demo()) as server:

        async def go() -> None:
            async with AsyncProviderClient(_config(server.url), tracer=tracer) as client:
                agent = Agent(client, ToolRegistry(builtin_tools(tmp_path)), tracer=tracer)
                await agent.arun("write a report")

        asyncio.run(go())
    spans = exporter.get_finished_spans()
    [run] = [s for s in spans if s.name == "invoke_agent railings"]
    calls = [s for s in spans if s.kind is SpanKind.CLIENT]
    assert len(calls) == 4  # the demo's four turns
    assert all(c.parent is not None and c.parent.span_id == run.context.span_id for c in calls)
    rejected = [dict(c.attributes or {})["railings.tool_calls.rejected"] for c in calls]
    assert rejected == [0, 1, 0, 0]  # the second turn's call was cut by the output limit
    assert [dict(c.attributes or {})["railings.truncated"] for c in calls][1] is True
