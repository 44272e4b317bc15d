"""The gateway knows the request's output limit: billed output that reaches it arms the
truncation gate, whatever stop reason the upstream claims (servers report ``tool_calls``
for turns their ``max_tokens`` cut). A real upstream on 127.0.0.1 answers a Chat turn
that says ``tool_calls`` with 16 tokens billed and a call cut mid-string."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from _server import CannedServer, Reply
from railings.gateway.shapes import CUT_CODE
from railings.testing.raw import raw_request
from tests.gateway_kit import PATHS, body, headers, running
from tests.test_usage_at_cap import CUT, WHY, cut_at_cap

ARGUMENT = b"rm -rf /tmp/leg"


@pytest.fixture()
def upstream() -> Iterator[CannedServer]:
    with CannedServer() as server:
        yield server


def _answer(completion_tokens: int) -> bytes:
    """The same turn, not streamed."""
    call = {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": CUT}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": completion_tokens},
        }
    ).encode()


def test_a_stream_whose_usage_reaches_max_tokens_has_its_cut_call_refused(
    upstream: CannedServer, tmp_path: Path
) -> None:
    upstream.push(Reply(200, cut_at_cap()))
    with running(upstream.url, tmp_path) as (url, gateway, _):
        got = raw_request(
            url, PATHS["openai"], body("openai", max_tokens=16), headers=headers("openai")
        )
        refused = gateway.metrics.value(
            "railings_gateway_streams_total", provider="openai", outcome="refused"
        )
    assert got.status == 200
    assert CUT_CODE.encode() in got.body and WHY.encode() in got.body
    assert ARGUMENT not in got.body  # the cut arguments never reached the client
    assert refused == 1
    assert len(upstream.requests) == 1  # refused, never resent: it was billed


def test_below_the_limit_the_stream_passes_as_the_upstream_sent_it(
    upstream: CannedServer, tmp_path: Path
) -> None:
    upstream.push(Reply(200, cut_at_cap()))
    with running(upstream.url, tmp_path) as (url, _gateway, _):
        got = raw_request(
            url, PATHS["openai"], body("openai", max_tokens=17), headers=headers("openai")
        )
    assert got.status == 200
    assert got.body == b"".join(cut_at_cap())  # the stop reason alone decides: not cut


def test_a_json_answer_whose_usage_reaches_max_tokens_is_refused_with_a_502(
    upstream: CannedServer, tmp_path: Path
) -> None:
    upstream.push(Reply(200, [_answer(16)], (("content-type", "application/json"),)))
    with running(upstream.url, tmp_path) as (url, _gateway, _):
        request = body("openai", stream=False, max_tokens=16)
        got = raw_request(url, PATHS["openai"], request, headers=headers("openai"))
    assert got.status == 502
    assert got.headers.get("x-should-retry") == "false"
    error = json.loads(got.body)["error"]
    assert error["code"] == CUT_CODE and WHY in error["message"]
    assert ARGUMENT not in got.body
