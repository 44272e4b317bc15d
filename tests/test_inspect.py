"""railings.inspect agrees with railings replay on objects the official SDKs build
from the same bytes (through their own stream accumulators, over httpx2.MockTransport)."""

from __future__ import annotations

import anthropic
import httpx2
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from conftest import REAL, manifest
from railings import ConfigurationError, RejectReason, inspect, replay

ROWS = manifest()
# The SDKs themselves raise on these streams, so there is no object to inspect:
# the in-stream provider errors (Groq, OpenRouter) and Mistral's index-less tool call
# (the openai SDK's accumulator fails with a TypeError on it).
SDK_RAISES = {
    "groq/midstream_error_event_no_done.sse": openai.APIError,
    "openrouter/error_in_chunk_after_length.sse": openai.APIError,
    "mistral/tool_call_without_index.sse": TypeError,
}


def _http(body: bytes) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def _openai_object(body: bytes) -> object:
    client = openai.OpenAI(
        api_key="sk-test", base_url="http://test/v1", http_client=_http(body), max_retries=0
    )
    state = ChatCompletionStreamState()
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True
    )
    for chunk in stream:
        state.handle_chunk(chunk)
    # get_final_completion() raises LengthFinishReasonError at `length`; the snapshot is the object.
    return state.current_completion_snapshot


def _anthropic_object(body: bytes) -> object:
    client = anthropic.Anthropic(
        api_key="sk-test", base_url="http://test", http_client=_http(body), max_retries=0
    )
    with client.messages.stream(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
    ) as s:
        return s.get_final_message()


def _facts(result):  # type: ignore[no-untyped-def]
    turn = result.turn
    return (
        turn.stop_reason,
        turn.truncated,
        [(v.call.id, v.call.name, v.verdict, v.reason) for v in result.verdicts],
        [(c.id, c.name) for c in turn.server_tool_calls],
    )


# The openai SDK's own accumulator warns on Magistral's list-of-parts content.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_inspect_agrees_with_replay(row: dict[str, str]) -> None:
    body = (REAL / row["file"]).read_bytes()
    build = _openai_object if row["provider"] == "openai-chat" else _anthropic_object
    if row["file"] in SDK_RAISES:
        with pytest.raises(SDK_RAISES[row["file"]]):
            build(body)
        return
    assert _facts(inspect(build(body))) == _facts(replay(body))


def test_non_streamed_chat_completion_cut_at_length() -> None:
    completion = openai.types.chat.ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "length",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {
                                    "name": "shell",
                                    "arguments": '{"command": "rm -rf /tmp/leg',
                                },
                            },
                            {
                                "id": "c0",
                                "type": "function",
                                "function": {"name": "shell", "arguments": '{"command": "ls"}'},
                            },
                        ],
                    },
                }
            ],
        }
    )
    result = inspect(completion)
    assert result.turn.truncated
    first, second = result.verdicts
    assert first.reason is RejectReason.TRUNCATED and "NOT executed" in (first.notice or "")
    assert second.execute and second.arguments == {"command": "ls"}


def test_anthropic_message_cut_at_max_tokens_runs_none_of_its_tool_blocks() -> None:
    """The SDK keeps `input` parsed (a cut fragment becomes {} or a partial object)."""
    message = anthropic.types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "stop_reason": "max_tokens",
            "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 64},
            "content": [
                {"type": "tool_use", "id": "t0", "name": "shell", "input": {"command": "ls"}},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "shell",
                    "input": {"command": "rm -rf /tmp/leg"},
                },
            ],
        }
    )
    first, second = inspect(message).verdicts
    # The SDK parsed both inputs; the raw text is gone, so neither can be proven whole.
    assert first.reason is second.reason is RejectReason.TRUNCATED
    assert first.call.origin == second.call.origin == "parsed"


def test_responses_object_incomplete_at_max_output_tokens() -> None:
    response = {
        "id": "resp_1",
        "object": "response",
        "model": "m",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "shell",
                "arguments": '{"command": "rm -rf /tmp/leg',
                "status": "incomplete",
            }
        ],
        "usage": {"input_tokens": 3, "output_tokens": 16},
    }
    result = inspect(response)
    assert result.turn.provider == "openai-responses" and result.turn.stop_reason == "max_tokens"
    assert result.verdicts[0].reason is RejectReason.TRUNCATED


def test_unknown_object_is_a_typed_error() -> None:
    with pytest.raises(ConfigurationError):
        inspect(42)
    with pytest.raises(ConfigurationError):
        inspect({"hello": "world"})


def test_an_answer_without_usage_has_its_counts_estimated_or_unknown_and_says_so() -> None:
    message = {"role": "assistant", "content": "x" * 41}
    answer = {"id": "c", "object": "chat.completion", "model": "m"}
    bare = {**answer, "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    usage = inspect(bare).turn.usage
    assert (usage.input_tokens, usage.input_source) == (None, "unknown")
    assert (usage.output_tokens, usage.output_source, usage.method) == (11, "estimated", "chars/4")
    sized = inspect(bare, request_chars=400).turn.usage
    assert (sized.input_tokens, sized.input_source) == (100, "estimated")
    counted = {**bare, "usage": {"prompt_tokens": 3, "completion_tokens": 9}}
    usage = inspect(counted, request_chars=400).turn.usage
    assert (usage.input_tokens, usage.output_tokens, usage.source) == (3, 9, "reported")
