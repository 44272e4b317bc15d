"""Bedrock ConverseStream: every capture to its manifest facts, split and cut; the frame
types, the exception map and the tool-input rule."""

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
from railings.classify import class_for_provider_type
from railings.errors import MalformedStream
from railings.events import (
    BilledOutput,
    MessageStart,
    ProviderErrorEvent,
    StopReason,
    TerminationProof,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unknown,
    UsageUpdate,
)
from railings.providers.bedrock.decoder import (
    ERROR_CLASSES,
    ERROR_STATUS,
    STOP_REASONS,
    BedrockStream,
    is_bedrock,
)
from railings.providers.bedrock.spec import SPEC
from railings.testing.eventstream import encode_message, event_frame, exception_frame
from railings.turn.model import Outcome
from railings.turn.verdict import Verdict, judge
from railings.wire.eventstream import CONTENT_TYPE

ROWS = manifest("bedrock")
IDS = [r["file"] for r in ROWS]


def frames(*events: tuple[str, dict[str, object]]) -> bytes:
    return b"".join(event_frame(kind, payload) for kind, payload in events)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_capture_decodes_to_its_manifest_facts(row: dict[str, str]) -> None:
    body = body_of("bedrock", row)
    stream = BedrockStream()
    events = [*stream.feed(body), *stream.close()]
    assert stream.frames_seen == int(row["events"])
    assert facts(events) == expected_facts(row)
    turn = turn_of("bedrock", events)
    if row["terminator"] == "messageStop":
        assert turn.outcome is Outcome.COMPLETE
        # toolUse.input is the model's own JSON text: strictly parsed, provable.
        for verdict in judge(turn):
            call = verdict.call
            assert call.origin == "raw" and call.provable and call.closed
            # An empty input is "no arguments" ({}) in a turn that was not cut.
            assert verdict.verdict is Verdict.EXECUTE
            assert verdict.arguments == (call.arguments if call.raw_arguments else {})
    else:
        assert turn.outcome is not Outcome.COMPLETE


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_same_events_byte_by_byte(row: dict[str, str]) -> None:
    body = body_of("bedrock", row)
    assert decode(BedrockStream, byte_by_byte(body)) == decode(BedrockStream, [body])


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_the_same_events_whatever_the_split(data: st.DataObject) -> None:
    row = data.draw(st.sampled_from(ROWS))
    body = body_of("bedrock", row)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=12)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert decode(BedrockStream, chunks) == decode(BedrockStream, [body])


@pytest.mark.parametrize(
    "row", [r for r in ROWS if r["terminator"] != "none"], ids=lambda r: r["file"]
)
def test_no_cut_before_the_proof_yields_it(row: dict[str, str]) -> None:
    body = body_of("bedrock", row)
    stop_end = _end_of_message_stop(body)
    bad = proofs_at_every_cut(BedrockStream, body)
    # Only cuts at or past the end of the messageStop frame carry the proof.
    assert bad == list(range(stop_end, len(body)))


def _end_of_message_stop(body: bytes) -> int:
    stream = BedrockStream()
    for end in range(1, len(body) + 1):
        if any(isinstance(e, TerminationProof) for e in stream.feed(body[end - 1 : end])):
            return end
    raise AssertionError("no messageStop")


def test_a_corrupted_crc_or_a_cut_frame_is_malformed() -> None:
    body = body_of("bedrock", ROWS[0])
    corrupted = bytearray(body)
    corrupted[-1] ^= 0xFF  # the last frame's message CRC
    stream = BedrockStream()
    events = stream.feed(bytes(corrupted))  # the frames before the bad one come out first
    assert any(isinstance(event, TerminationProof) for event in events)
    with pytest.raises(MalformedStream, match="checksum"):
        stream.close()
    stream = BedrockStream()
    stream.feed(body[:-3])
    with pytest.raises(MalformedStream, match="inside a frame"):
        stream.close()


def test_metadata_alone_is_no_proof_and_a_dropped_message_stop_leaves_the_turn_open() -> None:
    body = frames(
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("metadata", {"usage": {"inputTokens": 3, "outputTokens": 2}, "metrics": {}}),
    )
    events = decode(BedrockStream, [body])
    assert not any(isinstance(e, TerminationProof) for e in events)
    turn = turn_of("bedrock", events)
    assert turn.outcome is Outcome.PARTIAL and turn.text == "Hel"


def test_the_frame_decoding_table() -> None:
    body = frames(
        ("messageStart", {"p": "abc", "role": "assistant"}),
        (
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hm"}}},
        ),
        (
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig"}}},
        ),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"citation": {"title": "t"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"image": {}}}),
        (
            "contentBlockStart",
            {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}},
        ),
        ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"a":'}}}),
        ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": "1}"}}}),
        ("contentBlockStop", {"contentBlockIndex": 2}),
        ("contentBlockStart", {"contentBlockIndex": 3, "start": {"image": {}}}),
        ("somethingNew", {}),
        ("messageStop", {"stopReason": "tool_use"}),
    )
    assert decode(BedrockStream, [body]) == [
        MessageStart(id="", model=""),
        ThinkingDelta(text="hm"),
        ThinkingDelta(text="", signature="sig"),
        BilledOutput(name="bedrock:delta:citation"),
        Unknown(name="bedrock:delta:image"),
        ToolCallStart(index=0, id="t1", name="f"),
        ToolArgumentsDelta(index=0, fragment='{"a":'),
        ToolArgumentsDelta(index=0, fragment="1}"),
        ToolCallEnd(index=0),
        Unknown(name="bedrock:start:image"),
        Unknown(name="bedrock:somethingNew"),
        StopReason(wire="tool_use"),
        TerminationProof(marker="messageStop"),
    ]


