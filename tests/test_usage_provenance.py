"""A turn's usage says where each count came from, in the turn, the journal, the spans and
the gateway's metrics: a stream cut before its usage report is estimated and marked as
such, never a silent $0; a reported count stays the provider's, unchanged, everywhere.
Real servers on 127.0.0.1: the scripted model server, cut by the fault proxy."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from railings.agent import Agent
from railings.cli import main
from railings.dispatch import ToolRegistry
from railings.journal import Journal
from railings.messages import User
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.testing.raw import raw_request
from railings.transport import AsyncProviderClient, ClientConfig, RetryPolicy
from railings.turn.model import Outcome, Turn, UsageSource
from railings.turn.usage import estimate, request_chars
from tests.gateway_kit import KEY, PATHS, TEXT, Tee, body, headers, running

CUT = "truncate:events=3"  # Chat: the role chunk and two text chunks, then a clean close


def _tracing() -> tuple[Any, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter


def _sse(raw: bytes | bytearray) -> list[dict[str, Any]]:
    """The JSON data of each event of a captured body (``[DONE]`` left out)."""
    out = []
    for line in bytes(raw).decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[len("data: ") :]))
    return out


def _chat_usage(raw: bytes | bytearray) -> tuple[int, int]:
    """The usage chunk of a captured Chat stream: (prompt, completion) as sent."""
    [usage] = [e["usage"] for e in _sse(raw) if e.get("usage")]
    return usage["prompt_tokens"], usage["completion_tokens"]


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(Script.from_dict({"api_key": KEY, "turns": [{"text": TEXT}]})) as s:
        yield s


# -- the client, the agent's journal and the client's span -------------------------------------


def _config(url: str) -> ClientConfig:
    return ClientConfig(
        provider="openai",
        model="m",
        base_url=url + "/v1",
        api_key=KEY,
        max_tokens=1024,
        retry=RetryPolicy(attempts=1),
    )


def _agent(url: str, journal: Journal, tracer: Any, tee: Tee) -> Turn | None:
    """One agent run of one turn through the client, journaled and traced; for a complete
    turn, one more turn streamed straight through the client, returned."""

    async def go() -> Turn | None:
        async with AsyncProviderClient(_config(url), transport=tee, tracer=tracer) as client:
            await Agent(client, ToolRegistry(), journal=journal, tracer=tracer).arun("hi")
            return await client.stream_turn([User("hi")]).result()

    return asyncio.run(go())


def _turn_end(journal: Journal) -> tuple[str, dict[str, Any]]:
    [session] = journal.sessions()
    [entry] = [e.data for e in journal.entries(session.id) if e.kind == "turn_end"]
    return session.id, entry


def test_a_cut_stream_through_the_client_estimates_its_output_and_says_so(
    server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tracer, exporter = _tracing()
    tee = Tee()
    path = tmp_path / "journal.sqlite3"
    with FaultProxy(server.url, CUT) as proxy, Journal(path) as journal:
        turn = _agent(proxy.url, journal, tracer, tee)
        session, entry = _turn_end(journal)
    assert not any(e.get("usage") for e in _sse(tee.bodies[0]))  # cut before its report
    sent = json.loads(tee.requests[0].content)
    span = exporter.get_finished_spans()[0]  # the agent's turn
    attrs = dict(span.attributes or {})
    text = "".join(
        c["choices"][0]["delta"].get("content") or "" for c in _sse(tee.bodies[0]) if c["choices"]
    )
    output, input_ = math.ceil(len(text) / 4), estimate(request_chars(sent))
    assert output > 0 and input_ > 0

    # The turn (the second one, streamed straight through the client, cut the same way).
    assert turn is not None and turn.outcome is Outcome.PARTIAL and turn.text
    usage = turn.usage
    assert (usage.output_tokens, usage.output_source) == (
        math.ceil(len(turn.text) / 4),
        UsageSource.ESTIMATED,
    )
    assert usage.input_source is UsageSource.ESTIMATED and usage.method == "chars/4"
    assert usage.source is UsageSource.ESTIMATED

    # The journal: both counts, each marked estimated, with the method.
    assert entry["outcome"] == Outcome.PARTIAL.value
    assert entry["usage"] == {
        "input_tokens": input_,
        "output_tokens": output,
        "input_source": "estimated",
        "output_source": "estimated",
        "method": "chars/4",
    }
    # The span: no GenAI usage attribute (those are the provider's counts), the estimates
    # under railings' own names.
    assert "gen_ai.usage.output_tokens" not in attrs and "gen_ai.usage.input_tokens" not in attrs
    assert attrs["railings.outcome"] == "partial"
    assert attrs["railings.usage.output_source"] == "estimated"
    assert attrs["railings.usage.input_source"] == "estimated"
    assert attrs["railings.usage.estimated_output_tokens"] == output
    assert attrs["railings.usage.estimated_input_tokens"] == input_
    assert attrs["railings.usage.method"] == "chars/4"
    # The journal's reader: never a plain number for an estimate.
    assert main(["show", session, "--journal", str(path)]) == 0
    shown = capsys.readouterr().out
    assert f"~{input_} (estimated, chars/4) in, ~{output} (estimated, chars/4) out" in shown


def test_a_complete_turn_through_the_client_keeps_the_reported_counts_everywhere(
    server: ScriptedServer, tmp_path: Path
) -> None:
    tracer, exporter = _tracing()
    tee = Tee()
    with Journal(tmp_path / "journal.sqlite3") as journal:
        turn = _agent(server.url, journal, tracer, tee)
        _, entry = _turn_end(journal)
    prompt, completion = _chat_usage(tee.bodies[0])  # the agent's turn, as sent
    assert entry["usage"] == {
        "input_tokens": prompt,
        "output_tokens": completion,
        "input_source": "reported",
        "output_source": "reported",
        "method": None,
    }
    assert turn is not None and turn.outcome is Outcome.COMPLETE
    usage = turn.usage  # the second turn's
    assert (usage.input_tokens, usage.output_tokens) == _chat_usage(tee.bodies[1])
    assert usage.source is UsageSource.REPORTED and usage.method is None
    calls = [dict(s.attributes or {}) for s in exporter.get_finished_spans() if s.name == "chat m"]
    assert len(calls) == 2
    for attrs, sent in zip(calls, tee.bodies, strict=True):
        counts = (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"])
        assert counts == _chat_usage(sent)
        assert attrs["railings.usage.input_source"] == "reported"
        assert attrs["railings.usage.output_source"] == "reported"
        assert not any(k.startswith("railings.usage.estimated") for k in attrs)
        assert "railings.usage.method" not in attrs


# -- the gateway: its journal, its spans, its metrics ------------------------------------------


def test_the_gateway_counts_tokens_by_their_source_and_journals_them(
    server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tracer, exporter = _tracing()
    journal = tmp_path / "journal.sqlite3"
    calls = (
        ("openai", CUT),  # cut before its usage chunk: both counts estimated
        ("openai", None),  # complete: the provider's counts
        ("anthropic", "truncate:events=6"),  # cut after three deltas: input reported
        ("openai", "truncate:events=1"),  # only the role chunk, every attempt: Empty
    )
    with (
        FaultProxy(server.url) as proxy,
        running(proxy.url, tmp_path, journal=journal, tracer=tracer) as (url, gateway, tee),
    ):
        for provider, fault in calls:
            raw_request(url, PATHS[provider], body(provider), headers=headers(provider, fault))
        metrics = gateway.metrics
        exposition = raw_request(url, "/_railings/metrics", method="GET").body.decode()
    assert main(["gateway-log", "--journal", str(journal), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["outcome"] for r in rows[:3]] == ["partial", "complete", "partial"]
    cut, whole, anthropic, empty = (r["usage"] for r in rows)
    spans = [dict(s.attributes or {}) for s in exporter.get_finished_spans()]

    # The cut Chat stream: output from the text received, input from the request's text.
    cut_text = "".join(
        c["choices"][0]["delta"].get("content") or "" for c in _sse(tee.bodies[0]) if c["choices"]
    )
    input_ = estimate(request_chars(body("openai")))
    assert cut == {
        "input_tokens": input_,
        "output_tokens": math.ceil(len(cut_text) / 4),
        "input_source": "estimated",
        "output_source": "estimated",
        "method": "chars/4",
    }
    assert spans[0]["railings.usage.estimated_output_tokens"] == cut["output_tokens"]
    assert spans[0]["railings.usage.output_source"] == "estimated"
    assert "gen_ai.usage.output_tokens" not in spans[0]

    # The complete one: exactly what the provider sent, marked reported.
    prompt, completion = _chat_usage(tee.bodies[1])
    assert whole == {
        "input_tokens": prompt,
        "output_tokens": completion,
        "input_source": "reported",
        "output_source": "reported",
        "method": None,
    }
    assert (spans[1]["gen_ai.usage.input_tokens"], spans[1]["gen_ai.usage.output_tokens"]) == (
        prompt,
        completion,
    )

    # Anthropic's opening count (a token before any output) is not the turn's output.
    events = _sse(tee.bodies[2])
    opening = events[0]["message"]["usage"]
    written = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert anthropic["input_tokens"] == opening["input_tokens"]
    assert anthropic["input_source"] == "reported"
    assert (anthropic["output_tokens"], anthropic["output_source"]) == (
        math.ceil(len(written) / 4),
        "estimated",
    )

    # Nothing billable arrived: unknown, not 0.
    assert empty is not None and empty["output_tokens"] is None
    assert (empty["input_source"], empty["output_source"]) == ("unknown", "unknown")

    def tokens(provider: str, direction: str, source: str) -> float:
        return metrics.value(
            "railings_gateway_tokens_total", provider=provider, direction=direction, source=source
        )

    assert tokens("openai", "output", "estimated") == cut["output_tokens"]
    assert tokens("openai", "input", "estimated") == input_
    assert tokens("openai", "output", "reported") == completion
    assert tokens("openai", "input", "reported") == prompt
    assert tokens("anthropic", "input", "reported") == opening["input_tokens"]
    assert tokens("anthropic", "output", "estimated") == anthropic["output_tokens"]
    assert tokens("anthropic", "output", "reported") == 0
    unknown = "railings_gateway_usage_unknown_total"
    assert metrics.value(unknown, provider="openai", direction="output") == 1
    assert metrics.value(unknown, provider="anthropic") == 0
    line = (
        'railings_gateway_tokens_total{direction="output",provider="openai",source="estimated"} '
        f"{cut['output_tokens']}"
    )
    assert line in exposition.splitlines()

    # The gateway's log reader marks the estimate.
    assert main(["gateway-log", "--journal", str(journal)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].endswith(
        f"~{input_} (estimated, chars/4) in, ~{cut['output_tokens']} (estimated, chars/4) out"
    )
    assert printed[1].endswith(f"{prompt} in, {completion} out")
