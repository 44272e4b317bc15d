"""Acceptance: the official ``google-genai``, ``boto3`` and ``ollama`` packages parse the
scripted server's Gemini, Bedrock Converse and Ollama answers, streamed and not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import httpx2
import ollama
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from railings.testing import ScriptedServer

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
ARGS = [{"city": "Edinburgh"}, {"ticker": "AAPL"}]
NAMES = ["get_weather", "get_stock_price"]
# 13 tokens = 52 characters: the thinking (25) and the text (16) fit, the first call's
# arguments (21) are cut after 11 characters: the output-limit cut of a tool call.
CUT = 13


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCRIPT) as srv:
        yield srv


# -- Gemini ---------------------------------------------------------------------------
# One client per test, kept referenced: google-genai closes its http client when the
# Client object is collected, even while a stream it returned is still being read.
_CLIENTS: list[genai.Client] = []


def _gemini(server: ScriptedServer) -> genai.Client:
    client = genai.Client(api_key="gm-test", http_options={"base_url": server.url})
    _CLIENTS.append(client)
    return client


def _gemini_config(max_tokens: int | None = None) -> genai_types.GenerateContentConfig:
    return genai_types.GenerateContentConfig(max_output_tokens=max_tokens)


def _gemini_calls(parts: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(p.function_call.name, p.function_call.args) for p in parts if p.function_call]


def test_gemini_stream_text_thinking_and_calls(server: ScriptedServer) -> None:
    chunks = list(
        _gemini(server).models.generate_content_stream(
            model="gemini-test", contents="Weather in Edinburgh, and AAPL?"
        )
    )
    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    assert "".join(p.text for p in parts if p.thought and p.text) == "Two lookups, in parallel."
    assert "".join(p.text for p in parts if not p.thought and p.text) == "I'll check both."
    assert _gemini_calls(parts) == list(zip(NAMES, ARGS, strict=True))
    # The thought signature goes on the first part after the thinking, once.
    assert sum(1 for p in parts if p.thought_signature) == 1
    finishes = [c.candidates[0].finish_reason for c in chunks]
    assert finishes[-1] == genai_types.FinishReason.STOP
    assert all(f is None for f in finishes[:-1])
    assert chunks[-1].usage_metadata.thoughts_token_count == 7
    request = server.requests[-1]
    assert request.path.endswith("/models/gemini-test:streamGenerateContent")
    assert request.headers["x-goog-api-key"] == "<redacted>"
    assert request.provider == "gemini" and request.stream and request.turn == 0


def test_gemini_whole_response_and_second_turn(server: ScriptedServer) -> None:
    client = _gemini(server)
    first = client.models.generate_content(model="gemini-test", contents="Weather?")
    assert first.text == "I'll check both."
    assert _gemini_calls(first.candidates[0].content.parts) == list(zip(NAMES, ARGS, strict=True))
    history = [
        genai_types.Content(role="user", parts=[genai_types.Part(text="Weather?")]),
        first.candidates[0].content,
        genai_types.Content(
            role="user",
            parts=[
                genai_types.Part.from_function_response(name=n, response={"ok": True})
                for n in NAMES
            ],
        ),
    ]
    second = client.models.generate_content(model="gemini-test", contents=history)
    assert second.text == "It is 12°C in Edinburgh and AAPL is at 200."
    assert second.candidates[0].finish_reason == genai_types.FinishReason.STOP
    assert server.requests[-1].turn == 1 and not server.requests[-1].stream


def test_gemini_output_limit_cut_leaves_the_call_out(server: ScriptedServer) -> None:
    chunks = list(
        _gemini(server).models.generate_content_stream(
            model="gemini-test", contents="Weather?", config=_gemini_config(CUT)
        )
    )
    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    assert _gemini_calls(parts) == []
    assert chunks[-1].candidates[0].finish_reason == genai_types.FinishReason.MAX_TOKENS


def test_gemini_stream_without_alt_sse_is_one_json_array(server: ScriptedServer) -> None:
    url = server.url + "/v1beta/models/gemini-test:streamGenerateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}
    reply = httpx2.post(url, json=body)
    chunks = reply.json()
    assert isinstance(chunks, list) and len(chunks) > 1
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_gemini_errors_in_google_shape() -> None:
    with ScriptedServer({"api_key": "gm-right", "turns": [{"text": "x"}]}) as srv:
        client = genai.Client(api_key="gm-wrong", http_options={"base_url": srv.url})
        with pytest.raises(genai_errors.ClientError) as caught:
            client.models.generate_content(model="gemini-test", contents="Hi")
    assert caught.value.code == 401 and caught.value.status == "UNAUTHENTICATED"
    assert "API key not valid" in str(caught.value.message)


# -- Bedrock --------------------------------------------------------------------------
def _bedrock(server: ScriptedServer) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret",
        config=Config(retries={"max_attempts": 1}),
    )


USER_BEDROCK: list[Any] = [{"role": "user", "content": [{"text": "Weather, and AAPL?"}]}]


def _join_bedrock(events: list[dict[str, Any]]) -> dict[str, Any]:
    text, thinking, signature = [], [], []
    calls: dict[int, dict[str, Any]] = {}
    stops, kinds = [], []
    for event in events:
        ((kind, payload),) = event.items()
        kinds.append(kind)
        if kind == "contentBlockStart" and "toolUse" in payload["start"]:
            tool = payload["start"]["toolUse"]
            calls[payload["contentBlockIndex"]] = {"name": tool["name"], "input": []}
        elif kind == "contentBlockDelta":
            delta = payload["delta"]
            if "text" in delta:
                text.append(delta["text"])
            elif "reasoningContent" in delta:
                thinking.append(delta["reasoningContent"].get("text", ""))
                signature.append(delta["reasoningContent"].get("signature", ""))
            elif "toolUse" in delta:
                calls[payload["contentBlockIndex"]]["input"].append(delta["toolUse"]["input"])
        elif kind == "contentBlockStop":
            stops.append(payload["contentBlockIndex"])
    stop = next(e["messageStop"]["stopReason"] for e in events if "messageStop" in e)
    return {
        "text": "".join(text),
        "thinking": "".join(thinking),
        "signed": any(signature),
        "calls": [(c["name"], "".join(c["input"])) for _, c in sorted(calls.items())],
        "stopped": stops,
        "stop": stop,
        "kinds": kinds,
    }


def test_bedrock_converse_stream(server: ScriptedServer) -> None:
    reply = _bedrock(server).converse_stream(modelId="anthropic.claude-test", messages=USER_BEDROCK)
    joined = _join_bedrock(list(reply["stream"]))
    assert joined["text"] == "I'll check both."
    assert joined["thinking"] == "Two lookups, in parallel." and joined["signed"]
    assert [(n, json.loads(a)) for n, a in joined["calls"]] == list(zip(NAMES, ARGS, strict=True))
    assert joined["stop"] == "tool_use"
    assert joined["kinds"][0] == "messageStart" and joined["kinds"][-2:] == [
        "messageStop",
        "metadata",
    ]
    request = server.requests[-1]
    assert request.path == "/model/anthropic.claude-test/converse-stream"
    assert request.provider == "bedrock" and request.stream
    assert request.headers["authorization"] == "<redacted>"


def test_bedrock_converse_whole_and_second_turn(server: ScriptedServer) -> None:
    client = _bedrock(server)
    first = client.converse(modelId="m", messages=USER_BEDROCK)
    content = first["output"]["message"]["content"]
    assert content[0]["reasoningContent"]["reasoningText"]["text"] == "Two lookups, in parallel."
    assert content[1] == {"text": "I'll check both."}
    assert [(b["toolUse"]["name"], b["toolUse"]["input"]) for b in content[2:]] == list(
        zip(NAMES, ARGS, strict=True)
    )
    assert first["stopReason"] == "tool_use" and first["usage"]["outputTokens"] > 0
    results = [
        {"toolResult": {"toolUseId": b["toolUse"]["toolUseId"], "content": [{"text": "ok"}]}}
        for b in content[2:]
    ]
    history = [*USER_BEDROCK, first["output"]["message"], {"role": "user", "content": results}]
    second = client.converse(modelId="m", messages=history)
    assert second["output"]["message"]["content"] == [
        {"text": "It is 12°C in Edinburgh and AAPL is at 200."}
    ]
    assert second["stopReason"] == "end_turn"


def test_bedrock_output_limit_cut_of_a_tool_call(server: ScriptedServer) -> None:
    reply = _bedrock(server).converse_stream(
        modelId="m", messages=USER_BEDROCK, inferenceConfig={"maxTokens": CUT}
    )
    joined = _join_bedrock(list(reply["stream"]))
    assert joined["stop"] == "max_tokens"
    assert joined["calls"] == [("get_weather", '{"city": "E')]
    assert 2 not in joined["stopped"]  # the cut call's block is never stopped


def test_bedrock_http_error_names_its_type() -> None:
    script = {"api_key": "AKIDRIGHT", "turns": [{"text": "x"}]}
    with ScriptedServer(script) as srv, pytest.raises(ClientError) as caught:
        _bedrock(srv).converse(modelId="m", messages=USER_BEDROCK)
    error = caught.value.response
    assert error["Error"]["Code"] == "UnrecognizedClientException"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 403


# -- Ollama ---------------------------------------------------------------------------
USER_OLLAMA: list[Any] = [{"role": "user", "content": "Weather, and AAPL?"}]


def test_ollama_chat_stream(server: ScriptedServer) -> None:
    parts = list(
        ollama.Client(host=server.url).chat(model="qwen3", messages=USER_OLLAMA, stream=True)
    )
    assert "".join(p.message.thinking or "" for p in parts) == "Two lookups, in parallel."
    assert "".join(p.message.content or "" for p in parts) == "I'll check both."
    calls = [c for p in parts for c in p.message.tool_calls or []]
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == list(
        zip(NAMES, ARGS, strict=True)
    )
    assert [p.done for p in parts].count(True) == 1 and parts[-1].done
    assert parts[-1].done_reason == "stop" and parts[-1].eval_count > 0
    request = server.requests[-1]
    assert request.path == "/api/chat" and request.provider == "ollama" and request.stream


def test_ollama_chat_whole_and_default_stream(server: ScriptedServer) -> None:
    client = ollama.Client(host=server.url)
    whole = client.chat(model="qwen3", messages=USER_OLLAMA, stream=False)
    assert whole.done and whole.message.content == "I'll check both."
    assert whole.message.thinking == "Two lookups, in parallel."
    assert [c.function.name for c in whole.message.tool_calls or []] == NAMES
    assert not server.requests[-1].stream
    history = [
        *USER_OLLAMA,
        whole.message.model_dump(exclude_none=True),
        *({"role": "tool", "content": "ok", "tool_name": n} for n in NAMES),
    ]
    second = client.chat(model="qwen3", messages=history, stream=False)
    assert second.message.content == "It is 12°C in Edinburgh and AAPL is at 200."
    # Ollama streams unless the request says "stream": false.
    raw = httpx2.post(server.url + "/api/chat", json={"model": "q", "messages": USER_OLLAMA})
    assert raw.headers["content-type"] == "application/x-ndjson"
    assert json.loads(raw.text.splitlines()[-1])["done"] is True


def test_ollama_output_limit_cut_leaves_the_call_out(server: ScriptedServer) -> None:
    parts = list(
        ollama.Client(host=server.url).chat(
            model="q", messages=USER_OLLAMA, stream=True, options={"num_predict": CUT}
        )
    )
    assert not [c for p in parts for c in p.message.tool_calls or []]
    assert parts[-1].done_reason == "length"


def test_ollama_error_shape() -> None:
    with ScriptedServer({"on_exhausted": "error", "turns": [{"text": "x"}]}) as srv:
        history = [*USER_OLLAMA, {"role": "assistant", "content": "x"}, *USER_OLLAMA]
        with pytest.raises(ollama.ResponseError) as caught:
            ollama.Client(host=srv.url).chat(model="q", messages=history, stream=False)
    assert caught.value.status_code == 400 and "the script has 1 turns" in caught.value.error


# -- keys and error shapes, raw -------------------------------------------------------
def test_boto3_sigv4_access_key_is_the_script_key() -> None:
    """A SigV4 request names its access key id: the script's ``api_key`` checks it."""
    with ScriptedServer({"api_key": "AKIDTEST", "turns": [{"text": "signed"}]}) as srv:
        reply = _bedrock(srv).converse(modelId="m", messages=USER_BEDROCK)
        assert reply["output"]["message"]["content"] == [{"text": "signed"}]
        missing = httpx2.post(srv.url + "/model/m/converse", json={"messages": USER_BEDROCK})
    assert missing.status_code == 403
    assert missing.headers["x-amzn-errortype"] == "AccessDeniedException"
    assert missing.json()["message"] == "Missing Authentication Token"


