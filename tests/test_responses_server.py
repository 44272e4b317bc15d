"""Acceptance: the official ``openai`` SDK parses the scripted server's Responses API.

Every client here validates strictly (``_strict_response_validation=True``): each
event and each response must match the SDK's pydantic models, not just parse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from railings.replay import replay
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.testing.faults import is_terminator
from railings.testing.raw import raw_request
from railings.testing.script import assistant_turns
from railings.turn.model import ErrorKind, Outcome, Termination

SCRIPT = {
    "seed": 11,
    "chunk_size": 5,
    "turns": [
        {
            "text": "I'll check both.",
            "thinking": "Two lookups, in parallel.",
            "tool_calls": [
                {"name": "get_weather", "arguments": {"city": "Edinburgh"}},
                {"name": "get_stock_price", "arguments": {"ticker": "AAPL"}},
            ],
        },
        {"text": "It is 12°C in Edinburgh and AAPL is at 200."},
    ],
}
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": n,
        "description": None,
        "strict": False,
        "parameters": {"type": "object", "properties": {}},
    }
    for n in ("get_weather", "get_stock_price")
]
ASK = "Weather in Edinburgh, and AAPL?"
ARGS = [{"city": "Edinburgh"}, {"ticker": "AAPL"}]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCRIPT) as srv:
        yield srv


@pytest.fixture
def oai(server: ScriptedServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=server.openai_base_url,
        api_key="sk-test",
        max_retries=0,
        _strict_response_validation=True,
    ) as client:
        yield client


def test_create_stream_iterates_every_event(oai: openai.OpenAI) -> None:
    kinds: list[str] = []
    numbers: list[int] = []
    text, summary = "", ""
    args: dict[str, str] = {}
    final: Any = None
    for event in oai.responses.create(model="gpt-5", input=ASK, tools=TOOLS, stream=True):
        kinds.append(event.type)
        numbers.append(event.sequence_number)
        if event.type == "response.output_text.delta":
            text += event.delta
        elif event.type == "response.reasoning_summary_text.delta":
            summary += event.delta
        elif event.type == "response.function_call_arguments.delta":
            args[event.item_id] = args.get(event.item_id, "") + event.delta
        elif event.type == "response.completed":
            final = event.response
    assert numbers == list(range(len(kinds)))  # sequence_number on every event, in order
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    for kind in (
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.function_call_arguments.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.done",
    ):
        assert kind in kinds
    assert text == "I'll check both." and summary == "Two lookups, in parallel."
    assert [json.loads(a) for a in args.values()] == ARGS
    assert final.status == "completed" and final.usage.output_tokens > 0
    assert [o.type for o in final.output] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    assert final.usage.output_tokens_details.reasoning_tokens == 7


def test_stream_helper_and_final_response(oai: openai.OpenAI) -> None:
    with oai.responses.stream(model="gpt-5", input=ASK, tools=TOOLS) as stream:
        snapshots = [e.snapshot for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert snapshots[-1] == "I'll check both." == final.output_text
    calls = [o for o in final.output if o.type == "function_call"]
    assert [json.loads(c.arguments) for c in calls] == ARGS
    assert all(c.call_id.startswith("call_") and c.id and c.id.startswith("fc_") for c in calls)
    assert final.id.startswith("resp_") and final.tools[0].name == "get_weather"


def test_non_streamed_and_the_second_turn(oai: openai.OpenAI) -> None:
    first = oai.responses.create(model="gpt-5", input=ASK, tools=TOOLS)
    assert first.status == "completed" and first.output_text == "I'll check both."
    # The SDK user's way: the response's output items back in, then one output per call.
    history: list[Any] = [
        {"role": "user", "content": ASK},
        *[item.model_dump(exclude_none=True) for item in first.output],
    ]
    history += [
        {"type": "function_call_output", "call_id": item.call_id, "output": "ok"}
        for item in first.output
        if item.type == "function_call"
    ]
    second = oai.responses.create(model="gpt-5", input=history, tools=TOOLS)
    assert second.output_text == "It is 12°C in Edinburgh and AAPL is at 200."
    assert second.usage is not None and second.usage.input_tokens > first.usage.input_tokens  # type: ignore[union-attr]


def test_max_output_tokens_ends_in_response_incomplete_with_the_cut_arguments(
    oai: openai.OpenAI,
) -> None:
    # 15 tokens = 60 characters: 25 of thinking, 16 of text, then 19 of the first call's
    # arguments, cut mid-string; the second call never starts.
    with oai.responses.stream(
        model="gpt-5", input=ASK, tools=TOOLS, max_output_tokens=15
    ) as stream:
        events = list(stream)
    terminal = events[-1]
    assert terminal.type == "response.incomplete"
    response = terminal.response
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage is not None and response.usage.output_tokens == 15
    call = response.output[-1]
    assert call.type == "function_call" and call.status == "incomplete"
    assert call.arguments == '{"city": "Edinburgh'  # the closing quote and brace never came
    assert sum(1 for o in response.output if o.type == "function_call") == 1
    with pytest.raises(RuntimeError, match=r"response\.completed"):
        stream.get_final_response()  # the SDK refuses a cut response, as with the real API


def test_the_core_reads_the_cut_as_truncated(server: ScriptedServer) -> None:
    body = {"model": "m", "input": ASK, "tools": TOOLS, "stream": True, "max_output_tokens": 15}
    result = replay(
        raw_request(server.url, "/v1/responses", body).body,
        provider="openai-responses",
        max_tokens=15,
    )
    turn = result.turn
    assert turn.outcome is Outcome.COMPLETE and turn.stop_reason == "max_tokens"
    assert turn.truncated and not result.verdicts[0].execute


def test_a_cut_text_is_closed_incomplete_and_nothing_after_it_starts(
    oai: openai.OpenAI,
) -> None:
    final = oai.responses.create(model="gpt-5", input=ASK, max_output_tokens=8)
    assert final.status == "incomplete" and final.output_text == "I'll ch"
    assert [(o.type, getattr(o, "status", None)) for o in final.output] == [
        ("reasoning", None),
        ("message", "incomplete"),
    ]


def test_no_output_limit_means_no_cut(oai: openai.OpenAI) -> None:
    final = oai.responses.create(model="gpt-5", input=ASK, tools=TOOLS)
    assert final.incomplete_details is None and final.max_output_tokens is None


def test_turn_selection_counts_runs_of_assistant_items(server: ScriptedServer) -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    out = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    user = {"role": "user", "content": "x"}
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    message = {"type": "message", "role": "assistant", "content": "y"}
    cases: list[tuple[Any, int]] = [
        ("just a string", 0),
        ([user], 0),
        ([user, reasoning, message, call, call, out, out], 1),  # one turn, parallel calls
        ([user, call, out, call, out], 2),
        ([user, message, user, message, user], 2),
        ([user, {"type": "web_search_call", "id": "ws"}, message, user], 1),
        ([user, {"type": "item_reference", "id": "x"}], 0),
    ]
    for items, turns in cases:
        assert assistant_turns(items) == turns, items
    record = server.requests
    body = {"model": "m", "input": [user, call, out, call, out], "stream": False}
    raw_request(server.url, "/v1/responses", body)
    assert server.requests[len(record)].turn == 2


def test_string_input_and_the_path_without_v1(server: ScriptedServer) -> None:
    resp = raw_request(server.url, "/responses", {"model": "m", "input": "hi"})
    assert resp.status == 200
    body = json.loads(resp.body)
    assert body["object"] == "response" and body["output"][1]["type"] == "message"
    assert resp.headers.get("x-request-id", "").startswith("req_")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"input": "x"}, "Missing required parameter: 'model'."),
        ({"model": "m", "input": {"role": "user"}}, "Invalid type for 'input'"),
        ({"model": "m", "input": "x", "max_output_tokens": 0}, "max_output_tokens"),
        ({"model": "m", "input": "x", "previous_response_id": "resp_1"}, "not found"),
    ],
)
def test_bad_requests_get_openai_shaped_400s(
    server: ScriptedServer, body: Any, message: str
) -> None:
    with (
        openai.OpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0) as client,
        pytest.raises(openai.BadRequestError) as info,
    ):
        client.responses.create(**body)
    assert message in str(info.value) and info.value.request_id


def test_reasoning_items_follow_the_apis_rules(server: ScriptedServer) -> None:
    first = raw_request(server.url, "/v1/responses", {"model": "m", "input": ASK, "store": False})
    output = json.loads(first.body)["output"]
    reasoning, message, call, _ = output
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
    user = {"role": "user", "content": ASK}

    def refused(items: list[Any]) -> str:
        resp = raw_request(
            server.url, "/v1/responses", {"model": "m", "input": items, "store": False}
        )
        return str(json.loads(resp.body)["error"]["message"]) if resp.status == 400 else ""

    assert refused([user, *output]) == ""  # the output as it came: accepted
    bare = {k: v for k, v in reasoning.items() if k != "encrypted_content"}
    assert "not found" in refused([user, bare, message, call])
    assert "without its required following item" in refused([user, reasoning, user])
    assert refused([user, message, call]) == (
        f"Item '{message['id']}' of type 'message' was provided without its required "
        f"'reasoning' item: '{reasoning['id']}'."
    )
    rebuilt = [
        user,
        {"role": "assistant", "content": message["content"][0]["text"]},
        {k: v for k, v in call.items() if k != "id"},
    ]
    assert refused(rebuilt) == ""  # no reasoning and no item ids: accepted


def test_the_sdk_sees_authentication_errors() -> None:
    with (
        ScriptedServer({"turns": [{"text": "x"}], "api_key": "sk-right"}) as srv,
        openai.OpenAI(base_url=srv.openai_base_url, api_key="sk-wrong", max_retries=0) as c,
        pytest.raises(openai.AuthenticationError) as info,
    ):
        c.responses.create(model="m", input="x")
    assert info.value.code == "invalid_api_key"


def test_the_events_look_like_the_real_captures(server: ScriptedServer) -> None:
    body = raw_request(
        server.url, "/v1/responses", {"model": "m", "input": ASK, "tools": TOOLS, "stream": True}
    ).body
    blocks = body.decode().split("\n\n")[:-1]
    for block in blocks:
        event_line, data_line = block.split("\n")
        data = json.loads(data_line.removeprefix("data: "))
        assert event_line == f"event: {data['type']}"
        assert list(data)[:2] == ["type", "sequence_number"]  # as OpenAI orders them
    assert re.fullmatch(
        r"resp_[0-9a-f]{50}", json.loads(blocks[0].split("data: ")[1])["response"]["id"]
    )
    assert is_terminator(blocks[-1].encode() + b"\n\n")
    assert not any(is_terminator(b.encode() + b"\n\n") for b in blocks[:-1])


# -- the fault proxy -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def proxy(server: ScriptedServer) -> Iterator[FaultProxy]:
    with FaultProxy(server.url) as running:
        yield running


def fetch(proxy: FaultProxy, spec: str, **extra: Any) -> bytes:
    body = {"model": "m", "input": ASK, "tools": TOOLS, "stream": True, **extra}
    return raw_request(proxy.url, "/v1/responses", body, headers={"x-railings-fault": spec}).body


def test_drop_terminator_removes_response_completed(proxy: FaultProxy) -> None:
    clean, cut = fetch(proxy, "none"), fetch(proxy, "drop_terminator")
    assert b"response.completed" in clean and b"response.completed" not in cut
    result = replay(cut, provider="openai-responses")
    assert result.turn.outcome is Outcome.PARTIAL
    assert not any(v.execute for v in result.verdicts)


def test_drop_terminator_removes_response_incomplete(proxy: FaultProxy) -> None:
    cut = fetch(proxy, "drop_terminator", max_output_tokens=15)
    assert b"response.incomplete" not in cut and b"response.output_item.done" in cut
    assert replay(cut, provider="openai-responses").turn.outcome is Outcome.PARTIAL


def test_is_terminator_without_an_event_line() -> None:
    # OpenRouter sends no event: lines: the data's type decides.
    assert is_terminator(b'data: {"type":"response.completed","response":{}}\n\n')
    assert is_terminator(b'data: {"type": "response.incomplete", "response": {}}\n\n')
    assert not is_terminator(
        b'data: {"type":"response.output_text.delta","delta":"response.completed"}\n\n'
    )
    assert not is_terminator(b'data: {"type":"response.failed"}\n\n')
    assert not is_terminator(b"data: response.completed\n\n")


def test_error_event_injects_an_error_event(proxy: FaultProxy) -> None:
    body = fetch(proxy, "error_event:events=5")
    error = json.loads(body.decode().split("\n\n")[-2].split("data: ")[1])
    assert error == {
        "type": "error",
        "sequence_number": 5,
        "code": "server_error",
        "message": error["message"],
        "param": None,
    }
    turn = replay(body, provider="openai-responses").turn
    assert turn.termination is Termination.ABRUPT and turn.outcome is Outcome.PARTIAL
    assert turn.error is not None and turn.error.kind is ErrorKind.PROVIDER_ERROR
    assert turn.error.provider_type == "server_error"


def test_error_event_can_inject_response_failed_for_the_streams_own_response(
    proxy: FaultProxy,
) -> None:
    fault = {"x-railings-fault": "error_event:events=3,type=response.failed"}
    with (
        openai.OpenAI(
            base_url=proxy.url + "/v1", api_key="k", max_retries=0, _strict_response_validation=True
        ) as client,
        client.responses.stream(model="m", input=ASK, extra_headers=fault) as stream,
    ):
        events = list(stream)
    created, failed = events[0], events[-1]
    assert failed.type == "response.failed" and created.type == "response.created"
    assert failed.response.id == created.response.id and failed.sequence_number == 3
    assert failed.response.error is not None and failed.response.error.code == "server_error"
    turn = replay(
        fetch(proxy, "error_event:events=3,type=response.failed"), provider="openai-responses"
    ).turn
    assert turn.outcome is Outcome.EMPTY and turn.error is not None
    assert turn.error.kind is ErrorKind.PROVIDER_ERROR


def test_status_faults_speak_openai(proxy: FaultProxy) -> None:
    with (
        openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0) as client,
        pytest.raises(openai.RateLimitError),
    ):
        client.responses.create(
            model="m", input="x", extra_headers={"x-railings-fault": "status:429"}
        )


def test_corrupt_breaks_the_delta_not_the_type(proxy: FaultProxy) -> None:
    # Event 6 is the first reasoning summary delta: FF FE lands inside its text.
    body = fetch(proxy, "corrupt:event=6,kind=utf8")
    block = body.split(b"\n\n")[5]
    assert b'"delta":"\xff\xfe' in block
    turn = replay(body, provider="openai-responses").turn
    assert turn.outcome is not Outcome.COMPLETE


def test_script_from_file_round_trip_uses_the_demo() -> None:
    demo = Script.demo()
    with (
        ScriptedServer(demo) as srv,
        openai.OpenAI(
            base_url=srv.openai_base_url,
            api_key="k",
            max_retries=0,
            _strict_response_validation=True,
        ) as client,
    ):
        first = client.responses.create(model="m", input="go", max_output_tokens=1024)
        second = client.responses.create(
            model="m",
            max_output_tokens=1024,
            input=[
                {"role": "user", "content": "go"},
                *[o.model_dump(exclude_none=True) for o in first.output],
                {
                    "type": "function_call_output",
                    "call_id": first.output[-1].call_id,  # type: ignore[union-attr]
                    "output": "a.txt",
                },
            ],
        )
    assert first.status == "completed" and second.status == "incomplete"
    assert second.incomplete_details is not None
    assert second.incomplete_details.reason == "max_output_tokens"
