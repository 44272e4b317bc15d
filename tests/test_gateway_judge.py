"""The gateway's per-stream judge, sans-IO: every capture of the corpus, whole, byte by
byte and in arbitrary splits, and each way a stream can end."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _server import sse
from railings.gateway.judge import Ending, StreamJudge
from railings.gateway.shapes import CUT_CODE, INTERRUPTED_CODE
from railings.replay import replay
from railings.turn.model import Outcome
from railings.turn.verdict import RejectReason
from tests.conftest import REAL, RESPONSES

CAPTURES = sorted(REAL.rglob("*.sse")) + sorted(RESPONSES.glob("*.sse"))
PROVIDER = {"openai": "openai", "anthropic": "anthropic"}


def _provider(path: object) -> str:
    text = str(path)
    if "/responses/" in text:
        return "openai-responses"
    return "anthropic" if "/anthropic/" in text else "openai"


def run(provider: str, pieces: list[bytes], *, refuse: bool = True) -> tuple[bytes, StreamJudge]:
    judge = StreamJudge(provider, refuse_cut_calls=refuse)
    out = [judge.feed(piece) for piece in pieces]
    out.append(judge.close())
    return b"".join(out), judge


def _splits(body: bytes) -> list[list[bytes]]:
    return [[body], [body[i : i + 1] for i in range(len(body))], [body[:7], body[7:]]]


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_every_capture_is_judged_as_the_core_judges_it(path: object) -> None:
    body = path.read_bytes()  # type: ignore[attr-defined]
    provider = _provider(path)
    core = replay(body, provider=provider)
    cut_verdicts = [v for v in core.verdicts if v.reason is RejectReason.TRUNCATED]
    cut = bool(cut_verdicts)
    for pieces in _splits(body):
        out, judge = run(provider, pieces)
        if core.turn.outcome is Outcome.COMPLETE and not cut:
            assert judge.ending is Ending.COMPLETE
            assert out == body  # byte for byte
        elif core.turn.outcome is Outcome.COMPLETE:
            assert judge.ending is Ending.REFUSED
            at = out.rfind(b'data: {"error"' if provider == "openai" else b"event: error")
            assert body.startswith(out[:at])  # everything before the proof, unchanged
            assert b"cut by the output limit" in out[at:] and out.endswith(b"\n\n")
            # Not one event of a cut call (nor of anything after it) reached the client.
            sent = replay(out[:at], provider=provider).turn.tool_calls
            assert len(sent) <= min(v.call.index for v in core.verdicts if v in cut_verdicts)
        else:
            assert judge.ending in (Ending.PARTIAL, Ending.EMPTY)
        passed, _ = run(provider, pieces, refuse=False)
        if core.turn.outcome is Outcome.COMPLETE:
            assert passed == body  # --cut-calls pass: unchanged


OPENAI = (
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
)
TEXT = (
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
    b'"delta":{"content":"Hello"},"finish_reason":null}]}\n\n'
)
STOP = (
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
    b'"delta":{},"finish_reason":"stop"}]}\n\n'
)
DONE = b"data: [DONE]\n\n"


def test_nothing_leaves_before_content_and_an_empty_stream_is_for_resending() -> None:
    judge = StreamJudge("openai")
    assert judge.feed(OPENAI) == b""  # the role chunk is held back
    assert judge.close() == b""
    assert judge.ending is Ending.EMPTY and not judge.committed


def test_content_releases_the_held_events_in_order() -> None:
    judge = StreamJudge("openai")
    assert judge.feed(OPENAI) == b""
    assert judge.feed(TEXT) == OPENAI + TEXT
    assert judge.feed(STOP + DONE + b": trailing\n") == STOP + DONE + b": trailing\n"
    assert judge.ending is Ending.COMPLETE
    assert judge.feed(b"more after the proof") == b"more after the proof"


def test_an_unfinished_event_waits_for_its_blank_line() -> None:
    judge = StreamJudge("openai")
    judge.feed(OPENAI)
    assert judge.feed(TEXT[:20]) == b""
    assert judge.feed(TEXT[20:]) == OPENAI + TEXT


def test_partial_ends_with_a_provider_shaped_error_event_after_a_whole_event() -> None:
    judge = StreamJudge("openai")
    sent = judge.feed(OPENAI + TEXT + STOP[:30])
    assert sent == OPENAI + TEXT  # half an event is never passed on
    tail = judge.close("connection reset")
    assert judge.ending is Ending.PARTIAL
    assert tail.startswith(b"data: ") and tail.endswith(b"\n\n")
    error = json.loads(tail[6:])["error"]
    assert error["code"] == INTERRUPTED_CODE and "connection reset" in error["message"]
    assert b"[DONE]" not in sent + tail


def test_malformed_data_after_content_is_replaced_by_the_error_event() -> None:
    judge = StreamJudge("openai")
    out = judge.feed(OPENAI + TEXT + b"data: {not json\n\n" + DONE)
    assert judge.ending is Ending.PARTIAL
    assert b"not json" not in out and b"[DONE]" not in out
    assert INTERRUPTED_CODE.encode() in out


def test_a_retryable_provider_error_before_content_is_empty() -> None:
    error = b'data: {"error":{"message":"overloaded","type":"server_error","code":null}}\n\n'
    judge = StreamJudge("openai")
    assert judge.feed(OPENAI + error) == b""
    assert judge.ending is Ending.EMPTY
    assert judge.give_up("no attempt left") == OPENAI + error  # the provider's own words


def test_a_provider_error_after_content_is_passed_on_as_it_came() -> None:
    error = b'data: {"error":{"message":"overloaded","type":"server_error","code":null}}\n\n'
    judge = StreamJudge("openai")
    assert judge.feed(OPENAI + TEXT + error + DONE) == OPENAI + TEXT + error
    assert judge.ending is Ending.PARTIAL and judge.done


def test_anthropic_and_responses_errors_are_error_events() -> None:
    for provider in ("anthropic", "openai-responses"):
        event = StreamJudge(provider).error_event(INTERRUPTED_CODE, "m")
        assert event.startswith(b"event: error\ndata: ")
        data = json.loads(event.split(b"data: ", 1)[1])
        assert data["type"] == "error"
    responses = json.loads(
        StreamJudge("openai-responses").error_event(CUT_CODE, "m").split(b"data: ", 1)[1]
    )
    assert responses["code"] == CUT_CODE and responses["error"]["code"] == CUT_CODE


def test_an_endless_event_is_bounded() -> None:
    judge = StreamJudge("openai", max_event_size=1024)
    judge.feed(OPENAI + TEXT)
    out = judge.feed(b"data: " + b"x" * 2048)
    assert judge.ending is Ending.PARTIAL and INTERRUPTED_CODE.encode() in out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=400), max_size=30))
def test_any_split_of_a_clean_stream_passes_it_unchanged(cuts: list[int]) -> None:
    body = (REAL / "anthropic" / "max_tokens_inside_tool_input.sse").read_bytes()
    clean = (REAL / "openai" / "parallel_tool_calls_usage_chunk.sse").read_bytes()
    for data, provider, expected in ((clean, "openai", Ending.COMPLETE),):
        pieces, at = [], 0
        for size in cuts:
            pieces.append(data[at : at + size])
            at += size
        pieces.append(data[at:])
        out, judge = run(provider, pieces)
        assert out == data and judge.ending is expected
    out, judge = run("anthropic", [body[: cuts[0] if cuts else 1], body[cuts[0] if cuts else 1 :]])
    assert judge.ending is Ending.REFUSED and b"message_stop" not in out


# -- tool calls held until proven (--cut-calls refuse) -----------------------------------


def _anthropic(kind: str, **data: object) -> bytes:
    return sse({"type": kind, **data}, kind)


A_START = _anthropic("message_start", message={"id": "msg_1", "model": "m", "usage": {}})
A_TEXT = _anthropic(
    "content_block_start", index=0, content_block={"type": "text", "text": ""}
) + _anthropic("content_block_delta", index=0, delta={"type": "text_delta", "text": "Sure."})
A_TEXT_STOP = _anthropic("content_block_stop", index=0)
A_CALL = _anthropic(
    "content_block_start",
    index=1,
    content_block={"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}},
)


def _fragment(text: str, index: int = 1) -> bytes:
    delta = {"type": "input_json_delta", "partial_json": text}
    return _anthropic("content_block_delta", index=index, delta=delta)


def _stop(reason: str) -> bytes:
    delta = {"stop_reason": reason, "stop_sequence": None}
    return _anthropic("message_delta", delta=delta, usage={"output_tokens": 9})


A_CALL_STOP = _anthropic("content_block_stop", index=1)
A_PROOF = _anthropic("message_stop")


def _feed_each(judge: StreamJudge, blocks: list[bytes]) -> list[bytes]:
    return [judge.feed(block) for block in blocks]


def test_a_calls_events_wait_until_its_block_closes_with_arguments_that_parse() -> None:
    judge = StreamJudge("anthropic")
    assert _feed_each(judge, [A_START, A_TEXT]) == [b"", A_START + A_TEXT]  # text: live
    held = [A_TEXT_STOP, A_CALL, _fragment('{"command": '), _fragment('"ls"}')]
    assert _feed_each(judge, held[:1]) == [A_TEXT_STOP]
    assert _feed_each(judge, held[1:]) == [b"", b"", b""]  # the call: held
    assert judge.feed(A_CALL_STOP) == b"".join(held[1:]) + A_CALL_STOP  # proven: released
    assert judge.feed(_stop("tool_use")) == _stop("tool_use")  # after it: live again
    assert judge.feed(A_PROOF) == A_PROOF and judge.ending is Ending.COMPLETE


def test_a_cut_calls_events_never_leave_and_the_refusal_takes_their_place() -> None:
    judge = StreamJudge("anthropic")
    sent = _feed_each(judge, [A_START, A_TEXT, A_CALL, _fragment('{"command": "rm -rf /tmp/leg')])
    sent += _feed_each(judge, [_stop("max_tokens"), A_PROOF])
    out = b"".join(sent)
    assert out.startswith(A_START + A_TEXT) and b"tool_use" not in out and b"rm -rf" not in out
    assert judge.ending is Ending.REFUSED and out.endswith(b"\n\n")
    assert b"cut by the output limit" in out and b"message_stop" not in out


def test_a_closed_call_that_does_not_parse_waits_for_the_turns_end() -> None:
    # Closed but not JSON: the turn's end decides. Without an output-limit stop it is the
    # client's to repair or reject, so the proof releases it, byte for byte.
    blocks = [A_START, A_TEXT, A_CALL, _fragment('{"command": "ls",}'), A_CALL_STOP]
    judge = StreamJudge("anthropic")
    sent = _feed_each(judge, blocks)
    assert sent[2:] == [b"", b"", b""]
    tail = [_stop("tool_use"), A_PROOF]
    assert _feed_each(judge, tail) == [b"", b"".join(blocks[2:]) + b"".join(tail)]
    assert judge.ending is Ending.COMPLETE


def test_a_fragment_after_a_call_proved_itself_holds_it_again() -> None:
    judge = StreamJudge("anthropic")
    _feed_each(judge, [A_START, A_TEXT, A_CALL, _fragment('{"a": 1}')])
    assert judge.feed(A_CALL_STOP) != b""  # proven and released
    late = _fragment(', "command": "rm -rf /tmp/leg')
    assert judge.feed(late) == b""  # the arguments changed: held until the end decides
    out = judge.feed(_stop("max_tokens") + A_PROOF)
    assert judge.ending is Ending.REFUSED and b"rm -rf" not in out


def test_chat_calls_are_released_one_by_one_as_the_next_begins() -> None:
    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse({"id": "c1", "object": "chat.completion.chunk", "choices": [choice]})

    def call(index: int, name: str, arguments: str) -> bytes:
        function = {"name": name, "arguments": arguments}
        return chunk(
            {"tool_calls": [{"index": index, "id": f"call_{index}", "function": function}]}
        )

    def more(index: int, arguments: str) -> bytes:
        return chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})

    judge = StreamJudge("openai")
    first = [call(0, "a", '{"x"'), more(0, ": 1}")]
    assert _feed_each(judge, [OPENAI, TEXT]) == [b"", OPENAI + TEXT]
    assert _feed_each(judge, first) == [b"", b""]
    second = call(1, "b", '{"y": ')
    assert judge.feed(second) == b"".join(first)  # call 0 closed by call 1's start
    assert judge.feed(more(1, "2}")) == b""
    finish = chunk({}, "tool_calls")
    assert judge.feed(finish) == second + more(1, "2}") + finish
    assert judge.feed(DONE) == DONE and judge.ending is Ending.COMPLETE


def test_a_break_inside_a_call_drops_what_was_held() -> None:
    judge = StreamJudge("anthropic")
    sent = _feed_each(judge, [A_START, A_TEXT, A_CALL, _fragment('{"command": "rm')])
    tail = judge.close("connection reset")
    assert judge.ending is Ending.PARTIAL and b"command" not in b"".join(sent) + tail
    assert b"connection reset" in tail


def test_held_bytes_are_bounded_and_past_the_bound_the_answer_is_refused() -> None:
    judge = StreamJudge("anthropic", max_held=1024)
    sent = _feed_each(judge, [A_START, A_TEXT, A_CALL])
    fragments = [_fragment(f'{{"content": "{"x" * 300}') for _ in range(5)]
    sent += _feed_each(judge, fragments)
    out = b"".join(sent)
    assert judge.ending is Ending.REFUSED and judge.done
    assert b"xxx" not in out and b"tool_call_unproven" not in out  # Anthropic's shape
    assert b"'shell'" in out and b"--cut-calls pass" in out
    assert judge.feed(A_CALL_STOP + A_PROOF) == b""  # nothing more is read


def test_cut_calls_pass_streams_a_calls_fragments_as_they_come() -> None:
    judge = StreamJudge("anthropic", refuse_cut_calls=False)
    blocks = [A_START, A_TEXT, A_CALL, _fragment('{"command": "rm -rf /tmp/leg')]
    assert b"".join(_feed_each(judge, blocks)) == b"".join(blocks)