def test_bedrock_model_id_is_percent_encoded_in_the_path(server: ScriptedServer) -> None:
    model = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude"
    _bedrock(server).converse(modelId=model, messages=USER_BEDROCK)
    assert server.requests[-1].path.startswith("/model/arn%3Aaws%3Abedrock")
    assert server.requests[-1].status == 200


def test_ollama_bearer_key_when_the_script_requires_one() -> None:
    with ScriptedServer({"api_key": "ol-key", "turns": [{"text": "ok"}]}) as srv:
        good = ollama.Client(host=srv.url, headers={"Authorization": "Bearer ol-key"})
        assert good.chat(model="q", messages=USER_OLLAMA, stream=False).message.content == "ok"
        with pytest.raises(ollama.ResponseError) as caught:
            ollama.Client(host=srv.url).chat(model="q", messages=USER_OLLAMA, stream=False)
    assert caught.value.status_code == 401 and caught.value.error == "unauthorized"


@pytest.mark.parametrize(
    ("path", "body", "status", "check"),
    [
        (
            "/v1beta/models/g:generateContent",
            {"contents": []},
            400,
            lambda b: b["error"]["status"] == "INVALID_ARGUMENT",
        ),
        (
            "/v1beta/models/g:countTokens",
            {"contents": []},
            404,
            lambda b: b["error"]["code"] == 404 and b["error"]["status"] == "NOT_FOUND",
        ),
        (
            "/model/m/converse-stream",
            {"messages": "no"},
            400,
            lambda b: b["__type"] == "ValidationException" and b["message"],
        ),
        ("/api/chat", {"messages": []}, 400, lambda b: b == {"error": "model is required"}),
    ],
)
def test_error_bodies_in_each_formats_shape(
    server: ScriptedServer, path: str, body: Any, status: int, check: Any
) -> None:
    reply = httpx2.post(server.url + path, json=body)
    assert reply.status_code == status and check(reply.json()), reply.text
    if path.startswith("/model/"):
        assert reply.headers["x-amzn-errortype"] == "ValidationException"


