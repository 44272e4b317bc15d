"""Gemini streamGenerateContent: every capture to its manifest facts, split and cut; the
proof rule (the last event's finishReason), parts, streamed arguments, the JSON body."""

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
from railings.errors import EventTooLarge, MalformedStream
from railings.events import (
    MessageStart,
    ProviderErrorEvent,
    StopReason,
    StreamEvent,
    TerminationProof,
    TextDelta,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unknown,
    UsageUpdate,
)
from railings.providers.gemini.args import PartialArguments
from railings.providers.gemini.decoder import (
    STOP_REASONS,
    GeminiDecoder,
    GeminiStream,
    decode_body,
    is_gemini,
)
from railings.providers.gemini.spec import SPEC
from railings.turn.model import Outcome
from railings.turn.verdict import RejectReason, Verdict, judge
from railings.wire.sse import ServerSentEvent

ROWS = manifest("gemini")
IDS = [r["file"] for r in ROWS]


def sse(*objects: object) -> bytes:
    return b"".join(
        f"data: {o if isinstance(o, str) else json.dumps(o)}\n\n".encode() for o in objects
    )


def chunk(
    *parts: dict[str, object], finish: str | None = None, **extra: object
) -> dict[str, object]:
    candidate: dict[str, object] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], **extra}


def events_of(body: bytes) -> list[StreamEvent]:
    return decode(GeminiStream, [body])


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_capture_decodes_to_its_manifest_facts(row: dict[str, str]) -> None:
    body = body_of("gemini", row)
    events = events_of(body)
    assert facts(events) == expected_facts(row)
    assert body.count(b"\n\n") == int(row["events"])
    turn = turn_of("gemini", events)
    assert turn.outcome is Outcome.COMPLETE
    assert turn.truncated == (row["final_stop_reason"] == "MAX_TOKENS")
    # Calls arrive already parsed: their origin is marked, they prove nothing themselves.
    for call in turn.tool_calls:
        assert call.origin == "parsed" and not call.provable
        assert call.closed and isinstance(call.arguments, dict)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_same_events_byte_by_byte(row: dict[str, str]) -> None:
    body = body_of("gemini", row)
    assert decode(GeminiStream, byte_by_byte(body)) == events_of(body)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_the_same_events_whatever_the_split(data: st.DataObject) -> None:
    body = body_of("gemini", data.draw(st.sampled_from(ROWS)))
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=12)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert decode(GeminiStream, chunks) == events_of(body)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_no_cut_yields_the_proof(row: dict[str, str]) -> None:
    # The proof is the last whole event's: any cut before the body's end loses it.
    assert proofs_at_every_cut(GeminiStream, body_of("gemini", row)) == []


def test_the_turns_keep_their_parts() -> None:
    by_name = {r["file"]: body_of("gemini", r) for r in ROWS}
    thinking = turn_of("gemini", events_of(by_name["reasoning_thought_parts_gemini_2_5_flash.sse"]))
    assert thinking.thinking.startswith("I need to count") and thinking.text.startswith("There are")
    signed = turn_of("gemini", events_of(by_name["tool_call_gemini_3_pro.sse"]))
    assert signed.thinking_signature.startswith("EpEgCo4gAb4")  # kept to go back with the call
    (call,) = signed.tool_calls
    assert (call.name, call.arguments) == ("weather", {"location": "San Francisco"})
    nested = turn_of("gemini", events_of(by_name["streamed_args_nested_vertex_gemini_3_1_pro.sse"]))
    (recipe,) = nested.tool_calls
    assert recipe.arguments is not None
    steps = recipe.arguments["recipe"]["steps"]
    assert steps[1].endswith("drain and set aside.")  # a string continued across fragments
    assert recipe.arguments["recipe"]["ingredients"][0] == {
        "amount": "16 oz",
        "name": "Lasagna noodles",
    }
    array = turn_of("gemini", events_of(by_name["streamed_args_array_gemini_3_flash.sse"]))
    assert array.tool_calls[0].arguments == {
        "operations": [
            {
                "action": "add",
                "description": "Fresh red apple",
                "itemid": "apple_001",
                "price": 0.5,
            },
            {
                "action": "add",
                "description": "Ripe yellow banana",
                "itemid": "banana_001",
                "price": 0.3,
            },
        ]
    }
    two = turn_of("gemini", events_of(by_name["streamed_args_two_calls_gemini_3_1_pro.sse"]))
    assert [c.arguments for c in two.tool_calls] == [
        {"location": "Boston"},
        {"location": "San Francisco"},
    ]
    blocked = turn_of("gemini", events_of(by_name["prompt_blocked_gemini_3_7_flash.sse"]))
    assert blocked.outcome is Outcome.COMPLETE and blocked.text == ""


