"""Ollama /api/chat: every capture to its manifest facts, split and cut; the NDJSON line
splitter (bounded), the message table, done as the proof."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _formats import (
    assert_every_file_listed_once,
    body_of,
    byte_by_byte,
    decode,
    expected_facts,
    facts,
    manifest,
    proofs_at_every_cut,
    read_damaged,
    turn_of,
)
from railings.errors import (
    ConfigurationError,
    EventTooLarge,
    IllegalTransition,
    MalformedStream,
)
from railings.events import (
    MessageStart,
    ProviderErrorEvent,
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
from railings.providers.ollama.decoder import (
    CONTENT_TYPE,
    STOP_REASONS,
    NDJSONDecoder,
    OllamaStream,
    is_ollama,
)
from railings.providers.ollama.spec import SPEC
from railings.turn.model import Outcome
from railings.turn.verdict import RejectReason, Verdict, judge

ROWS = manifest("ollama")
IDS = [r["file"] for r in ROWS]


def ndjson(*objects: object) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objects)


def line(done: bool = False, **message: object) -> dict[str, object]:
    return {
        "model": "m",
        "created_at": "t",
        "message": {"role": "assistant", **message},
        "done": done,
    }


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_capture_decodes_to_its_manifest_facts(row: dict[str, str]) -> None:
    body = body_of("ollama", row)
    stream = OllamaStream()
    events = [*stream.feed(body), *stream.close()]
    assert stream.lines_seen == int(row["events"])
    assert facts(events) == expected_facts(row)
    turn = turn_of("ollama", events)
    assert turn.outcome is Outcome.COMPLETE
    for call in turn.tool_calls:  # whole, parsed by the server: marked so
        assert call.origin == "parsed" and not call.provable and call.closed
    if row["final_stop_reason"] == "none":
        assert turn.stop_reason_source == "derived" and turn.stop_reason == "end_turn"


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_same_events_byte_by_byte(row: dict[str, str]) -> None:
    body = body_of("ollama", row)
    assert decode(OllamaStream, byte_by_byte(body)) == decode(OllamaStream, [body])


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_the_same_events_whatever_the_split(data: st.DataObject) -> None:
    body = body_of("ollama", data.draw(st.sampled_from(ROWS)))
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=12)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert decode(OllamaStream, chunks) == decode(OllamaStream, [body])


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_no_cut_before_the_done_line_yields_the_proof(row: dict[str, str]) -> None:
    body = body_of("ollama", row)
    # The done line's closing brace is its proof: only the cut that drops just its LF
    # still carries it (the object is whole), never one inside it.
    assert proofs_at_every_cut(OllamaStream, body) == [len(body) - 1]


def test_the_capture_parts() -> None:
    (row,) = [r for r in ROWS if r["tool_calls"] == "2"]
    turn = turn_of("ollama", decode(OllamaStream, [body_of("ollama", row)]))
    assert turn.thinking.startswith("The user wants me to read two Java files")
    assert "\n\n1. " in turn.thinking  # the JSON escapes became newlines
    assert [(c.id, c.name) for c in turn.tool_calls] == [
        ("call_trmym6vj", "read_file_content"),
        ("call_24957ol8", "read_file_content"),
    ]
    assert turn.stop_reason == "tool_use" and turn.usage is not None
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (557, 213)


def test_length_is_the_output_limit_cut_and_parsed_calls_never_run() -> None:
    body = ndjson(
        line(tool_calls=[{"function": {"name": "rm", "arguments": {"path": "/tmp/x"}}}]),
        {**line(True), "done_reason": "length", "eval_count": 8},
    )
    turn = turn_of("ollama", decode(OllamaStream, [body]), max_tokens=8)
    assert turn.truncated and turn.stop_reason == "max_tokens"
    (verdict,) = judge(turn)
    assert verdict.verdict is Verdict.REJECT and verdict.reason is RejectReason.TRUNCATED


def test_the_message_table() -> None:
    body = ndjson(
        line(content="", thinking="hm"),
        line(content="Hi", images=None),
        line(content="", images=["AAAA"], tool_name="x"),
        line(tool_calls=[{"function": {"name": "f", "arguments": '{"a":1}'}}, {"oops": 1}]),
        {**line(True, content=""), "done_reason": "stop", "prompt_eval_count": 3, "eval_count": 2},
    )
    assert decode(OllamaStream, [body]) == [
        MessageStart(id="", model="m"),
        ThinkingDelta(text="hm"),
        TextDelta(text="Hi"),
        Unknown(name="ollama:message:images"),
        Unknown(name="ollama:message:tool_name"),
        ToolCallStart(index=0, id="", name="f"),
        # Arguments sent as text by a compatible server are that text, not parsed.
        ToolArgumentsDelta(index=0, fragment='{"a":1}', parsed=False),
        ToolCallEnd(index=0),
        Unknown(name="ollama:tool_call"),
        UsageUpdate(input_tokens=3, output_tokens=2),
        StopReason(wire="stop"),
        TerminationProof(marker="done"),
    ]


def test_an_error_line_is_a_provider_error() -> None:
    body = ndjson(
        line(content="Hel"), {"error": "an error was encountered while running the model"}
    )
    events = decode(OllamaStream, [body])
    assert events[-1] == ProviderErrorEvent(
        message="an error was encountered while running the model", provider_type=None
    )
    assert turn_of("ollama", events).outcome is Outcome.PARTIAL


def test_a_line_that_is_not_an_object_is_malformed() -> None:
    for bad in (b"[1]\n", b"not json\n", b'{"cut": tr'):
        stream = OllamaStream()
        with pytest.raises(MalformedStream):
            stream.feed(bad)
            stream.close()


def test_the_line_splitter() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a":1}\r\n\n  \n{"b"') == ['{"a":1}']
    assert decoder.pending
    assert decoder.feed(b":2}\n") == ['{"b":2}']
    assert not decoder.pending
    assert decoder.feed(b'{"c":3}') == []
    assert decoder.close() == ['{"c":3}']  # the last line without its LF
    assert decoder.close() == []
    with pytest.raises(IllegalTransition):
        decoder.feed(b"")
    assert NDJSONDecoder().close() == []
    with pytest.raises(MalformedStream):
        NDJSONDecoder().feed(b"\xff\xfe\n")
    with pytest.raises(ConfigurationError):
        NDJSONDecoder(max_line_size=0)


def test_the_line_splitter_is_bounded() -> None:
    decoder = NDJSONDecoder(max_line_size=8)
    assert decoder.feed(b"12345678\n") == ["12345678"]
    decoder.feed(b"1234")
    with pytest.raises(EventTooLarge) as caught:
        decoder.feed(b"56789")  # past the bound before any LF: raised at once
    assert caught.value.limit == 8
    with pytest.raises(IllegalTransition):
        decoder.feed(b"\n")
    with pytest.raises(EventTooLarge):
        NDJSONDecoder(max_line_size=8).feed(b"123456789\n")


def test_stop_reason_maps() -> None:
    assert STOP_REASONS["length"] == "max_tokens" and STOP_REASONS["stop"] == "end_turn"
    for normalized in ("end_turn", "tool_use", "max_tokens"):
        wire = str(SPEC.stop_reasons.to_wire(normalized))
        assert STOP_REASONS[wire] == ("end_turn" if normalized == "tool_use" else normalized)


def test_detection() -> None:
    assert is_ollama(CONTENT_TYPE)
    assert all(is_ollama("application/json", body_of("ollama", r).split(b"\n")[0]) for r in ROWS)
    assert not is_ollama("text/event-stream", b'data: {"model":"x"}')
    assert not is_ollama("application/json", b'{"id":"chatcmpl-1"}')


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_only_railings_errors_escape_on_damaged_bytes(data: st.DataObject) -> None:
    read_damaged(data, "ollama", ROWS, OllamaStream())


def test_every_capture_is_listed_once_with_its_source() -> None:
    assert_every_file_listed_once("ollama")


def test_fields_beyond_the_tables_are_counted_never_dropped_silently() -> None:
    body = ndjson({**line(True, content="a"), "eval_duration": 1, "brand_new": 2})
    events = decode(OllamaStream, [body])
    assert [e.name for e in events if isinstance(e, Unknown)] == ["ollama:brand_new"]