# -- railings' own reader on the scripted streams ---------------------------------------
STREAMS = [
    ("gemini", "/v1beta/models/g:streamGenerateContent?alt=sse", "GEMINI"),
    ("bedrock", "/model/m/converse-stream", "BEDROCK"),
    ("ollama", "/api/chat", "OLLAMA"),
]


def _ask(wire: str, max_tokens: int | None) -> dict[str, Any]:
    if wire == "GEMINI":
        config = {"generationConfig": {"maxOutputTokens": max_tokens}} if max_tokens else {}
        return {"contents": [{"role": "user", "parts": [{"text": "Go."}]}], **config}
    if wire == "BEDROCK":
        config = {"inferenceConfig": {"maxTokens": max_tokens}} if max_tokens else {}
        return {"messages": USER_BEDROCK, **config}
    options = {"options": {"num_predict": max_tokens}} if max_tokens else {}
    return {"model": "q", "messages": USER_OLLAMA, **options}


@pytest.mark.parametrize(("provider", "path", "wire"), STREAMS, ids=[s[0] for s in STREAMS])
def test_railings_reads_the_scripted_streams_as_the_script_says(
    server: ScriptedServer, provider: str, path: str, wire: str
) -> None:
    from railings.turn.reader import StreamReader

    def read(max_tokens: int | None) -> Any:
        body = httpx2.post(server.url + path, json=_ask(wire, max_tokens)).content
        reader = StreamReader(provider, max_tokens=max_tokens or 4096)
        for i in range(0, len(body), 7):  # in pieces that split events and UTF-8 alike
            reader.feed(body[i : i + 7])
        reader.close()
        return reader.turn()

    whole = read(None)
    assert whole.outcome.value == "complete" and whole.stop_reason == "tool_use"
    assert whole.text == "I'll check both." and whole.thinking == "Two lookups, in parallel."
    assert [(c.name, c.arguments) for c in whole.tool_calls] == list(zip(NAMES, ARGS, strict=True))
    cut = read(CUT)
    assert cut.outcome.value == "complete" and cut.truncated and cut.stop_reason == "max_tokens"
    # Bedrock streams the cut call's fragments (never closed); Gemini and Ollama never send it.
    assert [c.name for c in cut.tool_calls] == (["get_weather"] if provider == "bedrock" else [])
