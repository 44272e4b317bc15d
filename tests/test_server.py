"""The scripted model server: wire shapes, the token rule, turn selection, errors."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from railings.errors import ConfigurationError
from railings.replay import replay
from railings.testing import Script, ScriptedServer, filler
from railings.testing.raw import RawResponse, raw_request
from railings.testing.script import TOKEN_CHARS, ScriptTurn, ToolCallSpec, plan_turn
from railings.turn.model import Outcome, Termination
from railings.turn.verdict import RejectReason, Verdict

ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01"}
USER = [{"role": "user", "content": "hi"}]

CODING = {
    "seed": 4,
    "turns": [
        {
            "text": "Let me clean up.",
            "thinking": "The user wants the temp dir gone.",
            "tool_calls": [
                {"name": "shell", "arguments": {"command": "rm -rf /tmp/legacy-build"}},
                {"name": "read_file", "arguments": {"path": "README.md"}},
            ],
        },
        {"text": "Done: the directory is gone."},
    ],
}


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(Script.from_dict(CODING)) as srv:
        yield srv


def openai_body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "gpt-4o",
        "messages": USER,
        "stream": True,
        "stream_options": {"include_usage": True},
        **extra,
    }


def anthropic_body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4",
        "max_tokens": 1024,
        "messages": USER,
        "stream": True,
        **extra,
    }


def sse_json(resp: RawResponse) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) per SSE event; ``[DONE]`` stays a string."""
    out: list[tuple[str | None, Any]] = []
    for block in resp.events():
        name, data = None, None
        for line in block.decode().splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:] if line[6:] == "[DONE]" else json.loads(line[6:])
        out.append((name, data))
    return out


# -- OpenAI ----------------------------------------------------------------------------


def test_openai_stream_is_wire_faithful(server: ScriptedServer) -> None:
    resp = raw_request(server.url, "/v1/chat/completions", openai_body())
    assert resp.status == 200 and resp.complete
    assert resp.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert resp.headers["cache-control"] == "no-cache"
    assert resp.headers["x-request-id"].startswith("req_")
    # one SSE event per HTTP chunk, so each is flushed as written
    assert [c.endswith(b"\n\n") and c.count(b"\n\n") == 1 for c in resp.chunks] == [True] * len(
        resp.chunks
    )
    events = [data for _, data in sse_json(resp)]
    assert events[-1] == "[DONE]"
    first, usage = events[0], events[-2]
    assert first["object"] == "chat.completion.chunk" and first["id"].startswith("chatcmpl-")
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": "", "refusal": None}
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == math.ceil(
        (
            len("The user wants the temp dir gone.")
            + len("Let me clean up.")
            + len('{"command": "rm -rf /tmp/legacy-build"}')
            + len('{"path": "README.md"}')
        )
        / 4
    )
    assert all(e["usage"] is None for e in events[:-2])
    deltas = [e["choices"][0]["delta"] for e in events[1:-3]]
    assert "".join(d.get("content", "") for d in deltas) == "Let me clean up."
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert calls[0]["index"] == 0 and calls[0]["type"] == "function"
    assert calls[0]["id"].startswith("call_") and calls[0]["function"] == {
        "name": "shell",
        "arguments": "",
    }
    assert set(calls[1]) == {"index", "function"}
    assert events[-3]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "tool_calls",
    }