def test_a_cut_max_tokens_turn_never_executes_its_parsed_calls() -> None:
    body = sse(
        chunk({"functionCall": {"name": "rm", "args": {"path": "/tmp/x"}}}, finish="MAX_TOKENS")
    )
    turn = turn_of("gemini", events_of(body))
    assert turn.truncated
    (verdict,) = judge(turn)
    assert verdict.verdict is Verdict.REJECT and verdict.reason is RejectReason.TRUNCATED


def test_stop_on_every_chunk_keeps_the_whole_answer() -> None:
    # Translation proxies stamp STOP on chunks that are not the last (module docstring):
    # only the last event's finishReason is the proof, so nothing after a stray STOP is lost.
    body = sse(
        chunk(finish="STOP"),
        chunk({"text": "Hello"}, finish="STOP"),
        chunk({"text": ", world"}, finish="STOP"),
    )
    turn = turn_of("gemini", events_of(body))
    assert turn.outcome is Outcome.COMPLETE and turn.text == "Hello, world"


def test_a_stop_followed_by_content_and_a_cut_is_not_complete() -> None:
    body = sse(chunk({"text": "Hel"}, finish="STOP"), chunk({"text": "lo"}))
    events = events_of(body)
    assert not any(isinstance(e, TerminationProof) for e in events)
    assert turn_of("gemini", events).outcome is Outcome.PARTIAL


def test_usage_after_the_stop_keeps_the_proof() -> None:
    body = sse(
        chunk({"text": "Hi"}, finish="STOP"),
        {"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}},
    )
    events = events_of(body)
    # The stop is reported where it arrived; the proof, at the end, once nothing followed.
    assert events[-3:] == [
        StopReason(wire="STOP"),
        UsageUpdate(input_tokens=3, output_tokens=1),
        TerminationProof(marker="finishReason"),
    ]


def test_unspecified_is_no_stop_and_no_finish_is_interrupted() -> None:
    body = sse(chunk({"text": "a"}, finish="FINISH_REASON_UNSPECIFIED"))
    assert not any(isinstance(e, TerminationProof) for e in events_of(body))
    # A last chunk without finishReason (seen on pure-thinking turns) has no proof.
    body = sse(
        chunk({"text": "thinking", "thought": True}, usageMetadata={"thoughtsTokenCount": 9})
    )
    assert turn_of("gemini", events_of(body)).outcome is Outcome.PARTIAL


def test_the_part_table() -> None:
    body = sse(
        {"responseId": "r1", "modelVersion": "gemini-x", **chunk({"text": ""})},
        chunk(
            {"text": "think", "thought": True, "thoughtSignature": "s1"},
            {"inlineData": {"mimeType": "image/png", "data": "AA=="}},
            {"executableCode": {"code": "1"}},
            {"thoughtSignature": "s2"},
            {"text": "a", "functionCall": {"name": "f"}},
        ),
        chunk({"text": "done", "thoughtSignature": "s3"}, finish="STOP"),
        "[DONE]",
    )
    assert events_of(body) == [
        MessageStart(id="r1", model="gemini-x"),
        ThinkingDelta(text="think", signature="s1"),
        Unknown(name="gemini:part:inlineData"),
        Unknown(name="gemini:part:executableCode"),
        ThinkingDelta(text="", signature="s2"),
        Unknown(name="gemini:part:functionCall,text"),
        TextDelta(text="done"),
        ThinkingDelta(text="", signature="s3"),
        StopReason(wire="STOP"),
        TerminationProof(marker="finishReason"),
    ]


def test_the_data_done_trailer_is_read_past() -> None:
    decoder = GeminiDecoder()
    assert decoder.feed(ServerSentEvent(event="message", data="[DONE]", id="", retry=None)) == []


def test_other_candidates_are_counted_not_read() -> None:
    body = sse(
        {
            "candidates": [
                {
                    "index": 1,
                    "content": {"parts": [{"text": "other"}]},
                    "finishReason": "MAX_TOKENS",
                },
                {"index": 0, "content": {"parts": [{"text": "mine"}]}, "finishReason": "STOP"},
            ]
        }
    )
    stream = GeminiStream()
    events = [*stream.feed(body), *stream.close()]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["mine"]
    assert StopReason(wire="STOP") in events
    second = GeminiStream(candidate=1)
    assert TextDelta(text="other") in [*second.feed(body), *second.close()]


def test_an_error_event_is_a_typed_provider_error() -> None:
    body = sse(
        chunk({"text": "Hel"}),
        {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}},
    )
    events = events_of(body)
    assert events[-1] == ProviderErrorEvent(
        message="The model is overloaded.", provider_type="UNAVAILABLE", status=503
    )
    turn = turn_of("gemini", events)
    # Classified by status and code: UNAVAILABLE / 503 passes with time. Content had
    # arrived, so the turn is Partial (billed: never resent automatically).
    assert turn.error is not None and turn.error.retryable
    assert turn.outcome is Outcome.PARTIAL


