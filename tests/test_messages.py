"""The provider-neutral message model and its two request bodies."""

from __future__ import annotations

import json

import pytest

from _server import anthropic_text, openai_chunk, sse
from railings.errors import ConfigurationError, ToolDefinitionError
from railings.messages import (
    Assistant,
    RedactedThinking,
    ServerBlock,
    System,
    Text,
    Thinking,
    ToolResult,
    ToolSpec,
    ToolUse,
    User,
)
from railings.providers.anthropic.encoder import anthropic_messages_body
from railings.providers.openai_chat.encoder import openai_chat_body
from railings.turn.reader import StreamReader

SHELL = ToolSpec(
    "shell",
    "Run a shell command.",
    {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)

CUT = ToolUse("call_2", "shell", None, '{"command": "rm -rf /tmp/leg')
HISTORY = [
    System("You are terse."),
    User("clean up"),
    Assistant(
        (
            Thinking("let me look", "sig-1"),
            RedactedThinking("opaque"),
            Text("Looking."),
            ToolUse("call_1", "shell", {"command": "ls"}, '{"command": "ls"}'),
            CUT,
        )
    ),
    ToolResult("call_1", "a b c"),
    ToolResult("call_2", "NOT executed: truncated", is_error=True),
    User("go on"),
]


def test_openai_body() -> None:
    body = openai_chat_body("gpt", HISTORY, max_tokens=100, tools=[SHELL])
    assert body["stream"] is True and body["max_tokens"] == 100
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "shell",
                "description": "Run a shell command.",
                "parameters": dict(SHELL.parameters),
            },
        }
    ]
    system, user, assistant, result1, result2, user2 = body["messages"]
    assert system == {"role": "system", "content": "You are terse."}
    assert user == {"role": "user", "content": "clean up"}
    assert assistant["content"] == "Looking."  # reasoning is never sent back
    calls = assistant["tool_calls"]
    assert calls[0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "shell", "arguments": '{"command": "ls"}'},
    }
    assert calls[1]["function"]["arguments"] == CUT.raw_arguments  # byte for byte
    assert result1 == {"role": "tool", "tool_call_id": "call_1", "content": "a b c"}
    assert result2["content"] == "NOT executed: truncated"
    assert user2 == {"role": "user", "content": "go on"}
    json.dumps(body)


def test_openai_body_options() -> None:
    body = openai_chat_body(
        "o3",
        [User("x")],
        max_tokens=5,
        include_usage=False,
        max_tokens_field="max_completion_tokens",
        extra={"temperature": 0},
    )
    assert "stream_options" not in body and "max_tokens" not in body
    assert body["max_completion_tokens"] == 5 and body["temperature"] == 0
    assert "tools" not in body
    only_calls = openai_chat_body("m", [Assistant.of("", [CUT])], max_tokens=5)
    assert only_calls["messages"][0]["content"] is None
    empty = Assistant((Thinking("only thought"),))
    assert openai_chat_body("m", [User("x"), empty], max_tokens=5)["messages"] == [
        {"role": "user", "content": "x"}
    ]
    assert (
        len(anthropic_messages_body("m", [User("x"), Assistant()], max_tokens=5)["messages"]) == 1
    )


def test_anthropic_body() -> None:
    body = anthropic_messages_body("claude", HISTORY, max_tokens=100, tools=[SHELL])
    assert body["system"] == "You are terse." and body["stream"] is True
    assert body["max_tokens"] == 100
    assert body["tools"] == [
        {
            "name": "shell",
            "description": "Run a shell command.",
            "input_schema": dict(SHELL.parameters),
        }
    ]
    user, assistant, results = body["messages"]
    assert user == {"role": "user", "content": [{"type": "text", "text": "clean up"}]}
    blocks = assistant["content"]
    assert [b["type"] for b in blocks] == [
        "thinking",
        "redacted_thinking",
        "text",
        "tool_use",
        "tool_use",
    ]
    assert blocks[0] == {"type": "thinking", "thinking": "let me look", "signature": "sig-1"}
    assert blocks[3]["input"] == {"command": "ls"}
    assert blocks[4]["input"] == {}  # the wire needs an object; the call never ran
    # Both results and the next user text: one user message, results first.
    assert results["role"] == "user"
    assert [b["type"] for b in results["content"]] == ["tool_result", "tool_result", "text"]
    assert results["content"][1]["is_error"] is True
    assert "is_error" not in results["content"][0]


def test_anthropic_server_blocks_are_verbatim() -> None:
    raw = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "x"},
    }
    body = anthropic_messages_body(
        "c", [User("q"), Assistant((ServerBlock(raw), Text("a")))], max_tokens=8
    )
    assert body["messages"][1]["content"][0] == raw
    openai = openai_chat_body("m", [Assistant((ServerBlock(raw), Text("a")))], max_tokens=8)
    assert openai["messages"][0] == {"role": "assistant", "content": "a"}


def test_multiple_system_messages_join() -> None:
    body = anthropic_messages_body("c", [System("a"), System("b"), User("x")], max_tokens=1)
    assert body["system"] == "a\n\nb"


def test_assistant_from_anthropic_turn() -> None:
    reader = StreamReader("anthropic", max_tokens=64)
    events = anthropic_text([])[:1]
    events += [
        sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
            "content_block_start",
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "hmm"},
            },
            "content_block_delta",
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "SIG"},
            },
            "content_block_delta",
        ),
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "Sure."},
            },
            "content_block_delta",
        ),
        sse(
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "shell",
                    "input": {},
                },
            },
            "content_block_start",
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": '{"command": "ls"}'},
            },
            "content_block_delta",
        ),
        sse({"type": "content_block_stop", "index": 2}, "content_block_stop"),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 9},
            },
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]
    for event in events:
        reader.feed(event)
    reader.close()
    message = Assistant.from_turn(reader.turn())
    assert message.blocks == (
        Thinking("hmm", "SIG"),
        Text("Sure."),
        ToolUse("toolu_1", "shell", {"command": "ls"}, '{"command": "ls"}'),
    )
    assert message.text == "Sure." and len(message.tool_calls) == 1


def test_assistant_from_a_truncated_openai_turn() -> None:
    reader = StreamReader("openai", max_tokens=5)
    reader.feed(
        openai_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_9",
                        "type": "function",
                        "function": {"name": "shell", "arguments": '{"comm'},
                    }
                ]
            }
        )
    )
    reader.feed(openai_chunk({}, "length") + b"data: [DONE]\n\n")
    reader.close()
    (call,) = Assistant.from_turn(reader.turn()).tool_calls
    assert call.arguments is None and call.raw_arguments == '{"comm'
    assert call.arguments_json() == '{"comm'


def test_tool_spec_validation() -> None:
    with pytest.raises(ToolDefinitionError):
        ToolSpec("has space", "x")
    with pytest.raises(ToolDefinitionError):
        ToolSpec("x" * 65, "x")
    with pytest.raises(ToolDefinitionError):
        ToolSpec("ok", "x", {"type": "string"})
    assert ToolSpec("read_file-2", "x").parameters["type"] == "object"


def test_max_tokens_is_required_and_positive() -> None:
    for bad in (0, -1, True):
        with pytest.raises(ConfigurationError):
            openai_chat_body("m", [User("x")], max_tokens=bad)
        with pytest.raises(ConfigurationError):
            anthropic_messages_body("m", [User("x")], max_tokens=bad)