def test_openai_stream_without_include_usage_has_no_usage_chunk(server: ScriptedServer) -> None:
    resp = raw_request(
        server.url, "/v1/chat/completions", {"model": "m", "messages": USER, "stream": True}
    )
    events = [data for _, data in sse_json(resp)]
    assert events[-1] == "[DONE]" and events[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert all("usage" not in e for e in events[:-1])


def test_openai_stream_decodes_to_the_scripted_turn(server: ScriptedServer) -> None:
    resp = raw_request(server.url, "/v1/chat/completions", openai_body())
    for chunk_size in (None, 1, 7):
        result = replay(resp.body, provider="openai", chunk_size=chunk_size)
        turn = result.turn
        assert turn.termination is Termination.CLEAN and turn.outcome is Outcome.COMPLETE
        assert turn.text == "Let me clean up." and turn.thinking.startswith("The user wants")
        assert [(c.name, c.arguments) for c in turn.tool_calls] == [
            ("shell", {"command": "rm -rf /tmp/legacy-build"}),
            ("read_file", {"path": "README.md"}),
        ]
        assert [v.verdict for v in result.verdicts] == [Verdict.EXECUTE, Verdict.EXECUTE]


def test_openai_non_streamed(server: ScriptedServer) -> None:
    r = httpx2.post(
        server.openai_base_url + "/chat/completions", json={"model": "gpt-4o", "messages": USER}
    )
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["object"] == "chat.completion"
    message = body["choices"][0]["message"]
    assert message["content"] == "Let me clean up."
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["shell", "read_file"]
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert body["usage"]["total_tokens"] == (
        body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    )


# -- Anthropic ---------------------------------------------------------------------------


def test_anthropic_stream_is_wire_faithful(server: ScriptedServer) -> None:
    resp = raw_request(server.url, "/v1/messages", anthropic_body(), headers=ANTHROPIC_HEADERS)
    assert resp.status == 200 and resp.complete
    assert resp.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert resp.headers["request-id"].startswith("req_011C")
    events = sse_json(resp)
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert all(data["type"] == name for name, data in events)  # event name == data.type
    start = events[0][1]["message"]
    assert start["id"].startswith("msg_01") and start["usage"]["output_tokens"] == 1
    blocks = [d["content_block"]["type"] for n, d in events if n == "content_block_start"]
    assert blocks == ["thinking", "text", "tool_use", "tool_use"]
    deltas = [d["delta"]["type"] for n, d in events if n == "content_block_delta"]
    assert "signature_delta" in deltas and deltas.count("input_json_delta") >= 4
    assert names.count("content_block_stop") == 4
    final = events[-2][1]
    assert final["delta"]["stop_reason"] == "tool_use"
    result = replay(resp.body, provider="anthropic", chunk_size=3)
    assert result.turn.outcome is Outcome.COMPLETE
    assert result.turn.usage is not None
    assert result.turn.usage.output_tokens == final["usage"]["output_tokens"]
    assert [c.arguments for c in result.turn.tool_calls] == [
        {"command": "rm -rf /tmp/legacy-build"},
        {"path": "README.md"},
    ]
    assert result.turn.thinking_signature


def test_anthropic_non_streamed(server: ScriptedServer) -> None:
    r = httpx2.post(
        server.url + "/v1/messages", headers=ANTHROPIC_HEADERS, json=anthropic_body(stream=False)
    )
    body = r.json()
    assert r.status_code == 200 and body["type"] == "message" and "request-id" in r.headers
    assert [b["type"] for b in body["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert body["content"][2]["input"] == {"command": "rm -rf /tmp/legacy-build"}
    assert body["stop_reason"] == "tool_use"


# -- max_tokens: the cut tool call ---------------------------------------------------

CUT_SCRIPT = {
    "turns": [
        {
            "text": "Cleaning up.",
            "tool_calls": [{"name": "shell", "arguments": {"command": "rm -rf /tmp/legacy-build"}}],
        }
    ]
}
# "Cleaning up." is 12 characters; 10 tokens allow 40: 28 characters of arguments.
CUT_ARGS = '{"command": "rm -rf /tmp/leg'


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_max_tokens_cuts_arguments_mid_string(provider: str) -> None:
    with ScriptedServer(CUT_SCRIPT) as srv:
        if provider == "openai":
            resp = raw_request(srv.url, "/v1/chat/completions", openai_body(max_tokens=10))
        else:
            resp = raw_request(
                srv.url, "/v1/messages", anthropic_body(max_tokens=10), headers=ANTHROPIC_HEADERS
            )
    result = replay(resp.body, provider=provider, max_tokens=10)
    turn = result.turn
    assert turn.outcome is Outcome.COMPLETE and turn.truncated
    assert turn.stop_reason == "max_tokens"
    assert turn.stop_reason_wire == ("length" if provider == "openai" else "max_tokens")
    assert turn.text == "Cleaning up."
    assert [c.raw_arguments for c in turn.tool_calls] == [CUT_ARGS]
    assert turn.usage is not None and turn.usage.output_tokens == 10
    (verdict,) = result.verdicts
    assert verdict.verdict is Verdict.REJECT and verdict.reason is RejectReason.TRUNCATED
    if provider == "anthropic":  # as the real API: the cut tool_use block is never stopped
        names = [name for name, _ in sse_json(resp)]
        assert names.count("content_block_stop") == 1


def test_plan_token_rule_is_exact() -> None:
    ids = iter(f"id{i}" for i in range(10))
    turn = ScriptTurn(
        text="abcdefgh", tool_calls=(ToolCallSpec("a", '{"x": 1}'), ToolCallSpec("b", '{"y": 2}'))
    )
    whole = plan_turn(turn, None, lambda: next(ids))
    assert not whole.truncated and whole.output_tokens == math.ceil(24 / TOKEN_CHARS)
    assert whole.stop_reason == "tool_use"
    # the budget ends exactly where the first call ends: the second is never started
    exact = plan_turn(turn, 4, lambda: next(ids))
    assert exact.truncated and [c.name for c in exact.calls] == ["a"]
    assert exact.calls[0].complete and exact.output_tokens == 4
    cut = plan_turn(turn, 1, lambda: next(ids))
    assert cut.text == "abcd" and not cut.calls and cut.stop_reason == "max_tokens"
    forced = plan_turn(ScriptTurn(text="x", stop_reason="stop_sequence"), 5, lambda: "i")
    assert forced.stop_reason == "stop_sequence" and not forced.truncated


# -- turn selection ------------------------------------------------------------------------


def test_turn_is_chosen_by_assistant_messages(server: ScriptedServer) -> None:
    after_tool = [
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    r = httpx2.post(
        server.openai_base_url + "/chat/completions", json={"model": "m", "messages": after_tool}
    )
    assert r.json()["choices"][0]["message"]["content"] == "Done: the directory is gone."
    assert r.json()["choices"][0]["finish_reason"] == "stop"
    r = httpx2.post(
        server.openai_base_url + "/chat/completions",
        json={"model": "m", "messages": USER},
        headers={"x-railings-turn": "1"},
    )
    assert r.json()["choices"][0]["message"]["content"] == "Done: the directory is gone."
    recorded = server.requests[-1]
    assert recorded.turn == 1 and recorded["messages"] == USER and recorded.status == 200


def test_exhausted_script() -> None:
    three = [
        *USER,
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "c"},
    ]
    with ScriptedServer({"turns": [{"text": "one"}, {"text": "two"}]}) as srv:
        r = httpx2.post(
            srv.openai_base_url + "/chat/completions", json={"model": "m", "messages": three}
        )
        assert r.json()["choices"][0]["message"]["content"] == "two"
    with ScriptedServer({"turns": [{"text": "one"}], "on_exhausted": "error"}) as srv:
        r = httpx2.post(
            srv.openai_base_url + "/chat/completions", json={"model": "m", "messages": three}
        )
        assert r.status_code == 400 and "script has 1 turns" in r.json()["error"]["message"]


# -- errors --------------------------------------------------------------------------------


def test_auth_errors_in_each_providers_format() -> None:
    with ScriptedServer({"turns": [{"text": "hi"}], "api_key": "sk-right-key-123"}) as srv:
        r = httpx2.post(
            srv.openai_base_url + "/chat/completions", json={"model": "m", "messages": USER}
        )
        assert r.status_code == 401 and r.json()["error"]["type"] == "invalid_request_error"
        assert "x-request-id" in r.headers
        r = httpx2.post(
            srv.openai_base_url + "/chat/completions",
            json={"model": "m", "messages": USER},
            headers={"authorization": "Bearer sk-wrong-key-999"},
        )
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        assert "sk-wrong-key-999" not in r.text
        r = httpx2.post(srv.url + "/v1/messages", headers=ANTHROPIC_HEADERS, json=anthropic_body())
        assert r.status_code == 401
        assert r.json()["type"] == "error"
        assert r.json()["error"] == {
            "type": "authentication_error",
            "message": "x-api-key header is required",
        }
        r = httpx2.post(
            srv.url + "/v1/messages",
            json=anthropic_body(),
            headers={**ANTHROPIC_HEADERS, "x-api-key": "sk-right-key-123"},
        )
        assert r.status_code == 200
        assert srv.requests[-1].headers["x-api-key"] == "<redacted>"


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "check"),
    [
        ("/v1/chat/completions", b"{not json", {}, 400, "invalid_request_error"),
        ("/v1/chat/completions", {"model": "m"}, {}, 400, "invalid_request_error"),
        (
            "/v1/messages",
            {"model": "m", "messages": USER},
            ANTHROPIC_HEADERS,
            400,
            "invalid_request_error",
        ),
        ("/v1/messages", anthropic_body(), {}, 400, "invalid_request_error"),
        ("/v1/nope", {}, {}, 404, "invalid_request_error"),
        ("/v1/nope", {}, ANTHROPIC_HEADERS, 404, "not_found_error"),
    ],
)
def test_request_errors(
    server: ScriptedServer, path: str, body: Any, headers: dict[str, str], status: int, check: str
) -> None:
    resp = raw_request(server.url, path, body, headers=headers)
    assert resp.status == status and resp.complete
    payload = json.loads(resp.body)
    kind = payload["error"]["type"]
    assert kind == check
    if payload.get("type") == "error":  # Anthropic's envelope
        assert payload["request_id"] == resp.headers["request-id"]


def test_wrong_method(server: ScriptedServer) -> None:
    resp = raw_request(server.url, "/v1/chat/completions", method="GET")
    assert resp.status == 405


# -- scripts, size, life cycle ------------------------------------------------------------


def test_one_megabyte_argument_streams_in_many_events(tmp_path: Path) -> None:
    size = 1 << 20
    script = {
        "chunk_size": 2048,
        "turns": [
            {
                "tool_calls": [
                    {
                        "name": "write_file",
                        "arguments": {"path": "big.txt", "content": {"$filler": size}},
                    }
                ]
            }
        ],
    }
    path = tmp_path / "big.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    with ScriptedServer(Script.load(path)) as srv:
        resp = raw_request(
            srv.url,
            "/v1/messages",
            anthropic_body(max_tokens=10**6),
            headers=ANTHROPIC_HEADERS,
            timeout=30,
        )
    assert resp.complete and len(resp.chunks) > size // 2048
    result = replay(resp.body, provider="anthropic")
    (call,) = result.turn.tool_calls
    assert call.arguments == {"path": "big.txt", "content": filler(size)}


def test_script_validation() -> None:
    with pytest.raises(ConfigurationError):
        Script.from_dict({"turns": []})
    with pytest.raises(ConfigurationError):
        Script.from_dict({"turns": [{"txet": "typo"}]})
    with pytest.raises(ConfigurationError):
        Script.from_dict({"turns": [{"text": {"$filler": -1}}]})
    with pytest.raises(ConfigurationError):
        Script.load("/nonexistent/script.json")
    raw = Script.from_dict({"turns": [{"tool_calls": [{"name": "f", "arguments": "{bad"}]}]})
    assert raw.turns[0].tool_calls[0].arguments == "{bad"
    assert len(filler(1000)) == 1000 and filler(10) == filler(10)


def test_async_api() -> None:
    async def main() -> str:
        async with ScriptedServer(Script.text("async hello")) as srv, httpx2.AsyncClient() as c:
            r = await c.post(
                srv.openai_base_url + "/chat/completions", json={"model": "m", "messages": USER}
            )
            return str(r.json()["choices"][0]["message"]["content"])

    assert asyncio.run(main()) == "async hello"


def test_servers_get_distinct_free_ports() -> None:
    with ScriptedServer(Script.text("a")) as one, ScriptedServer(Script.text("b")) as two:
        assert one.port != two.port and one.url.startswith("http://127.0.0.1:")
        assert one.anthropic_base_url == one.url
        assert one.openai_base_url == one.url + "/v1"