def test_streamed_arguments_cut_mid_call_leave_the_call_open() -> None:
    body = sse(
        chunk({"functionCall": {"name": "w", "willContinue": True}}),
        chunk(
            {
                "functionCall": {
                    "partialArgs": [{"jsonPath": "$.a", "stringValue": "x", "willContinue": True}],
                    "willContinue": True,
                }
            }
        ),
    )
    turn = turn_of("gemini", events_of(body))
    (call,) = turn.tool_calls
    assert not call.closed and call.arguments is None and turn.outcome is Outcome.PARTIAL


def test_a_streamed_call_never_ended_is_never_run() -> None:
    opened = chunk({"functionCall": {"name": "w", "willContinue": True}})
    fragment = {"jsonPath": "$.path", "stringValue": "/tmp", "willContinue": True}
    for last in (
        # The stop arrives while the call still says it continues.
        chunk({"functionCall": {"partialArgs": [fragment], "willContinue": True}}, finish="STOP"),
        # The call ends, but a string value was left waiting for its continuation.
        chunk({"functionCall": {"partialArgs": [fragment]}}, finish="STOP"),
    ):
        events = events_of(sse(opened, last))
        turn = turn_of("gemini", events)
        assert turn.outcome is Outcome.COMPLETE
        (call,) = turn.tool_calls
        assert call.closed and call.arguments is None
        assert json.loads(call.raw_arguments) == [fragment]
        (verdict,) = judge(turn)
        assert verdict.verdict is Verdict.REJECT and verdict.reason is RejectReason.MALFORMED


def test_unreadable_streamed_arguments_are_never_guessed() -> None:
    for fragment in (
        {"jsonPath": "a.b", "stringValue": "x"},  # not a JSONPath from the root
        {"jsonPath": "$.a[3]", "numberValue": 1},  # an array gap
        {"jsonPath": "$.a", "stringValue": "x", "numberValue": 2},  # two values
        {"jsonPath": "$.a"},  # no value
    ):
        arguments = PartialArguments()
        arguments.add([fragment])
        assert arguments.json() is None, fragment
    arguments = PartialArguments()
    arguments.add(
        [
            {"jsonPath": "$['odd key'].list[0]", "boolValue": True},
            {"jsonPath": "$['odd key'].list[1]", "nullValue": None},
        ]
    )
    assert json.loads(arguments.json() or "") == {"odd key": {"list": [True, None]}}
    body = sse(
        chunk({"functionCall": {"name": "w", "willContinue": True}}),
        chunk(
            {"functionCall": {"partialArgs": [{"jsonPath": "nope", "stringValue": "x"}]}},
            finish="STOP",
        ),
    )
    events = events_of(body)
    assert Unknown(name="gemini:partialArgs:unreadable") in events
    (call,) = turn_of("gemini", events).tool_calls
    assert call.arguments is None and call.closed
    (verdict,) = judge(turn_of("gemini", events))
    assert verdict.verdict is Verdict.REJECT and verdict.reason is RejectReason.MALFORMED
    assert json.loads(call.raw_arguments) == [{"jsonPath": "nope", "stringValue": "x"}]


