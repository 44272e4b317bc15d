"""The turn assembler, the termination proof, Empty / Partial and the tool-call verdicts."""

from __future__ import annotations

import json

import pytest

from railings import Outcome, RejectReason, Termination, replay
from railings.turn.profile import Evidence, Profile
from railings.turn.verdict import TRUNCATION_NOTICE
from streams import (
    anthropic_event,
    anthropic_tool_stream,
    openai_chunk,
    openai_text_stream,
    openai_tool_stream,
    sse,
)

FRAGMENT = '{"command": "rm -rf /tmp/leg'


def _split(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


# -- the half-written shell command ---------------------------------------------------------------


def test_seed_fragment_at_length_is_truncated_and_rejected() -> None:
    result = replay(openai_tool_stream(_split(FRAGMENT), "length"))
    turn = result.turn
    assert turn.termination is Termination.CLEAN
    assert turn.stop_reason == "max_tokens" and turn.stop_reason_wire == "length"
    assert turn.truncated
    (verdict,) = result.verdicts
    assert verdict.call.raw_arguments == FRAGMENT
    assert verdict.call.arguments is None  # the truncation sentinel
    assert not verdict.execute and verdict.reason is RejectReason.TRUNCATED
    assert verdict.notice == TRUNCATION_NOTICE.format(
        name="shell", id="call_1", stop_reason="max_tokens"
    )


def test_same_fragment_in_a_finished_turn_is_repaired_and_executed() -> None:
    result = replay(openai_tool_stream(_split(FRAGMENT), "tool_calls"))
    assert not result.turn.truncated
    (verdict,) = result.verdicts
    assert verdict.execute and verdict.repaired
    assert verdict.arguments == {"command": "rm -rf /tmp/leg"}


def test_anthropic_fragment_at_max_tokens_is_rejected() -> None:
    body = anthropic_tool_stream(_split(FRAGMENT), "max_tokens", block_stop=False)
    result = replay(body)
    assert result.turn.truncated and result.turn.complete
    assert result.verdicts[0].reason is RejectReason.TRUNCATED
    assert not result.verdicts[0].call.closed


def test_complete_call_in_a_truncated_turn_executes() -> None:
    """Only calls whose arguments failed to parse are stopped by the gate."""
    result = replay(openai_tool_stream(_split('{"command": "ls"}'), "length"))
    assert result.turn.truncated
    assert result.verdicts[0].execute and not result.verdicts[0].repaired


def test_empty_arguments_mean_empty_object_only_when_not_truncated() -> None:
    finished = replay(openai_tool_stream([], "tool_calls"))
    assert finished.verdicts[0].execute and finished.verdicts[0].arguments == {}
    cut = replay(openai_tool_stream([], "length"))
    assert cut.verdicts[0].reason is RejectReason.TRUNCATED


def test_unrepairable_arguments_are_malformed() -> None:
    result = replay(openai_tool_stream(["not json at all"], "tool_calls"))
    assert result.verdicts[0].reason is RejectReason.MALFORMED
    assert "NOT executed" in (result.verdicts[0].notice or "")


# -- proof before ending ----------------------------------------------------------------------


def test_clean_stream_is_complete() -> None:
    turn = replay(openai_text_stream(["Hello", " world"])).turn
    assert turn.outcome is Outcome.COMPLETE and turn.text == "Hello world"


def test_missing_done_is_partial_even_with_finish_reason() -> None:
    """A forged clean ending (finish_reason but no [DONE]) is not a finished turn."""
    turn = replay(openai_text_stream(["Hello"], "stop", done=False)).turn
    assert turn.termination is Termination.ABRUPT and turn.outcome is Outcome.PARTIAL
    assert turn.error is not None and turn.error.kind.value == "interrupted"
    assert not turn.error.retryable  # content arrived: already billed


def test_cut_after_empty_first_chunk_is_empty() -> None:
    """OpenAI's first chunk carries content "": not content, so the turn is Empty (resendable)."""
    body = openai_chunk({"role": "assistant", "content": ""})
    turn = replay(body).turn
    assert turn.outcome is Outcome.EMPTY
    assert turn.error is not None and turn.error.retryable


def test_nothing_received_is_empty() -> None:
    turn = replay(b"").turn
    assert turn.outcome is Outcome.EMPTY and turn.termination is Termination.ABRUPT


def test_interrupted_call_is_rejected_even_if_json_parsed() -> None:
    result = replay(openai_tool_stream(['{"command": "ls"}'], "tool_calls", done=False))
    assert result.verdicts[0].call.arguments == {"command": "ls"}
    assert result.verdicts[0].reason is RejectReason.INTERRUPTED


def test_data_after_proof_is_ignored() -> None:
    body = openai_text_stream(["a"]) + openai_chunk({"content": "LATE"}) + b"garbage"
    turn = replay(body).turn
    assert turn.complete and turn.text == "a"


def test_invalid_json_ends_the_turn_abruptly_and_nothing_after_applies() -> None:
    body = openai_chunk({"content": "a"}) + b"data: {not json\n\n" + openai_text_stream(["b"])
    turn = replay(body).turn
    assert turn.termination is Termination.ABRUPT and turn.text == "a"
    assert turn.error is not None and turn.error.kind.value == "malformed_stream"


def test_anthropic_error_event_is_a_typed_provider_error() -> None:
    body = anthropic_event(
        {
            "type": "message_start",
            "message": {"id": "m", "model": "c", "usage": {"input_tokens": 1, "output_tokens": 1}},
        }
    ) + anthropic_event(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    turn = replay(body).turn
    assert turn.outcome is Outcome.EMPTY
    assert turn.error is not None
    assert (turn.error.kind.value, turn.error.provider_type, turn.error.retryable) == (
        "provider_error",
        "overloaded_error",
        True,
    )


def test_openai_error_object_keeps_finish_and_usage_of_its_chunk() -> None:
    body = openai_chunk({"content": "x"}) + sse(
        {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 9},
            "error": {"code": 400, "message": "Token limit reached"},
        }
    )
    turn = replay(body + b"data: [DONE]\n\n").turn
    assert turn.termination is Termination.ABRUPT
    assert turn.stop_reason_wire == "length"
    assert turn.usage is not None and turn.usage.output_tokens == 9


# -- stop reasons -----------------------------------------------------------------------------


def test_stop_reason_derived_from_usage_at_the_limit() -> None:
    body = openai_tool_stream(_split(FRAGMENT), None, usage=(10, 64))
    result = replay(body, max_tokens=64)
    turn = result.turn
    assert turn.stop_reason == "max_tokens" and turn.stop_reason_source == "derived"
    assert turn.truncated and result.verdicts[0].reason is RejectReason.TRUNCATED


def test_stop_reason_derived_tool_use_and_end_turn() -> None:
    assert (
        replay(openai_tool_stream(['{"a": 1}'], None), max_tokens=64).turn.stop_reason == "tool_use"
    )
    turn = replay(openai_text_stream(["hi"], None), max_tokens=64).turn
    assert (turn.stop_reason, turn.stop_reason_source) == ("end_turn", "derived")


def test_a_cut_call_stays_truncated_for_a_service_that_misreports_length() -> None:
    body = openai_tool_stream(_split(FRAGMENT), "length")
    assert replay(body).turn.truncated
    evidence = {"misreports_length": Evidence(observed="o", seen=1, date="d", source="s")}
    profile = Profile(name="acme", misreports_length=True, evidence=evidence)
    turn = replay(body, profile=profile).turn
    assert turn.stop_reason == "max_tokens" and turn.truncated


# -- tool-call shapes real providers send -------------------------------------------------------


def test_several_whole_calls_at_index_zero_are_split_by_id() -> None:
    calls = [
        {
            "index": 0,
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "f", "arguments": json.dumps({"i": i})},
        }
        for i in range(3)
    ]
    body = b"".join(openai_chunk({"tool_calls": [c]}) for c in calls)
    turn = replay(body + openai_chunk({}, "tool_calls") + b"data: [DONE]\n\n").turn
    assert [c.arguments for c in turn.tool_calls] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert [c.index for c in turn.tool_calls] == [0, 1, 2]


