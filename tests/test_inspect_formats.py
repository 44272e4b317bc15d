"""railings.inspect for google-genai responses, boto3 converse_stream events and ollama
ChatResponses: plain dicts shaped like those objects (the corpus captures' own objects,
which are what the clients parse), and duck-typed objects that dump to them."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import railings
from conftest import CORPUS
from railings.errors import ConfigurationError
from railings.turn.model import Termination
from railings.turn.verdict import RejectReason, Verdict
from railings.wire.eventstream import EventStreamDecoder


def gemini_chunks(name: str) -> list[dict[str, Any]]:
    """The GenerateContentResponse objects of a capture (``to_json_dict()``'s spelling)."""
    text = (CORPUS / "gemini" / name).read_text(encoding="utf-8")
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def snake(value: Any) -> Any:
    """``model_dump()``'s spelling: snake_case keys, the thought signature as bytes."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = "".join(f"_{c.lower()}" if c.isupper() else c for c in key)
            if key == "thoughtSignature":
                out[name] = base64.b64decode(item)
            else:
                out[name] = item if key == "args" else snake(item)
        return out
    if isinstance(value, list):
        return [snake(item) for item in value]
    return value


def bedrock_events(name: str) -> list[dict[str, Any]]:
    """boto3's converse_stream events for a capture: ``{eventType: payload}``, the blobs
    (``redactedContent``) as bytes."""
    out = []
    for message in EventStreamDecoder().feed((CORPUS / "bedrock" / name).read_bytes()):
        kind = message.text_header(":event-type") or message.text_header(":exception-type")
        payload = json.loads(message.payload)
        reasoning = payload.get("delta", {}).get("reasoningContent", {})
        if "redactedContent" in reasoning:
            reasoning["redactedContent"] = base64.b64decode(reasoning["redactedContent"])
        out.append({kind: payload})
    return out


def ollama_chunks(name: str) -> list[dict[str, Any]]:
    text = (CORPUS / "ollama" / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class Dumps:
    """A pydantic-like object: what ``model_dump()`` returns."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return self._data

    def __iter__(self) -> Any:  # pydantic models iterate over (field, value) pairs
        return iter(self._data.items())


@pytest.mark.parametrize("spelling", ["wire", "model_dump"])
def test_a_gemini_stream_of_responses_is_judged_as_the_stream(spelling: str) -> None:
    chunks = gemini_chunks("tool_call_gemini_3_pro.sse")
    objects = chunks if spelling == "wire" else [Dumps(snake(c)) for c in chunks]
    result = railings.inspect(objects)
    stream = railings.replay((CORPUS / "gemini" / "tool_call_gemini_3_pro.sse").read_bytes())
    assert result.turn == stream.turn
    assert result.turn.parts and result.turn.termination is Termination.CLEAN
    assert [v.verdict for v in result.verdicts] == [Verdict.EXECUTE]


def test_a_gemini_response_cut_by_max_tokens_is_truncated() -> None:
    chunks = gemini_chunks("text_max_tokens_gemini_2_0_flash.sse")
    result = railings.inspect(chunks, max_tokens=200)
    assert result.turn.truncated and result.turn.stop_reason == "max_tokens"


def test_a_gemini_chunk_from_mid_stream_proves_nothing() -> None:
    first = gemini_chunks("text_signature_gemini_3_pro.sse")[0]
    assert railings.inspect(first).turn.termination is Termination.ABRUPT


@pytest.mark.parametrize("wrapped", [False, True])
def test_boto3_converse_stream_events_are_judged_as_the_stream(wrapped: bool) -> None:
    name = "redacted_reasoning_tool_use.bin"
    events = bedrock_events(name)
    obj: Any = (
        {"ResponseMetadata": {"HTTPStatusCode": 200}, "stream": events} if wrapped else events
    )
    result = railings.inspect(obj)
    assert result.turn == railings.replay((CORPUS / "bedrock" / name).read_bytes()).turn
    assert result.turn.redacted_thinking  # bytes back in base64, as on the wire


def test_boto3_events_without_message_stop_are_interrupted() -> None:
    events = [e for e in bedrock_events("several_tools.bin") if "messageStop" not in e]
    result = railings.inspect(events)
    assert result.turn.termination is Termination.ABRUPT
    assert all(v.reason is RejectReason.INTERRUPTED for v in result.verdicts)


def test_a_boto3_exception_event_is_a_typed_error() -> None:
    result = railings.inspect(
        [{"messageStart": {"role": "assistant"}}, {"throttlingException": {"message": "slow down"}}]
    )
    error = result.turn.error
    assert error is not None and error.provider_type == "throttlingException" and error.retryable


@pytest.mark.parametrize(
    "name", ["thinking_two_tool_calls_qwen3_5.ndjson", "docs_streaming_tool_call.ndjson"]
)
def test_ollama_chat_responses_are_judged_as_the_stream(name: str) -> None:
    chunks = ollama_chunks(name)
    # model_dump() keeps every unset field as None.
    dumped = [
        Dumps({**c, "message": {"images": None, "tool_name": None, **c["message"]}}) for c in chunks
    ]
    stream = railings.replay((CORPUS / "ollama" / name).read_bytes()).turn
    assert railings.inspect(chunks).turn == stream
    assert railings.inspect(dumped).turn == stream
    if len(chunks) == 1:
        assert railings.inspect(chunks[0]).turn == stream  # stream: false, one ChatResponse


def test_an_ollama_chunk_before_done_proves_nothing() -> None:
    chunks = ollama_chunks("docs_streaming_no_done_reason.ndjson")
    assert railings.inspect(chunks[:-1]).turn.termination is Termination.ABRUPT


def test_other_shapes_are_still_refused() -> None:
    with pytest.raises(ConfigurationError, match="ollama ChatResponse"):
        railings.inspect({"nothing": 1})