def test_a_whole_call_without_args_has_empty_arguments() -> None:
    events = events_of(sse(chunk({"functionCall": {"name": "ping", "id": "c1"}}, finish="STOP")))
    assert events[:3] == [
        ToolCallStart(index=0, id="c1", name="ping"),
        ToolArgumentsDelta(index=0, fragment="{}", parsed=True),
        ToolCallEnd(index=0),
    ]


def test_the_json_array_body() -> None:
    row = next(r for r in ROWS if r["file"] == "tool_call_gemini_3_pro.sse")
    body = body_of("gemini", row)
    objects = [json.loads(line[6:]) for line in body.decode().split("\n\n") if line]
    array = json.dumps(objects).encode()
    # The same events as the stream, the proof included.
    assert decode_body(array) == events_of(body)
    assert decode_body(json.dumps(objects[-1]).encode())[-1] == TerminationProof(
        marker="finishReason"
    )
    for cut in range(len(array) - 1):
        with pytest.raises(MalformedStream):
            decode_body(array[:cut])
    with pytest.raises(MalformedStream):
        decode_body(b"[1]")
    with pytest.raises(MalformedStream):
        decode_body(b"\xff")
    with pytest.raises(EventTooLarge):
        decode_body(array, max_size=10)


def test_stop_reason_maps() -> None:
    for wire in (
        "STOP",
        "MAX_TOKENS",
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "MALFORMED_FUNCTION_CALL",
        "OTHER",
    ):
        assert wire in STOP_REASONS
    assert STOP_REASONS["MAX_TOKENS"] == "max_tokens"
    assert STOP_REASONS["OTHER"] == "other"
    sent = ("end_turn", "tool_use", "max_tokens", "content_filter", "malformed_tool_use")
    for normalized in sent:
        wire = str(SPEC.stop_reasons.to_wire(normalized))
        assert STOP_REASONS[wire] == ("end_turn" if normalized == "tool_use" else normalized)


def test_detection() -> None:
    def first(data: str) -> ServerSentEvent:
        return ServerSentEvent(event="message", data=data, id="", retry=None)

    assert all(is_gemini(first(body_of("gemini", r).decode().split("\n")[0][6:])) for r in ROWS)
    assert not is_gemini(first('{"id":"chatcmpl-1","choices":[]}'))
    assert not is_gemini(first('{"type":"message_start","message":{}}'))
    assert not is_gemini(first("[DONE]"))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_only_railings_errors_escape_on_damaged_bytes(data: st.DataObject) -> None:
    read_damaged(data, "gemini", ROWS, GeminiStream())


def test_every_capture_is_listed_once_with_its_source() -> None:
    assert_every_file_listed_once("gemini")


def test_fields_beyond_the_tables_are_counted_never_dropped_silently() -> None:
    body = sse(
        {
            "responseId": "r",
            "somethingNew": 1,
            "candidates": [
                {
                    "index": 0,
                    "content": {"parts": [{"text": "a"}]},
                    "safetyRatings": [],
                    "groundingMetadata": {},
                    "newCandidateField": {},
                    "finishReason": "STOP",
                }
            ],
        }
    )
    events = events_of(body)
    assert [e.name for e in events if isinstance(e, Unknown)] == [
        "gemini:somethingNew",
        "gemini:candidate:newCandidateField",
    ]
    assert turn_of("gemini", events).unknown_events == 2