def test_interleaved_parallel_calls_by_index() -> None:
    def frag(i: int, text: str, start: bool = False) -> bytes:
        call: dict[str, object] = {"index": i, "function": {"arguments": text}}
        if start:
            call.update(id=f"c{i}", type="function")
            call["function"] = {"name": f"f{i}", "arguments": text}
        return openai_chunk({"tool_calls": [call]})

    body = frag(0, '{"a"', True) + frag(1, '{"b"', True) + frag(0, ": 1}") + frag(1, ": 2}")
    turn = replay(body + openai_chunk({}, "tool_calls") + b"data: [DONE]\n\n").turn
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("f0", {"a": 1}), ("f1", {"b": 2})]


def test_unknown_events_and_deltas_are_counted_not_fatal() -> None:
    body = anthropic_tool_stream(['{"x": 1}'], "tool_use")
    body = body.replace(
        b"event: message_stop",
        anthropic_event({"type": "brand_new_event", "x": 1}) + b"event: message_stop",
    )
    turn = replay(body).turn
    assert turn.complete and turn.unknown_events == 1


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13])
def test_verdict_is_chunk_invariant(size: int) -> None:
    body = openai_tool_stream(_split(FRAGMENT), "length")
    assert replay(body, chunk_size=size).verdicts == replay(body).verdicts


@pytest.mark.parametrize("size", [None, 1, 3])
def test_invalid_utf8_ends_the_turn_as_malformed(size: int | None) -> None:
    """WHATWG would decode it as U+FFFD; a provider never sends it, so it is corruption."""
    corrupt = b'data: {"choices": [{"index": 0, "delta": {"content": "caf\xc3\x28"}}]}\n\n'
    body = openai_chunk({"content": "ok "}) + corrupt
    turn = replay(body + openai_text_stream(["more"]), chunk_size=size).turn
    assert turn.termination is Termination.ABRUPT and turn.outcome is Outcome.PARTIAL
    assert turn.text == "ok "
    assert turn.error is not None and turn.error.kind.value == "malformed_stream"


def test_valid_replacement_character_is_text() -> None:
    turn = replay(openai_text_stream(["\ufffd is fine"])).turn
    assert turn.complete and turn.text == "\ufffd is fine"
