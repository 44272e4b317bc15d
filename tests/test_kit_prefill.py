"""The scripted server and an assistant prefill on the Anthropic Messages wire.

A conversation that ends with an assistant message asks the model to continue it: the
turn counted without that message answers, and only the text after the prefill comes
back. A model that refuses prefill, and a prefill that ends in whitespace, are answered
with the API's own 400s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from railings.errors import ConfigurationError
from railings.testing import Script, ScriptedServer
from railings.testing.raw import RawResponse, raw_request

HEADERS = {"anthropic-version": "2023-06-01", "x-api-key": "k"}
ANSWER = "The answer is 42, as always."
SCRIPT: dict[str, Any] = {
    "seed": 3,
    "chunk_size": 4,
    "turns": [
        {"text": "Looking.", "tool_calls": [{"name": "look", "arguments": {}, "id": "toolu_1"}]},
        {"text": ANSWER},
    ],
}
ASK = {"role": "user", "content": "What is the answer?"}
CALLED = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "look", "input": {}},
    ],
}
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCRIPT) as srv:
        yield srv


def _post(url: str, messages: list[Any], stream: bool = True, **extra: Any) -> RawResponse:
    body = {"model": "m", "max_tokens": 100, "messages": messages, "stream": stream, **extra}
    return raw_request(url, "/v1/messages", body, headers=HEADERS)


def _streamed_text(resp: RawResponse) -> str:
    text = ""
    for event in resp.events():
        data = json.loads(event.split(b"data: ", 1)[1])
        if data["type"] == "content_block_delta" and data["delta"]["type"] == "text_delta":
            text += data["delta"]["text"]
    return text


def _prefill(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def test_a_prefill_is_continued_not_repeated(server: ScriptedServer) -> None:
    resp = _post(server.url, [ASK, CALLED, RESULT, _prefill("The answer is")])
    assert resp.status == 200 and resp.complete
    assert _streamed_text(resp) == " 42, as always."
    assert server.requests[-1].turn == 1  # the turn the prefill starts, not the one after


def test_a_prefill_in_text_blocks_is_continued_unstreamed(server: ScriptedServer) -> None:
    prefill = {"role": "assistant", "content": [{"type": "text", "text": "The answer"}]}
    resp = _post(server.url, [ASK, CALLED, RESULT, prefill], stream=False)
    message = json.loads(resp.body)
    assert message["content"] == [{"type": "text", "text": " is 42, as always."}]
    assert message["stop_reason"] == "end_turn"
    # Only the continuation is output: 18 characters, 5 tokens.
    assert message["usage"]["output_tokens"] == 5


def test_a_prefill_the_turn_does_not_start_with_gets_the_whole_turn(
    server: ScriptedServer,
) -> None:
    resp = _post(server.url, [ASK, CALLED, RESULT, _prefill("Something else")])
    assert _streamed_text(resp) == ANSWER


def test_a_first_turn_prefill_answers_the_first_turn(server: ScriptedServer) -> None:
    resp = _post(server.url, [ASK, _prefill("Look")])
    assert _streamed_text(resp) == "ing."
    assert server.requests[-1].turn == 0


def test_a_trailing_tool_call_is_no_prefill(server: ScriptedServer) -> None:
    resp = _post(server.url, [ASK, CALLED])
    assert resp.status == 200
    assert _streamed_text(resp) == ANSWER  # counted as a finished turn, as before


def test_a_prefill_with_trailing_whitespace_is_refused(server: ScriptedServer) -> None:
    resp = _post(server.url, [ASK, CALLED, RESULT, _prefill("The answer is ")])
    assert resp.status == 400
    error = json.loads(resp.body)
    assert error["error"] == {
        "type": "invalid_request_error",
        "message": "messages: final assistant content cannot end with trailing whitespace",
    }
    assert error["request_id"] == resp.headers["request-id"]


def test_a_model_that_refuses_prefill_answers_the_api_error() -> None:
    with ScriptedServer(Script.text(ANSWER, prefill=False, seed=5)) as srv:
        resp = _post(srv.url, [ASK, _prefill("The answer")])
        plain = _post(srv.url, [ASK])
        assert srv.requests[0].status == 400
    assert resp.status == 400
    assert resp.headers["content-type"] == "application/json"
    request_id = resp.headers["request-id"]
    assert request_id.startswith("req_")
    assert json.loads(resp.body) == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": (
                "This model does not support assistant message prefill. "
                "The conversation must end with a user message."
            ),
        },
        "request_id": request_id,
    }
    assert plain.status == 200 and _streamed_text(plain) == ANSWER


def test_prefill_is_true_or_false() -> None:
    assert Script.text("x").prefill is True
    with pytest.raises(ConfigurationError, match="prefill"):
        Script.text("x", prefill="no")


def test_a_paused_turn_sent_back_is_continued_by_the_next_turn() -> None:
    paused = {"turns": [{"text": "Searching.", "stop_reason": "pause_turn"}, {"text": "Found."}]}
    with ScriptedServer(Script.from_dict({**paused, "prefill": False})) as srv:
        resp = _post(srv.url, [ASK, _prefill("Searching.")])
        partial = _post(srv.url, [ASK, _prefill("Search")])
    assert resp.status == 200 and _streamed_text(resp) == "Found."
    assert partial.status == 400  # a part of the paused turn is a prefill, refused here
