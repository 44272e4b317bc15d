"""The Gemini, Bedrock and Ollama request encoders: the conversation in each wire's shape.

Each history holds a system prompt, a user turn, an assistant turn with thinking and a
tool call, the call's result and a follow-up: the parts every agent turn sends back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from railings.conversation import (
    Assistant,
    Message,
    RedactedThinking,
    System,
    Text,
    Thinking,
    ToolResult,
    ToolSpec,
    ToolUse,
    User,
)
from railings.errors import ConfigurationError
from railings.providers import EncodeRequest, spec
from railings.providers.bedrock.encoder import bedrock_body
from railings.providers.gemini.encoder import gemini_body
from railings.providers.ollama.encoder import ollama_body
from railings.replay import replay

TOOL = ToolSpec(
    "weather",
    "The weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CALL = ToolUse("call_1", "weather", {"city": "Paris"}, '{"city":"Paris"}')


def history(*assistant: Any) -> list[Message]:
    return [
        System("Be brief."),
        User("Weather in Paris?"),
        Assistant(tuple(assistant)),
        ToolResult("call_1", "18 C, sunny"),
        User("Thanks."),
    ]


def test_gemini_contents_parts_calls_and_responses() -> None:
    body = gemini_body(
        history(Thinking("Look it up.", ""), Text("Checking."), CALL, Thinking("", "sig-A")),
        max_tokens=64,
        tools=[TOOL],
    )
    assert body == {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Look it up.", "thought": True},
                    {"text": "Checking."},
                    # The signature goes back on the first function call, where Gemini
                    # puts it (and where Gemini 3 requires it).
                    {
                        "functionCall": {
                            "id": "call_1",
                            "name": "weather",
                            "args": {"city": "Paris"},
                        },
                        "thoughtSignature": "sig-A",
                    },
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "call_1",
                            "name": "weather",  # found in the history by the call's id
                            "response": {"output": "18 C, sunny"},
                        }
                    },
                    {"text": "Thanks."},  # one user content: consecutive ones merge
                ],
            },
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "weather",
                        "description": "The weather in a city.",
                        "parametersJsonSchema": dict(TOOL.parameters),
                    }
                ]
            }
        ],
        "generationConfig": {"maxOutputTokens": 64},
    }
    assert "model" not in body  # the model is in the path


def test_gemini_text_answer_keeps_its_signature_on_the_last_part() -> None:
    turn = Assistant((Thinking("Count.", ""), Text("Three."), Thinking("", "sig-T")))
    body = gemini_body([User("r in strawberry?"), turn], max_tokens=8)
    parts = body["contents"][1]["parts"]
    assert parts == [
        {"text": "Count.", "thought": True},
        {"text": "Three.", "thoughtSignature": "sig-T"},
    ]
    # A signed thinking block of a turn without calls keeps its own signature.
    body = gemini_body([User("q"), Assistant((Thinking("Hm.", "sig-B"), Text("A.")))], max_tokens=8)
    assert body["contents"][1]["parts"][0] == {
        "text": "Hm.",
        "thought": True,
        "thoughtSignature": "sig-B",
    }


def test_gemini_error_results_and_calls_without_ids() -> None:
    call = ToolUse("", "weather", None)  # Gemini 2 calls carry no id; args that never parsed
    body = gemini_body(
        [
            User("q"),
            Assistant((call,)),
            ToolResult("", "not executed", is_error=True, name="weather"),
        ],
        max_tokens=8,
    )
    assert body["contents"][1]["parts"] == [{"functionCall": {"name": "weather", "args": {}}}]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "weather", "response": {"error": "not executed"}}}
    ]


def test_bedrock_messages_tool_use_and_results() -> None:
    body = bedrock_body(
        history(
            Thinking("Look it up.", "sig-R"), RedactedThinking("b64=="), Text("Checking."), CALL
        ),
        max_tokens=64,
        tools=[TOOL],
    )
    assert body == {
        "system": [{"text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"text": "Weather in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "reasoningContent": {
                            "reasoningText": {"text": "Look it up.", "signature": "sig-R"}
                        }
                    },
                    {"reasoningContent": {"redactedContent": "b64=="}},
                    {"text": "Checking."},
                    {
                        "toolUse": {
                            "toolUseId": "call_1",
                            "name": "weather",
                            "input": {"city": "Paris"},
                        }
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "call_1", "content": [{"text": "18 C, sunny"}]}},
                    {"text": "Thanks."},
                ],
            },
        ],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "weather",
                        "description": "The weather in a city.",
                        "inputSchema": {"json": dict(TOOL.parameters)},
                    }
                }
            ]
        },
        "inferenceConfig": {"maxTokens": 64},
    }


def test_bedrock_error_results_and_blank_text() -> None:
    body = bedrock_body(
        [User("q"), Assistant((Text(""), CALL)), ToolResult("call_1", "", is_error=True)],
        max_tokens=8,
    )
    assert body["messages"][1]["content"] == [
        {"toolUse": {"toolUseId": "call_1", "name": "weather", "input": {"city": "Paris"}}}
    ]
    assert body["messages"][2]["content"] == [
        {"toolResult": {"toolUseId": "call_1", "content": [{"text": " "}], "status": "error"}}
    ]


def test_ollama_messages_tool_calls_and_tool_results() -> None:
    body = ollama_body(
        "qwen3",
        history(Thinking("Look it up.", "ignored"), Text("Checking."), CALL),
        max_tokens=64,
        tools=[TOOL],
    )
    assert body == {
        "model": "qwen3",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "thinking": "Look it up.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "function": {"name": "weather", "arguments": {"city": "Paris"}},
                    }
                ],
            },
            {
                "role": "tool",
                "content": "18 C, sunny",
                "tool_name": "weather",
                "tool_call_id": "call_1",
            },
            {"role": "user", "content": "Thanks."},
        ],
        "stream": True,
        "options": {"num_predict": 64},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "The weather in a city.",
                    "parameters": dict(TOOL.parameters),
                },
            }
        ],
    }


@pytest.mark.parametrize("name", ["gemini", "bedrock", "ollama"])
def test_the_specs_encode_and_send_results_back(name: str) -> None:
    s = spec(name)
    request = EncodeRequest(model="m", messages=history(CALL), max_tokens=5, tools=[TOOL])
    body = s.encode(request)
    assert "5" in repr(body) and "weather" in repr(body)
    (result,) = s.tool_result(ToolResult("call_1", "42", is_error=True, name="weather"), "function")
    assert "call_1" in repr(result) and "42" in repr(result)
    with pytest.raises(ConfigurationError):
        s.encode(EncodeRequest(model="m", messages=[User("q")], max_tokens=0))


# -- against requests recorded in public fixtures ------------------------------------------
# vercel/ai at ed857f50f112e23930b0c2dd8d532cc8bebbc911, the AI SDK's own snapshots of the
# request bodies it sends (packages/*/src/convert-to-*-messages.test.ts).


def test_bedrock_matches_the_ai_sdks_multi_turn_reasoning_and_tool_request() -> None:
    # convert-to-amazon-bedrock-chat-messages.test.ts, "should preserve reasoning text
    # with signature in multi-turn tool use".
    history: list[Message] = [
        User("What is the weather?"),
        Assistant(
            (
                Thinking("Let me check the weather API.\n", "sig-abc123"),
                ToolUse("call-1", "getWeather", {"city": "SF"}),
            )
        ),
        ToolResult("call-1", "Sunny, 72F"),
        Assistant(
            (
                Thinking("The weather is sunny and warm.\n", "sig-def456"),
                Text("It is sunny and 72F in SF."),
            )
        ),
    ]
    recorded = [
        {"role": "user", "content": [{"text": "What is the weather?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "reasoningContent": {
                        "reasoningText": {
                            "signature": "sig-abc123",
                            "text": "Let me check the weather API.\n",
                        }
                    }
                },
                {"toolUse": {"input": {"city": "SF"}, "name": "getWeather", "toolUseId": "call-1"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"content": [{"text": "Sunny, 72F"}], "toolUseId": "call-1"}}
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "reasoningContent": {
                        "reasoningText": {
                            "signature": "sig-def456",
                            "text": "The weather is sunny and warm.\n",
                        }
                    }
                },
                {"text": "It is sunny and 72F in SF."},
            ],
        },
    ]
    assert bedrock_body(history, max_tokens=9)["messages"] == recorded


def test_gemini_sends_back_each_signature_on_the_part_it_came_with() -> None:
    # convert-to-google-messages.test.ts, "should preserve thought signatures in assistant
    # messages": the three parts, each signed, as the AI SDK sends them back -- here
    # streamed by Gemini, assembled into a turn, and encoded again.
    chunk = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Regular text", "thoughtSignature": "sig1"},
                        {"text": "Reasoning text", "thought": True, "thoughtSignature": "sig2"},
                        {
                            "functionCall": {
                                "id": "call1",
                                "name": "test",
                                "args": {"value": "test"},
                            },
                            "thoughtSignature": "sig3",
                        },
                    ],
                },
                "finishReason": "STOP",
            }
        ]
    }
    turn = replay(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n", provider="gemini").turn
    body = gemini_body([Assistant.from_turn(turn)], max_tokens=9)
    assert body["contents"] == [
        {
            "role": "model",
            "parts": [
                {"text": "Regular text", "thoughtSignature": "sig1"},
                {"text": "Reasoning text", "thought": True, "thoughtSignature": "sig2"},
                {
                    "functionCall": {"args": {"value": "test"}, "id": "call1", "name": "test"},
                    "thoughtSignature": "sig3",
                },
            ],
        }
    ]


def test_gemini_a_call_signature_merged_into_the_thought_goes_back_on_the_call() -> None:
    # Gemini 3: an unsigned thought summary, then the signed first call of the step.
    turn = Assistant((Thinking("Plan.", "sig-call"), Text("Calling."), CALL))
    parts = gemini_body([User("q"), turn], max_tokens=9)["contents"][1]["parts"]
    assert parts[0] == {"text": "Plan.", "thought": True}
    assert parts[2]["thoughtSignature"] == "sig-call"


def test_ollama_matches_the_api_docs_chat_request_with_history_and_tools() -> None:
    # ollama/ollama docs/api.md, "Chat request (With history, with tools)": calls carry no
    # id there, and the result names its tool.
    history: list[Message] = [
        User("what is the weather in Toronto?"),
        Assistant((ToolUse("", "get_weather", {"city": "Toronto"}),)),
        ToolResult("", "11 degrees celsius"),
    ]
    assert ollama_body("llama3.2", history, max_tokens=9)["messages"] == [
        {"role": "user", "content": "what is the weather in Toronto?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Toronto"}}}],
        },
        {"role": "tool", "content": "11 degrees celsius", "tool_name": "get_weather"},
    ]
