"""The OpenAI Responses API decoder: real captures, hand-written edge cases, detection."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railings import MalformedStream, Outcome, RejectReason, Termination, replay, to_json
from railings.events import (
    BilledOutput,
    MessageStart,
    OutputItems,
    ProviderErrorEvent,
    RefusalDelta,
    ServerToolResult,
    StopReason,
    TerminationProof,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    UsageUpdate,
)
from railings.providers.openai_responses.decoder import OpenAIResponsesDecoder
from railings.replay import Replay
from railings.turn.reader import PROVIDERS, StreamReader, detect_provider
from railings.turn.verdict import TRUNCATION_NOTICE, judge
from railings.wire.sse import ServerSentEvent, SSEDecoder

CAPTURES = Path(__file__).resolve().parent / "corpus" / "responses"


def _manifest() -> list[dict[str, str]]:
    with (CAPTURES / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


ROWS = _manifest()
IDS = [row["file"] for row in ROWS]


def _body(row: dict[str, str]) -> bytes:
    return (CAPTURES / row["file"]).read_bytes()


def _feed_split(body: bytes, cuts: list[int], provider: str = "openai-responses") -> Replay:
    """Feed ``body`` cut at ``cuts`` (byte positions), then EOF."""
    reader = StreamReader(provider)
    last = 0
    for cut in sorted(set(cuts)):
        reader.feed(body[last:cut])
        last = cut
    reader.feed(body[last:])
    reader.close()
    turn = reader.turn()
    return Replay(turn, judge(turn))


# -- wire builders: real shapes (field order as OpenAI sends them), written out ---------------


def ev(kind: str, **fields: Any) -> bytes:
    data = json.dumps({"type": kind, **fields}, separators=(",", ":"))
    return f"event: {kind}\ndata: {data}\n\n".encode()


def created(model: str = "gpt-5-2025-08-07") -> bytes:
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": model}
    return ev("response.created", sequence_number=0, response=response)


def terminal(
    kind: str = "response.completed",
    *,
    usage: tuple[int, int] | None = (10, 5),
    reason: str | None = None,
    error: dict[str, Any] | None = None,
) -> bytes:
    status = kind.removeprefix("response.")
    response: dict[str, Any] = {"id": "resp_1", "status": status, "error": error}
    response["incomplete_details"] = None if reason is None else {"reason": reason}
    response["usage"] = (
        None if usage is None else {"input_tokens": usage[0], "output_tokens": usage[1]}
    )
    return ev(kind, response=response)


def function_call(
    fragments: list[str], *, index: int = 0, item: str = "fc_1", call: str = "call_1"
) -> bytes:
    """A function call item: added, then its argument deltas (no .done events)."""
    added = {"id": item, "type": "function_call", "status": "in_progress", "arguments": ""}
    added |= {"call_id": call, "name": "shell"}
    parts = [ev("response.output_item.added", output_index=index, item=added)]
    for fragment in fragments:
        parts.append(
            ev(
                "response.function_call_arguments.delta",
                item_id=item,
                output_index=index,
                delta=fragment,
            )
        )
    return b"".join(parts)


def call_done(arguments: str, *, index: int = 0, status: str = "completed") -> bytes:
    item = {"id": "fc_1", "type": "function_call", "status": status, "arguments": arguments}
    item |= {"call_id": "call_1", "name": "shell"}
    return b"".join(
        [
            ev(
                "response.function_call_arguments.done",
                item_id="fc_1",
                output_index=index,
                arguments=arguments,
            ),
            ev("response.output_item.done", output_index=index, item=item),
        ]
    )


def text(words: list[str], *, index: int = 0) -> bytes:
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "content": []}
    part = {"type": "output_text", "annotations": [], "text": ""}
    parts = [
        ev("response.output_item.added", output_index=index, item=item),
        ev("response.content_part.added", item_id="msg_1", output_index=index, part=part),
    ]
    for word in words:
        parts.append(
            ev("response.output_text.delta", item_id="msg_1", output_index=index, delta=word)
        )
    return b"".join(parts)


def three_ways(body: bytes, *, trailing: bool = True, **options: Any) -> Replay:
    """Whole, byte by byte, and (for a terminated stream) with data after the proof."""
    whole = replay(body, provider="openai-responses", **options)
    assert to_json(replay(body, provider="openai-responses", chunk_size=1, **options)) == to_json(
        whole
    )
    assert to_json(replay(body, provider="auto", **options)) == to_json(whole)
    if trailing:
        after = body + b"data: not json\n\n" + terminal()
        assert to_json(replay(after, provider="openai-responses", **options)) == to_json(whole)
    return whole


def decode(*events: bytes) -> list[Any]:
    """Every normalized event the decoder makes from ``events`` (no assembler)."""
    sse = SSEDecoder()
    decoder = OpenAIResponsesDecoder()
    out: list[Any] = []
    for event in sse.feed(b"".join(events)) + sse.close():
        out.extend(decoder.feed(event))
    return out + decoder.close()


FRAGMENT = '{"command": "rm -rf /tmp/leg'


def _split(value: str, size: int = 5) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)]


# -- real captures ------------------------------------------------------------------------------


def test_the_manifest_lists_every_capture() -> None:
    assert sorted(IDS) == sorted(p.name for p in CAPTURES.glob("*.sse"))
    assert "openai-responses" in PROVIDERS


@pytest.mark.parametrize("provider", ["openai-responses", "auto"])
@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_capture_replays_to_manifest_facts(row: dict[str, str], provider: str) -> None:
    result = replay(_body(row), provider=provider)
    turn = result.turn
    assert turn.provider == "openai-responses"
    assert row["terminator"] == "response.completed" and row["errors"] == "-"
    assert turn.termination is Termination.CLEAN and turn.outcome is Outcome.COMPLETE
    assert turn.error is None and turn.unknown_events == 0
    assert turn.model == row["model"] and turn.message_id

    # response.completed is the API's own "not cut": nothing is derived.
    assert row["stop_reason_wire"] == "completed" and turn.stop_reason_wire == "completed"
    assert turn.stop_reason_source == "wire"
    assert turn.stop_reason == ("tool_use" if turn.tool_calls else "end_turn")
    assert not turn.truncated

    count = int(row["tool_calls"])
    names = [] if not count else row["tool_call_names"].split(";")
    got = [f"{c.type}:{c.name}" for c in turn.tool_calls]
    got += [f"{c.kind}:{c.name}" for c in turn.server_tool_calls]
    assert got == names
    for call in turn.server_tool_calls:  # provider-run: kept, never judged
        assert call.result_arrived and call.input is not None
    assert len(result.verdicts) == len(turn.tool_calls)
    for verdict in result.verdicts:
        # The id its output goes back under: the call_id, or an approval request's item id.
        prefix = "mcpr_" if verdict.call.type == "mcp_approval" else "call_"
        assert verdict.call.id.startswith(prefix)
        assert verdict.call.closed
        # Structured items arrive as objects the API parsed; text arguments are the model's.
        parsed = verdict.call.type in ("local_shell", "shell", "apply_patch", "computer")
        assert verdict.call.origin == ("parsed" if parsed else "raw")
        if row["tool_args_json"] == "complete":
            assert verdict.execute and verdict.call.arguments is not None
        else:  # a freeform (custom tool) input is text, never JSON: it is the argument
            assert row["tool_args_json"].startswith("freeform")
            assert verdict.call.type == "custom" and verdict.execute
            assert verdict.arguments == {"input": verdict.call.raw_arguments}
            assert verdict.notice is None

    assert turn.usage is not None and turn.usage.output_tokens == int(row["output_tokens"])


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_capture_sse_event_count_matches_manifest(row: dict[str, str]) -> None:
    decoder = SSEDecoder()
    assert len(decoder.feed(_body(row)) + decoder.close()) == int(row["sse_events"])


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_capture_is_split_invariant(row: dict[str, str]) -> None:
    body = _body(row)
    whole = to_json(replay(body, provider="openai-responses"))
    assert to_json(replay(body, provider="openai-responses", chunk_size=1)) == whole
    rng = random.Random(row["sha256"])
    for _ in range(25):
        cuts = [rng.randrange(len(body) + 1) for _ in range(rng.randint(1, 30))]
        assert to_json(_feed_split(body, cuts)) == whole
        assert to_json(_feed_split(body, cuts, provider="auto")) == whole
    trailing = body + b"data: garbage after the proof\n\n"
    assert to_json(replay(trailing, provider="openai-responses")) == whole


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_capture_cut_before_its_terminal_event_is_never_clean(row: dict[str, str]) -> None:
    body = _body(row)
    start = body.rfind(b'data: {"type":"response.completed"')
    end = body.index(b"\n\n", start) + 1  # the event is dispatched only by its blank line
    rng = random.Random(row["file"])
    for cut in sorted(
        {0, 1, end // 2, start, end - 1, end, *(rng.randrange(end) for _ in range(20))}
    ):
        result = replay(body[:cut], provider="openai-responses")
        assert result.turn.termination is Termination.ABRUPT, cut
        assert all(v.reason is RejectReason.INTERRUPTED for v in result.verdicts), cut


CAPTURE_BODIES = {row["file"]: _body(row) for row in ROWS}
CAPTURE_JSON = {
    name: to_json(replay(body, provider="openai-responses"))
    for name, body in CAPTURE_BODIES.items()
}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(CAPTURE_BODIES)), data=st.data())
def test_any_split_of_a_capture_gives_the_same_verdict(name: str, data: st.DataObject) -> None:
    body = CAPTURE_BODIES[name]
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=40))
    assert to_json(_feed_split(body, cuts)) == CAPTURE_JSON[name]


def test_function_call_capture_decodes_to_the_expected_events() -> None:
    events = decode(_body({"file": "swiftagent_function_call_gpt5.sse"}))
    assert events[0] == MessageStart(
        id="resp_68d9303e0ef4819e9abaed38fac5de4f03aa6e5a972b3b23", model="gpt-5-2025-08-07"
    )
    # The hidden reasoning came first, encrypted when its item opened and when it finished:
    # billed, kept nowhere (the Empty table).
    assert events[1] == events[2] == BilledOutput(name="openai-responses:item:reasoning")
    assert events[3] == ToolCallStart(
        index=0, id="call_5dp5Uj0Loqn1YcyIpqSq6sLX", name="get_weather"
    )
    fragments = [e.fragment for e in events if isinstance(e, ToolArgumentsDelta)]
    # The .done events repeat the whole arguments: after deltas they add nothing.
    assert "".join(fragments) == '{ "location": "New York City, USA" }' and len(fragments) == 12
    assert events[-5:-2] == [
        ToolCallEnd(index=0),
        UsageUpdate(input_tokens=75, output_tokens=155),
        events[-3],
    ]
    assert events[-2:] == [
        StopReason(wire="completed"),
        TerminationProof(marker="response.completed"),
    ]
    items = events[-3]
    assert isinstance(items, OutputItems)  # the response's own output, to send back
    reasoning, call = items.items
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"].startswith("gAAAAA")
    assert call["id"].startswith("fc_") and call["call_id"] == "call_5dp5Uj0Loqn1YcyIpqSq6sLX"


def test_openrouter_capture_has_reasoning_text_and_a_done_trailer() -> None:
    body = _body({"file": "pydantic_ai_openrouter_gpt_oss_reasoning_text.sse"})
    turn = replay(body).turn
    assert turn.provider == "openai-responses"  # detected from data.type: no event: lines
    assert turn.thinking.startswith('The user asks: "What is 2+2?"') and turn.text == "4"
    # The [DONE] trailer alone is not this API's proof.
    assert decode(b"data: [DONE]\n\n") == []


# -- hand-written streams -----------------------------------------------------------------------


def test_function_call_cut_at_max_output_tokens_is_truncated_and_rejected() -> None:
    body = created() + function_call(_split(FRAGMENT))
    body += terminal("response.incomplete", reason="max_output_tokens", usage=(20, 16))
    result = three_ways(body)
    turn = result.turn
    assert turn.termination is Termination.CLEAN and turn.complete
    assert turn.stop_reason == "max_tokens" and turn.stop_reason_wire == "max_output_tokens"
    assert turn.stop_reason_source == "wire" and turn.truncated
    (verdict,) = result.verdicts
    assert verdict.call.raw_arguments == FRAGMENT and verdict.call.arguments is None
    assert not verdict.call.closed  # no output_item.done came
    assert not verdict.execute and verdict.reason is RejectReason.TRUNCATED
    assert verdict.notice == TRUNCATION_NOTICE.format(
        name="shell", id="call_1", stop_reason="max_tokens"
    )


def test_incomplete_item_closed_with_partial_arguments_is_still_truncated() -> None:
    body = created() + function_call(_split(FRAGMENT))
    body += call_done(FRAGMENT, status="incomplete")
    body += terminal("response.incomplete", reason="max_output_tokens")
    (verdict,) = three_ways(body).verdicts
    assert verdict.call.closed and verdict.call.raw_arguments == FRAGMENT  # not doubled
    assert verdict.reason is RejectReason.TRUNCATED


def test_incomplete_for_content_filter_keeps_its_reason() -> None:
    body = created() + text(["Hel"]) + terminal("response.incomplete", reason="content_filter")
    turn = three_ways(body).turn
    assert turn.stop_reason == "content_filter" and not turn.truncated and turn.text == "Hel"


def test_stream_without_response_completed_is_abrupt() -> None:
    complete_call = (
        created() + function_call(_split('{"command": "ls"}')) + call_done('{"command": "ls"}')
    )
    for body in (complete_call, complete_call + b"data: [DONE]\n\n"):
        result = three_ways(body, trailing=False)
        turn = result.turn
        assert turn.termination is Termination.ABRUPT and turn.outcome is Outcome.PARTIAL
        assert turn.error is not None and turn.error.kind.value == "interrupted"
        assert not turn.error.retryable  # content arrived: never resent
        (verdict,) = result.verdicts
        assert verdict.call.arguments == {"command": "ls"}  # parsed, yet not proven finished
        assert verdict.reason is RejectReason.INTERRUPTED


def test_response_failed_is_a_typed_provider_error_keeping_usage() -> None:
    error = {"code": "server_error", "message": "The server had an error processing your request."}
    body = created() + function_call(['{"command": "ls"}'])
    body += terminal("response.failed", error=error, usage=(30, 7))
    result = three_ways(body)
    turn = result.turn
    assert turn.termination is Termination.ABRUPT and turn.outcome is Outcome.PARTIAL
    assert turn.error is not None and turn.error.kind.value == "provider_error"
    assert turn.error.provider_type == "server_error"
    assert turn.error.message == error["message"] and turn.error.retryable
    assert turn.usage is not None and turn.usage.output_tokens == 7
    assert turn.stop_reason is None
    assert [v.reason for v in result.verdicts] == [RejectReason.INTERRUPTED]


def test_error_event_is_a_typed_provider_error() -> None:
    flat = ev("error", code="rate_limit_exceeded", message="Slow down.", param=None)
    nested = ev("error", error={"type": "invalid_request_error", "message": "Bad input."})
    assert decode(flat) == [
        ProviderErrorEvent(message="Slow down.", provider_type="rate_limit_exceeded")
    ]
    assert decode(nested) == [
        ProviderErrorEvent(message="Bad input.", provider_type="invalid_request_error")
    ]
    turn = three_ways(created() + text(["Hi"]) + flat).turn
    assert turn.termination is Termination.ABRUPT and turn.text == "Hi"
    assert turn.error is not None and turn.error.provider_type == "rate_limit_exceeded"


def test_empty_string_deltas_are_not_content() -> None:
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": []}
    body = created() + ev("response.output_item.added", output_index=0, item=reasoning)
    body += ev("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, delta="")
    body += text([""], index=1)
    assert [type(e) for e in decode(body)] == [MessageStart]
    turn = three_ways(body, trailing=False).turn
    assert turn.termination is Termination.ABRUPT and turn.outcome is Outcome.EMPTY
    assert turn.error is not None and turn.error.retryable  # nothing billable: resent


def test_empty_argument_fragment_is_no_event() -> None:
    events = decode(created() + function_call(["", '{"a":1}', ""]))
    assert [e for e in events if isinstance(e, ToolArgumentsDelta)] == [
        ToolArgumentsDelta(index=0, fragment='{"a":1}')
    ]


def test_arguments_done_gives_the_arguments_when_no_delta_came() -> None:
    body = created() + function_call([]) + call_done('{"command": "ls"}') + terminal()
    (verdict,) = three_ways(body).verdicts
    assert verdict.execute and verdict.arguments == {"command": "ls"}
    assert verdict.call.raw_arguments == '{"command": "ls"}'


def test_output_item_done_without_added_starts_the_call() -> None:
    item = {"id": "fc_9", "type": "function_call", "call_id": "call_9", "name": "shell"}
    item["arguments"] = '{"x": 1}'
    body = created() + ev("response.output_item.done", output_index=0, item=item) + terminal()
    (verdict,) = three_ways(body).verdicts
    assert verdict.call.id == "call_9" and verdict.arguments == {"x": 1} and verdict.call.closed


def test_parallel_calls_are_keyed_by_item_id_then_output_index() -> None:
    def delta(item: str | None, index: int, fragment: str) -> bytes:
        fields: dict[str, Any] = {"output_index": index, "delta": fragment}
        if item is not None:
            fields["item_id"] = item
        return ev("response.function_call_arguments.delta", **fields)

    body = created()
    body += function_call([], index=1, item="fc_a", call="call_a")
    body += function_call([], index=2, item="fc_b", call="call_b")
    body += delta("fc_a", 1, '{"a":') + delta("fc_b", 2, '{"b":') + delta(None, 1, "1}")
    body += delta(None, 2, "2}") + terminal()
    result = three_ways(body)
    assert [(v.call.id, v.arguments) for v in result.verdicts] == [
        ("call_a", {"a": 1}),
        ("call_b", {"b": 2}),
    ]
    assert result.turn.stop_reason == "tool_use"


def test_completed_turn_at_the_limit_runs_a_call_that_parses() -> None:
    """``completed`` is kept as the stop reason; billed output at the limit still marks the
    turn truncated (servers say ``completed`` or ``tool_calls`` for cut turns), which
    refuses only calls that cannot prove themselves whole: this one parses, and runs."""
    body = created() + function_call(['{"command": "ls"}']) + terminal(usage=(10, 64))
    result = three_ways(body, max_tokens=64)
    assert result.turn.stop_reason == "tool_use" and result.turn.stop_reason_source == "wire"
    assert result.turn.truncated and result.verdicts[0].execute
    assert not three_ways(body, max_tokens=65).turn.truncated


def test_provider_run_calls_are_kept_and_never_dispatched() -> None:
    # The web_search_call shape of a real gpt-4o stream (pydantic-ai cassette).
    added: dict[str, Any] = {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}
    added["action"] = {"type": "search"}
    done: dict[str, Any] = {"id": "ws_1", "type": "web_search_call", "status": "completed"}
    done["action"] = {"type": "search", "query": "top world news"}
    body = created("gpt-4o-2024-08-06")
    body += ev("response.output_item.added", output_index=0, item=added)
    body += ev("response.web_search_call.in_progress", output_index=0, item_id="ws_1")
    body += ev("response.web_search_call.searching", output_index=0, item_id="ws_1")
    body += ev("response.web_search_call.completed", output_index=0, item_id="ws_1")
    body += ev("response.output_item.done", output_index=0, item=done)
    body += text(["News."], index=1) + terminal()
    events = decode(body)
    start = ToolCallStart(index=0, id="ws_1", name="web_search", kind="server_tool_use")
    assert start in events
    assert ServerToolResult(tool_use_id="ws_1", type="web_search_call.completed") in events
    result = three_ways(body)
    assert result.verdicts == () and result.turn.tool_calls == ()
    (call,) = result.turn.server_tool_calls
    assert call.name == "web_search" and call.kind == "server_tool_use"
    assert call.input == {"action": {"type": "search", "query": "top world news"}}
    assert call.result_arrived and result.turn.stop_reason == "end_turn"


def test_client_run_items_are_calls_not_server_calls() -> None:
    item = {"id": "cu_1", "type": "computer_call", "call_id": "call_c", "status": "in_progress"}
    events = decode(ev("response.output_item.added", output_index=0, item=item))
    assert events == [ToolCallStart(index=0, id="call_c", name="computer", call_type="computer")]
    body = created() + ev("response.output_item.added", output_index=0, item=item)
    body += ev("response.output_item.done", output_index=0, item=item) + terminal()
    result = three_ways(body)
    turn = result.turn
    assert turn.unknown_events == 0 and turn.server_tool_calls == ()
    assert [(c.type, c.id) for c in turn.tool_calls] == [("computer", "call_c")]
    assert turn.stop_reason == "tool_use"  # the model waits on the client: never end_turn
    # No action in the finished item: nothing to run, and never read as "{}".
    (verdict,) = result.verdicts
    assert verdict.reason is RejectReason.MALFORMED and verdict.notice is not None
    assert "did not arrive complete" in verdict.notice


def test_refusal_and_reasoning_summary_deltas() -> None:
    events = decode(
        ev("response.refusal.delta", item_id="msg_1", output_index=0, delta="I can't."),
        ev("response.reasoning_summary_text.delta", item_id="rs_1", summary_index=0, delta="Hm."),
        ev("response.reasoning_text.delta", item_id="rs_1", output_index=0, delta="Raw."),
    )
    assert events == [
        RefusalDelta(text="I can't."),
        ThinkingDelta(text="Hm."),
        ThinkingDelta(text="Raw."),
    ]


def test_unknown_events_are_counted_not_fatal() -> None:
    body = created() + ev("response.brand_new.delta", delta="?") + text(["ok"]) + terminal()
    turn = three_ways(body).turn
    assert turn.unknown_events == 1 and turn.text == "ok" and turn.complete
    assert decode(ev("response.output_text.annotation.added", annotation={})) == []


def test_incomplete_without_a_reason_is_still_not_a_finished_turn() -> None:
    events = decode(ev("response.incomplete", response={"incomplete_details": None}))
    assert events == [
        StopReason(wire="incomplete"),
        TerminationProof(marker="response.incomplete"),
    ]


def test_invalid_json_is_a_malformed_stream() -> None:
    with pytest.raises(MalformedStream):
        decode(b"event: response.output_text.delta\ndata: {not json\n\n")
    turn = replay(created() + text(["Hi"]) + b"data: {not json\n\n" + terminal()).turn
    assert turn.termination is Termination.ABRUPT
    assert turn.error is not None and turn.error.kind.value == "malformed_stream"


def _sse(data: str, event: str = "message") -> ServerSentEvent:
    return ServerSentEvent(event, data, "", None)


def test_detect_provider_knows_the_responses_api() -> None:
    first = '{"type":"response.created","sequence_number":0,"response":{}}'
    assert detect_provider(_sse(first, "response.created")) == "openai-responses"
    assert detect_provider(_sse(first)) == "openai-responses"  # OpenRouter: no event: line
    spaced = '{"type": "response.created", "response": {}}'
    assert detect_provider(_sse(spaced)) == "openai-responses"
    chat = '{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[]}'
    assert detect_provider(_sse(chat)) == "openai"
    assert detect_provider(_sse('{"type":"message_start"}', "message_start")) == "anthropic"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KNOWN = sorted(
    {
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.custom_tool_call_input.done",
        "response.mcp_call_arguments.delta",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "error",
    }
)
FIELDS = ["item", "item_id", "output_index", "delta", "arguments", "input", "response", "error"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(KNOWN),
            st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=4),
            st.sampled_from(["function_call", "custom_tool_call", "mcp_call", "web_search_call"]),
        ),
        max_size=12,
    )
)
def test_any_well_formed_json_only_ever_yields_events(
    events: list[tuple[str, dict[str, Any], str]],
) -> None:
    """Whatever shape the fields take, the decoder returns events and never crashes."""
    decoder = OpenAIResponsesDecoder()
    for kind, fields, item_type in events:
        if isinstance(fields.get("item"), dict):
            fields["item"]["type"] = item_type
        data = json.dumps({"type": kind, **fields})
        for event in decoder.feed(ServerSentEvent(kind, data, "", None)):
            assert type(event).__module__ == "railings.events"


def test_a_different_item_at_a_calls_output_index_does_not_close_the_call() -> None:
    message = {"id": "msg_1", "type": "message", "status": "completed", "content": []}
    events = decode(
        function_call(['{"a":'], index=0),
        ev("response.output_item.done", output_index=0, item=message),
    )
    assert not any(isinstance(e, ToolCallEnd) for e in events)
