"""Attacks on the gateway's defences from the answer side: a real upstream on 127.0.0.1
sends what a provider (or an OpenAI-compatible server) may send, behind the real gateway
under ``--cut-calls refuse``, and the test reads what the client gets.

Each test is a way around a promise the gateway makes: a cut tool call never reaches the
client, in any shape the client's SDK reads it from; a complete answer in a content
coding is judged complete; one client call reaches the upstream at most as often as
the Empty rule allows."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from _server import DONE, OPENAI_USAGE, CannedServer, Reply, json_reply, openai_chunk, sse
from railings.testing.raw import raw_request
from tests.gateway_kit import KEY, NO_WAITS, PATHS, body, headers, running

# The arguments of a call the output limit cut inside its command.
CUT = '{"command": "rm -rf /tmp/leg'
EVENT_STREAM = (("content-type", "text/event-stream"),)


@pytest.fixture()
def upstream() -> Iterator[CannedServer]:
    with CannedServer() as server:
        yield server


def _chat(upstream: CannedServer, tmp_path: Path, request: dict[str, Any]) -> bytes:
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], request, headers=headers("openai"))
    return got.body


def _choice(index: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
        }
    )


# -- the legacy Chat ``function_call`` (``functions=`` requests) ----------------------------


def test_a_cut_legacy_function_call_never_reaches_a_streaming_client(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # ``functions=`` (the Chat API's first tool interface, still served by OpenAI, Azure
    # and the OpenAI-compatible servers) streams the call as ``delta.function_call``; the
    # openai SDK's ChatCompletionChunk reads it. Cut by the output limit, it is the same
    # unfinished command as a cut ``tool_calls`` entry.
    events = [
        openai_chunk({"role": "assistant", "content": None}),
        openai_chunk({"function_call": {"name": "shell", "arguments": ""}}),
        openai_chunk({"function_call": {"arguments": CUT}}),
        openai_chunk({}, "length"),
        OPENAI_USAGE,
        DONE,
    ]
    upstream.push(Reply(200, events, EVENT_STREAM))
    request = body("openai", max_tokens=10)
    request["functions"] = [{"name": "shell", "parameters": {"type": "object"}}]
    got = _chat(upstream, tmp_path, request)
    assert b"/tmp/leg" not in got
    assert b"cut by the output limit" in got


def test_a_cut_legacy_function_call_in_a_json_answer_is_refused(
    upstream: CannedServer, tmp_path: Path
) -> None:
    message = {"role": "assistant", "content": None}
    message["function_call"] = {"name": "shell", "arguments": CUT}  # type: ignore[assignment]
    answer = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 10, "total_tokens": 15},
    }
    upstream.push(json_reply(200, answer))
    request = body("openai", stream=False, max_tokens=10)
    request["functions"] = [{"name": "shell", "parameters": {"type": "object"}}]
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], request, headers=headers("openai"))
    assert b"/tmp/leg" not in got.body
    assert got.status == 502


# -- ``n`` > 1: the calls of every choice but the first --------------------------------------


def test_a_cut_call_in_the_second_choice_never_reaches_a_streaming_client(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # ``n=2`` asks for two choices; the openai SDK gives the client both, each with its
    # own tool calls and finish reason. The second is cut by the output limit.
    call = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "shell", "arguments": ""}
    events = [
        _choice(0, {"role": "assistant", "content": ""}),
        _choice(1, {"role": "assistant", "content": ""}),
        _choice(0, {"content": "Done."}),
        _choice(1, {"tool_calls": [call]}),
        _choice(1, {"tool_calls": [{"index": 0, "function": {"arguments": CUT}}]}),
        _choice(0, {}, "stop"),
        _choice(1, {}, "length"),
        DONE,
    ]
    upstream.push(Reply(200, events, EVENT_STREAM))
    request = body("openai", max_tokens=10)
    request["n"] = 2
    got = _chat(upstream, tmp_path, request)
    assert b"/tmp/leg" not in got


def test_a_cut_call_in_the_second_choice_of_a_json_answer_is_refused(
    upstream: CannedServer, tmp_path: Path
) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": CUT}}
    answer = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Done."},
                "finish_reason": "stop",
            },
            {
                "index": 1,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "length",
            },
        ],
    }
    upstream.push(json_reply(200, answer))
    request = body("openai", stream=False, max_tokens=10)
    request["n"] = 2
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], request, headers=headers("openai"))
    assert b"/tmp/leg" not in got.body
    # The judge reads one choice: n > 1 is refused before anything goes upstream.
    assert got.status == 400
    assert json.loads(got.body)["error"]["code"] == "many_choices_not_judged"
    assert b"--cut-calls pass" in got.body
    assert upstream.requests == []


def test_many_choices_are_forwarded_unjudged_under_cut_calls_pass(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # The refusal of n > 1 is the judge's limit, not the gateway's: with --cut-calls pass
    # the request goes upstream and both choices reach the client.
    events = [_choice(0, {"content": "One."}), _choice(1, {"content": "Two."})]
    events += [_choice(0, {}, "stop"), _choice(1, {}, "stop"), DONE]
    upstream.push(Reply(200, events, EVENT_STREAM))
    request = body("openai")
    request["n"] = 2
    with running(upstream.url, tmp_path, cut_calls="pass") as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], request, headers=headers("openai"))
    assert got.status == 200
    assert b"One." in got.body and b"Two." in got.body
    assert len(upstream.requests) == 1


# -- a stream the upstream does not label ``text/event-stream`` ----------------------------------

CUT_STREAM = [
    openai_chunk({"role": "assistant", "content": ""}),
    openai_chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "shell", "arguments": ""},
                }
            ]
        }
    ),
    openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": CUT}}]}),
    openai_chunk({}, "length"),
    OPENAI_USAGE,
    DONE,
]


@pytest.mark.parametrize(
    "label",
    [(), (("content-type", "text/plain"),), (("content-type", "application/json"),)],
    ids=["no content-type", "text/plain", "application/json"],
)
def test_a_cut_call_in_a_stream_labelled_otherwise_never_reaches_the_client(
    upstream: CannedServer, tmp_path: Path, label: tuple[tuple[str, str], ...]
) -> None:
    # The openai SDK reads the body of a ``stream=True`` request as server-sent events
    # whatever its content-type says, so a client gets this cut call as deltas; the
    # gateway must judge what its client will read, not what the label claims.
    upstream.push(Reply(200, CUT_STREAM, label))
    got = _chat(upstream, tmp_path, body("openai", max_tokens=10))
    assert b"/tmp/leg" not in got


# -- gzip in members: RFC 1952 §2.2, "a gzip file consists of a series of members" ----------


def test_a_stream_gzipped_member_by_member_is_judged_whole(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # A server that compresses each flush on its own sends one gzip member per event;
    # urllib3, Go's net/http and the browsers decode every member. Read as its first
    # member only, this complete answer has no content and no proof: called Empty and
    # resent, paid for again each time.
    events = [openai_chunk({"role": "assistant", "content": ""})]
    events += [openai_chunk({"content": word}) for word in ("The ", "answer.")]
    events += [openai_chunk({}, "stop"), OPENAI_USAGE, DONE]
    members = [gzip.compress(event) for event in events]
    for _ in range(4):
        upstream.push(Reply(200, members, (*EVENT_STREAM, ("content-encoding", "gzip"))))
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], body("openai"), headers=headers("openai"))
    assert len(upstream.requests) == 1  # complete on the first attempt: nothing resent
    assert got.status == 200
    assert got.body == b"".join(events)


# -- resends: an error status relayed after the gateway already resent ----------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_an_error_status_after_the_gateways_resends_does_not_invite_the_sdks(
    upstream: CannedServer, tmp_path: Path, stream: bool
) -> None:
    # Three connections dropped after the whole request was read (each may have been
    # generated and billed), then a 500: the gateway resent by its policy, then relays
    # the 500 as it came, and the SDK's own retries begin the whole sequence again.
    for _ in range(3):
        upstream.push(Reply(end="drop"), Reply(end="drop"), Reply(end="drop"))
        upstream.push(json_reply(500, {"error": {"message": "boom", "type": "server_error"}}))
    with (
        running(upstream.url, tmp_path) as (url, _, _tee),
        openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=2) as client,
        pytest.raises(openai.InternalServerError) as raised,
    ):
        got = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=stream
        )
        if stream:
            list(got)
    assert len(upstream.requests) == NO_WAITS.attempts  # 4, not 4 x 3
    assert raised.value.response.headers.get("x-should-retry") == "false"
