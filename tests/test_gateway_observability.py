"""What the gateway tells its operators: metrics, the journal, spans, its log, and never a key."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from railings.cli import main
from railings.gateway.metrics import BUCKETS, Metrics
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.testing.raw import raw_request
from tests.gateway_kit import KEY, PATHS, TEXT, body, headers, running
from tests.test_gateway import CUT_SCRIPT


@pytest.fixture()
def upstream() -> Iterator[str]:
    script = {"api_key": KEY, "turns": [{"text": TEXT}]}
    with ScriptedServer(Script.from_dict(script)) as server, FaultProxy(server.url) as proxy:
        yield proxy.url


def _traffic(url: str) -> None:
    """A clean stream, an Empty one resent, a Partial one, a non-streamed answer, a 429."""
    for provider, fault in (
        ("openai", "none"),
        ("anthropic", "truncate:events=2,times=1"),
        ("openai-responses", "truncate:events=5"),
        ("openai", "status:code=429"),
    ):
        raw_request(url, PATHS[provider], body(provider), headers=headers(provider, fault))
    raw_request(url, PATHS["openai"], body("openai", stream=False), headers=headers("openai"))


def test_the_metrics_are_prometheus_text_with_the_named_series(
    upstream: str, tmp_path: Path
) -> None:
    with running(upstream, tmp_path) as (url, _, _):
        _traffic(url)
        response = httpx2.get(url + "/_railings/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    lines = response.text.splitlines()
    streams = 'railings_gateway_streams_total{{outcome="{}",profile="wire",provider="{}"}} 1'
    assert streams.format("complete", "openai") in lines
    assert streams.format("complete", "anthropic") in lines
    assert streams.format("partial", "openai-responses") in lines
    assert 'railings_gateway_upstream_attempts_total{provider="anthropic"} 2' in lines
    assert 'railings_gateway_answers_total{outcome="complete",provider="openai"} 1' in lines
    for name in ("time_to_first_byte_seconds", "stream_duration_seconds"):
        family = f"railings_gateway_{name}"
        assert f"# TYPE {family} histogram" in lines
        count = [line for line in lines if line.startswith(f'{family}_count{{provider="openai"}}')]
        assert count and int(count[0].split()[-1]) >= 2
        inf = [
            line
            for line in lines
            if line.startswith(f'{family}_bucket{{provider="openai",le="+Inf"}}')
        ]
        assert inf and inf[0].split()[-1] == count[0].split()[-1]
    assert KEY not in response.text


def test_histogram_buckets_are_cumulative_and_labels_escaped() -> None:
    metrics = Metrics()
    for seconds in (0.001, 0.3, 1000.0):
        metrics.observe("railings_gateway_stream_duration_seconds", seconds, provider='a"b\\c')
    text = metrics.render()
    buckets = [line for line in text.splitlines() if "_bucket" in line]
    assert len(buckets) == len(BUCKETS) + 1
    counts = [int(line.split()[-1]) for line in buckets]
    assert counts == sorted(counts) and counts[0] == 1 and counts[-1] == 3
    assert 'provider="a\\"b\\\\c"' in buckets[0]


def test_the_journal_keeps_each_proxied_turn(
    upstream: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "journal.sqlite3"
    with running(upstream, tmp_path, journal=journal) as (url, _, _):
        _traffic(url)
    assert main(["gateway-log", "--journal", str(journal), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["provider"], r["outcome"], r["attempts"]) for r in rows] == [
        ("openai", "complete", 1),
        ("anthropic", "complete", 2),
        ("openai-responses", "partial", 1),
        ("openai", "upstream_status", 1),
        ("openai", "complete", 1),
    ]
    first = rows[0]
    assert first["model"] == "m" and first["status"] == 200 and first["stream"] is True
    assert first["usage"]["output_tokens"] > 0 and first["duration_s"] >= first["first_byte_s"]
    assert rows[3]["status"] == 429 and rows[4]["stream"] is False
    assert main(["gateway-log", "--journal", str(journal)]) == 0
    assert "openai-responses" in capsys.readouterr().out
    assert main(["sessions", "--journal", str(journal)]) == 0
    assert "gateway http://127.0.0.1" in capsys.readouterr().out


def test_no_journal_writes_no_file(upstream: str, tmp_path: Path) -> None:
    with running(upstream, tmp_path, journal=False) as (url, gateway, _):
        raw_request(url, PATHS["openai"], body("openai"), headers=headers("openai"))
    assert gateway.journal is None and not list(tmp_path.iterdir())


def test_a_span_per_model_call_with_the_genai_attributes(upstream: str, tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with running(upstream, tmp_path, tracer=provider.get_tracer("test")) as (url, _, _):
        _traffic(url)
    spans = exporter.get_finished_spans()
    assert len(spans) == 5
    clean = spans[0].attributes or {}
    assert spans[0].name == "chat m"
    assert clean["gen_ai.provider.name"] == "openai"
    assert clean["gen_ai.request.model"] == "m"
    assert clean["gen_ai.response.finish_reasons"] == ("stop",)
    assert clean["gen_ai.usage.input_tokens"] > 0 and clean["gen_ai.usage.output_tokens"] > 0
    assert clean["gen_ai.response.time_to_first_chunk"] > 0
    assert clean["railings.termination"] == "clean" and clean["railings.outcome"] == "complete"
    assert clean["railings.truncated"] is False and clean["railings.tool_calls.rejected"] == 0
    assert clean["railings.profile"] == "wire"  # a local upstream: no profile matches
    assert (spans[1].attributes or {})["railings.upstream.attempts"] == 2
    partial = spans[2].attributes or {}
    assert partial["gen_ai.provider.name"] == "openai"
    assert partial["railings.outcome"] == "partial" and partial["railings.termination"] == "abrupt"
    assert spans[2].status.status_code.name == "ERROR"
    everything = json.dumps([dict(s.attributes or {}) for s in spans], default=str)
    assert KEY not in everything


def test_a_refused_call_is_counted_on_the_span(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with (
        ScriptedServer(Script.from_dict(CUT_SCRIPT)) as server,
        running(server.url, tmp_path, tracer=provider.get_tracer("t")) as (url, _, _),
    ):
        raw_request(
            url, PATHS["anthropic"], body("anthropic", max_tokens=40), headers=headers("anthropic")
        )
    (span,) = exporter.get_finished_spans()
    attrs = span.attributes or {}
    assert attrs["railings.outcome"] == "refused" and attrs["railings.truncated"] is True
    assert attrs["railings.tool_calls.rejected"] == 1
    assert attrs["gen_ai.response.finish_reasons"] == ("max_tokens",)


def test_keys_reach_the_upstream_and_no_gateway_output(
    upstream: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="railings.gateway")
    with running(upstream, tmp_path) as (url, gateway, _):
        _traffic(url)
        bad = raw_request(
            url,
            PATHS["openai"],
            body("openai"),
            headers={"authorization": "Bearer sk-wrong-key-123456"},
        )
        metrics = httpx2.get(url + "/_railings/metrics").text
        # The scripted server demands exactly KEY: its 200s prove the key went upstream.
        assert (
            gateway.metrics.value(
                "railings_gateway_streams_total", provider="openai", outcome="complete"
            )
            == 1
        )
    assert bad.status == 401  # a wrong key is the upstream's to refuse
    outputs = {"log": caplog.text, "metrics": metrics}
    for file in tmp_path.iterdir():  # the journal, its WAL and shared memory
        outputs[file.name] = file.read_bytes().decode("latin-1")
    assert caplog.text.count("POST /v1/") == 6
    for name, text in outputs.items():
        assert KEY not in text, name
        assert "sk-wrong-key-123456" not in text, name


SESSION_ENDS = [
    ((), "stopped"),
    (("complete",), "stopped"),
    (("complete", "interrupted"), "interrupted"),
]


@pytest.mark.parametrize(("outcomes", "status"), SESSION_ENDS)
def test_the_gateways_session_ends_interrupted_only_when_its_stop_cut_a_turn(
    tmp_path: Path, outcomes: tuple[str, ...], status: str
) -> None:
    from railings.gateway.record import GatewayJournal, TurnRecord
    from railings.journal import Journal

    book = GatewayJournal(tmp_path / "j.sqlite3", "http://127.0.0.1:9")
    for outcome in outcomes:
        record = TurnRecord("openai", "POST", "/v1/chat/completions", "m", stream=True)
        record.finish(outcome)
        book.write(record)
    book.close()
    with Journal(tmp_path / "j.sqlite3") as journal:
        (session,) = journal.sessions()
    assert session.status == status
