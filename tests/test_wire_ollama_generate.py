"""Ollama /api/generate: its lines carry ``response`` (and ``thinking``), not
``message.content``; the proof is still ``done: true`` with ``done_reason``. The documented
captures whole, byte by byte and with trailing data; ``replay`` and ``inspect`` on them; the
path routed to the wire; the scripted server's answers and the fault proxy's faults."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import ollama
import pytest

import railings
from _formats import body_of, byte_by_byte, manifest
from railings import inspect, replay
from railings.events import (
    MessageStart,
    StopReason,
    TerminationProof,
    TextDelta,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unknown,
    UsageUpdate,
)
from railings.providers import provider_for_path, spec_for_path
from railings.providers.ollama.decoder import OllamaStream
from railings.replay import Replay
from railings.testing import FaultProxy, ScriptedServer
from railings.turn.model import Outcome, Termination, UsageSource
from railings.turn.verdict import RejectReason, Verdict

SOURCE = str(Path(railings.__file__).resolve().parents[1])
ROWS = {row["file"]: row for row in manifest("ollama")}

# What each documented /api/generate capture must read as (tests/corpus/ollama/README.md).
CAPTURES: dict[str, dict[str, Any]] = {
    "docs_generate_streaming.ndjson": {
        "text": "The",
        "stop_reason": "end_turn",  # no done_reason: derived
        "source": "derived",
        "usage": (26, 259),
    },
    "docs_generate_structured_stop.ndjson": {
        "text": '{\n  "age": 22,\n  "available": true\n}',
        "stop_reason": "end_turn",
        "source": "wire",
        "usage": (28, 16),
    },
    "docs_generate_unload.ndjson": {
        "text": "",
        "stop_reason": "unload",  # the model's lifecycle, kept as it is
        "source": "wire",
        "usage": None,
    },
}


def ndjson(*objects: object) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objects)


def generated(done: bool = False, **fields: object) -> dict[str, object]:
    return {
        "model": "m",
        "created_at": "2025-01-01T00:00:00Z",
        "response": "",
        **fields,
        "done": done,
    }


def _check(result: Replay, expected: dict[str, Any]) -> None:
    turn = result.turn
    assert turn.provider == "ollama"
    assert (turn.termination, turn.outcome) == (Termination.CLEAN, Outcome.COMPLETE)
    assert turn.text == expected["text"]
    assert turn.stop_reason == expected["stop_reason"]
    assert turn.stop_reason_source == expected["source"]
    u = turn.usage
    counts = ((u.input_tokens, u.input_source), (u.output_tokens, u.output_source))
    reported = tuple(n if s is UsageSource.REPORTED else None for n, s in counts)
    assert (None if reported == (None, None) else reported) == expected["usage"]
    assert turn.unknown_events == 0


# -- the documented captures, three ways, through replay -----------------------------------


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_a_documented_capture_reads_whole_byte_by_byte_and_with_trailing_data(name: str) -> None:
    body = body_of("ollama", ROWS[name])
    expected = CAPTURES[name]
    for provider in ("ollama", "auto"):
        _check(replay(body, provider=provider), expected)
        _check(replay(body, provider=provider, chunk_size=1), expected)
    # Data after the proof is ignored, whatever it is.
    trailing = body + ndjson(generated(response="not part of the turn")) + b"{ garbage"
    _check(replay(trailing, provider="ollama"), expected)
    _check(replay(trailing, provider="ollama", chunk_size=1), expected)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_the_same_events_byte_by_byte(name: str) -> None:
    body = body_of("ollama", ROWS[name])

    def events(chunks: list[bytes]) -> list[object]:
        stream = OllamaStream()
        return [e for chunk in chunks for e in stream.feed(chunk)] + stream.close()

    assert events(byte_by_byte(body)) == events([body])


def test_the_streamed_capture_events() -> None:
    body = body_of("ollama", ROWS["docs_generate_streaming.ndjson"])
    stream = OllamaStream()
    assert [*stream.feed(body), *stream.close()] == [
        MessageStart(id="", model="llama3.2"),
        TextDelta(text="The"),
        UsageUpdate(input_tokens=26, output_tokens=259),
        TerminationProof(marker="done"),
    ]


# -- the line table ---------------------------------------------------------------------


def test_thinking_text_and_a_length_cut() -> None:
    body = ndjson(
        generated(thinking="The user "),
        generated(thinking="asks."),
        generated(response="Hel"),
        generated(response="lo"),
        generated(True, done_reason="length", context=[1, 2], prompt_eval_count=4, eval_count=8),
    )
    for size in (None, 1, 7):
        result = replay(body, provider="ollama", chunk_size=size, max_tokens=8)
        turn = result.turn
        assert (turn.thinking, turn.text) == ("The user asks.", "Hello")
        assert (turn.stop_reason, turn.stop_reason_wire, turn.truncated) == (
            "max_tokens",
            "length",
            True,
        )
        assert turn.outcome is Outcome.COMPLETE


def test_the_generate_line_table() -> None:
    call = {"function": {"name": "rm", "arguments": {"path": "/tmp/x"}}}
    body = ndjson(
        generated(thinking="hm", response="Hi"),
        generated(tool_calls=[call], image="AAAA", _debug_info={"rendered_template": "t"}),
        generated(True, done_reason="length", eval_count=3),
    )
    stream = OllamaStream()
    assert [*stream.feed(body), *stream.close()] == [
        MessageStart(id="", model="m"),
        ThinkingDelta(text="hm"),  # reasoning comes first, as the model wrote it
        TextDelta(text="Hi"),
        Unknown(name="ollama:image"),  # an image generation model's output
        ToolCallStart(index=0, id="", name="rm"),
        ToolArgumentsDelta(index=0, fragment='{"path": "/tmp/x"}', parsed=True),
        ToolCallEnd(index=0),
        UsageUpdate(input_tokens=None, output_tokens=3),
        StopReason(wire="length"),
        TerminationProof(marker="done"),
    ]
    (verdict,) = replay(body, provider="ollama").verdicts
    # Parsed by the server, in a turn cut at the output limit: never run.
    assert verdict.verdict is Verdict.REJECT and verdict.reason is RejectReason.TRUNCATED


def test_a_text_field_of_another_type_is_counted_not_dropped() -> None:
    body = ndjson(generated(response=["The"], thinking={"t": 1}), generated(True))
    turn = replay(body, provider="ollama").turn
    assert (turn.text, turn.thinking, turn.unknown_events) == ("", "", 2)


def test_a_generate_stream_cut_before_done_keeps_its_text_partial() -> None:
    body = ndjson(generated(response="The sky "), generated(response="is"))
    for size in (None, 1):
        turn = replay(body, provider="ollama", chunk_size=size).turn
        assert (turn.termination, turn.outcome, turn.text) == (
            Termination.ABRUPT,
            Outcome.PARTIAL,
            "The sky is",
        )


def test_load_is_a_finished_turn_without_text() -> None:
    body = ndjson(
        {"model": "llama3.2", "created_at": "t", "response": "", "done": True}
        | {"done_reason": "load"}
    )
    turn = replay(body).turn
    assert (turn.provider, turn.outcome, turn.text, turn.stop_reason) == (
        "ollama",
        Outcome.COMPLETE,
        "",
        "load",
    )


# -- the path, replay's CLI, inspect ---------------------------------------------------------


def test_the_generate_path_speaks_the_ollama_wire() -> None:
    for path in ("/api/generate", "/ollama/api/generate", "/api/generate/", "/api/generate?x=1"):
        found = spec_for_path(path)
        assert found is not None and found.name == "ollama"
        assert provider_for_path(path) == "ollama"
    assert provider_for_path("/api/generated") is None


def test_railings_replay_shows_the_text(tmp_path: Path) -> None:
    path = tmp_path / "generate.ndjson"
    path.write_bytes(body_of("ollama", ROWS["docs_generate_structured_stop.ndjson"]))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    env |= {"PYTHONPATH": SOURCE, "NO_COLOR": "1"}
    run = [sys.executable, "-m", "railings", "replay", str(path)]
    done = subprocess.run([*run, "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["provider"], report["outcome"], report["stop_reason"]) == (
        "ollama",
        "complete",
        "end_turn",
    )
    assert report["text"] == '{\n  "age": 22,\n  "available": true\n}'
    human = subprocess.run(run, capture_output=True, text=True, env=env, timeout=120)
    assert human.returncode == 0, human.stderr
    assert '"available": true' in human.stdout


def test_inspect_reads_a_generate_answer_and_its_chunks() -> None:
    (answer,) = [
        json.loads(x)
        for x in body_of("ollama", ROWS["docs_generate_structured_stop.ndjson"]).splitlines()
    ]
    _check(inspect(answer), CAPTURES["docs_generate_structured_stop.ndjson"])
    chunks = [
        json.loads(x)
        for x in body_of("ollama", ROWS["docs_generate_streaming.ndjson"]).splitlines()
    ]
    _check(inspect(chunks), CAPTURES["docs_generate_streaming.ndjson"])
    # A chunk from mid-stream: no proof, so interrupted, its text kept.
    turn = inspect(chunks[:1]).turn
    assert (turn.termination, turn.text) == (Termination.ABRUPT, "The")


# -- the scripted server and the fault proxy ------------------------------------------------

SCRIPT = {
    "seed": 5,
    "chunk_size": 4,
    "turns": [{"thinking": "Short.", "text": "The sky is blue because of Rayleigh scattering."}],
}
ASK = {"model": "llama3.2", "prompt": "Why is the sky blue?"}


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCRIPT) as srv:
        yield srv


def _post(url: str, body: dict[str, Any], fault: str = "none") -> httpx2.Response:
    headers = {"x-railings-fault": fault}
    with httpx2.Client() as client:
        return client.post(url + "/api/generate", json=body, headers=headers)


def _raw(url: str, body: dict[str, Any], fault: str = "none") -> bytes:
    out = bytearray()
    with httpx2.stream(
        "POST", url + "/api/generate", json=body, headers={"x-railings-fault": fault}
    ) as r:
        assert r.status_code == 200
        try:
            for data in r.iter_bytes():
                out += data
        except httpx2.RemoteProtocolError:
            pass
    return bytes(out)


def test_the_scripted_server_answers_generate_in_its_shape(server: ScriptedServer) -> None:
    body = _raw(server.url, ASK)
    lines = [json.loads(x) for x in body.splitlines()]
    assert all(set(line) >= {"model", "created_at", "response", "done"} for line in lines)
    assert not any("message" in line for line in lines)
    *streamed, last = lines
    assert all(line["done"] is False for line in streamed)
    assert "".join(line.get("thinking", "") for line in streamed) == "Short."
    assert "".join(line["response"] for line in streamed) == SCRIPT["turns"][0]["text"]
    assert last["done"] is True and last["done_reason"] == "stop" and last["response"] == ""
    assert {"context", "prompt_eval_count", "eval_count", "total_duration"} <= set(last)
    result = replay(body)
    assert (result.turn.provider, result.turn.outcome, result.turn.stop_reason) == (
        "ollama",
        Outcome.COMPLETE,
        "end_turn",
    )
    assert result.turn.text == SCRIPT["turns"][0]["text"] and result.turn.thinking == "Short."
    # Not streamed: the one done object, with the whole text.
    whole = _post(server.url, ASK | {"stream": False}).json()
    assert whole["done"] is True and whole["response"] == SCRIPT["turns"][0]["text"]
    assert whole["thinking"] == "Short."


def test_the_scripted_server_cuts_generate_at_num_predict(server: ScriptedServer) -> None:
    body = _raw(server.url, ASK | {"options": {"num_predict": 3}})
    last = json.loads(body.splitlines()[-1])
    assert (last["done_reason"], last["eval_count"]) == ("length", 3)
    turn = replay(body, max_tokens=3).turn
    assert (turn.stop_reason, turn.truncated, turn.outcome) == (
        "max_tokens",
        True,
        Outcome.COMPLETE,
    )
    assert len(turn.thinking) + len(turn.text) == 12  # 4 characters a token


def test_the_scripted_server_loads_on_an_empty_prompt(server: ScriptedServer) -> None:
    loaded = _post(server.url, {"model": "llama3.2"}).json()
    assert (loaded["response"], loaded["done"], loaded["done_reason"]) == ("", True, "load")
    unloaded = _post(server.url, {"model": "llama3.2", "keep_alive": 0}).json()
    assert unloaded["done_reason"] == "unload"
    assert _post(server.url, {"prompt": "x"}).status_code == 400


def test_the_fault_proxy_breaks_generate_streams(server: ScriptedServer) -> None:
    with FaultProxy(server.url) as proxy:
        clean = _raw(proxy.url, ASK).splitlines(keepends=True)
        seen = {
            fault: _raw(proxy.url, ASK, fault)
            for fault in (
                "drop_terminator",
                "truncate:events=3",
                "cut_mid_event:event=3",
                "corrupt:event=3,kind=json",
                "error_event:events=3",
            )
        }
        refused = _post(proxy.url, ASK, "status:code=503")
    # The proxy answers in Ollama's own shape: the path names the wire.
    assert refused.status_code == 503 and isinstance(refused.json()["error"], str)
    assert json.loads(clean[-1])["done"] is True
    assert seen["drop_terminator"] == b"".join(clean[:-1])  # the done line is the proof
    assert seen["truncate:events=3"] == b"".join(clean[:3])
    outcomes = {fault: replay(body, provider="ollama").turn for fault, body in seen.items()}
    for fault, turn in outcomes.items():
        assert turn.termination is Termination.ABRUPT, fault
        assert turn.outcome is Outcome.PARTIAL, fault  # thinking had arrived: billed
    assert "server busy" in (outcomes["error_event:events=3"].error.message or "")


def test_the_ollama_client_generates_through_the_proxy_and_inspect_judges_it(
    server: ScriptedServer,
) -> None:
    with FaultProxy(server.url) as proxy:
        whole = list(
            ollama.Client(host=proxy.url).generate(model="llama3.2", prompt="Why?", stream=True)
        )
        cut = list(
            ollama.Client(host=proxy.url, headers={"x-railings-fault": "drop_terminator"}).generate(
                model="llama3.2", prompt="Why?", stream=True
            )
        )
    judged = inspect(whole).turn
    assert (judged.provider, judged.outcome, judged.text) == (
        "ollama",
        Outcome.COMPLETE,
        SCRIPT["turns"][0]["text"],
    )
    assert judged.thinking == "Short."
    interrupted = inspect(cut).turn
    assert (interrupted.termination, interrupted.outcome) == (Termination.ABRUPT, Outcome.PARTIAL)