def test_tool_input_is_raw_text_and_strict_parsing_applies() -> None:
    body = frames(
        (
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t", "name": "rm"}}},
        ),
        (
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"path": "/tmp/le'}}},
        ),
        ("messageStop", {"stopReason": "max_tokens"}),
    )
    turn = turn_of("bedrock", decode(BedrockStream, [body]))
    (call,) = turn.tool_calls
    assert call.raw_arguments == '{"path": "/tmp/le' and call.arguments is None
    assert not call.closed and turn.truncated and turn.stop_reason == "max_tokens"


@pytest.mark.parametrize("exception", sorted(ERROR_STATUS))
def test_exception_frames_are_typed_provider_errors(exception: str) -> None:
    body = exception_frame(exception, {"message": "it broke"})
    (event,) = decode(BedrockStream, [body])
    assert event == ProviderErrorEvent(
        message="it broke", provider_type=exception, status=ERROR_STATUS[exception]
    )
    # Classification as it stands reads the status; the provider spec's error map
    # (ERROR_CLASSES) is the intended class. They agree except where AWS documents a
    # status that undersells the exception (modelStreamErrorException: 424, "retry").
    cls = class_for_provider_type(event.provider_type, event.status)
    if exception != "modelStreamErrorException":
        assert cls.retryable == ERROR_CLASSES[exception].retryable
    assert ERROR_CLASSES["modelStreamErrorException"].retryable


def test_retryable_exceptions_are_the_ones_that_pass_with_time() -> None:
    retryable = {name for name, cls in ERROR_CLASSES.items() if cls.retryable}
    assert {
        "throttlingException",
        "serviceUnavailableException",
        "modelStreamErrorException",
        "internalServerException",
    } <= retryable
    assert not {"validationException", "accessDeniedException"} & retryable


def test_the_real_exception_frame_carries_the_model_status() -> None:
    (row,) = [r for r in ROWS if r["errors"] != "-"]
    (event,) = decode(BedrockStream, [body_of("bedrock", row)])
    assert isinstance(event, ProviderErrorEvent) and event.status == 500
    assert class_for_provider_type(event.provider_type, event.status).retryable
    turn = turn_of("bedrock", [event])
    assert turn.error is not None and turn.error.retryable


def test_error_frames_and_unknown_message_types() -> None:
    error = encode_message(
        {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"}
    )
    other = encode_message({":message-type": "ping"})
    assert decode(BedrockStream, [error + other]) == [
        ProviderErrorEvent(message="boom", provider_type="InternalFailure", status=None),
        Unknown(name="bedrock:message-type:ping"),
    ]


def test_a_payload_that_is_not_a_json_object_is_malformed() -> None:
    for payload in (b"not json", b"[1]", b"\xff\xfe"):
        frame = encode_message(
            {
                ":event-type": "messageStop",
                ":content-type": "application/json",
                ":message-type": "event",
            },
            payload,
        )
        with pytest.raises(MalformedStream):
            BedrockStream().feed(frame)


def test_usage_follows_the_proof_on_the_wire() -> None:
    (row,) = [r for r in ROWS if r["file"] == "max_tokens_text.bin"]
    events = decode(BedrockStream, [body_of("bedrock", row)])
    kinds = [type(e).__name__ for e in events[-3:]]
    assert kinds == ["StopReason", "TerminationProof", "UsageUpdate"]
    assert events[-1] == UsageUpdate(input_tokens=2, output_tokens=10)


def test_stop_reason_maps() -> None:
    for wire in (
        "end_turn",
        "tool_use",
        "max_tokens",
        "stop_sequence",
        "guardrail_intervened",
        "content_filtered",
        "model_context_window_exceeded",
        "malformed_tool_use",
    ):
        assert wire in STOP_REASONS
    assert STOP_REASONS["model_context_window_exceeded"] == "max_tokens"  # a cut: gate applies
    # The spelling the scripted server sends reads back as the stop reason it stands for.
    sent = ("end_turn", "tool_use", "max_tokens", "stop_sequence", "content_filter")
    for normalized in (*sent, "malformed_tool_use"):
        assert STOP_REASONS[str(SPEC.stop_reasons.to_wire(normalized))] == normalized


def test_detection() -> None:
    assert is_bedrock(CONTENT_TYPE)
    assert is_bedrock("application/vnd.amazon.eventstream; charset=utf-8")
    assert is_bedrock("application/octet-stream", event_frame("messageStart", {})[:12])
    assert not is_bedrock("text/event-stream", b"data: {}\n\n")
    assert json.loads(event_frame("messageStart", {"role": "assistant"})[-4 - 20 : -4]) == {
        "role": "assistant"
    }


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_only_railings_errors_escape_on_damaged_bytes(data: st.DataObject) -> None:
    read_damaged(data, "bedrock", ROWS, BedrockStream())


def test_every_capture_is_listed_once_with_its_source() -> None:
    assert_every_file_listed_once("bedrock")
