"""Small, readable stream builders for tests: real wire shapes, written out."""

from __future__ import annotations

import json
from typing import Any


def sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def openai_chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> bytes:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [choice],
    }
    body.update(extra)
    return sse(body)


def openai_tool_stream(
    arguments: list[str],
    finish: str | None,
    *,
    done: bool = True,
    name: str = "shell",
    usage: tuple[int, int] | None = (10, 5),
) -> bytes:
    """An OpenAI stream with one tool call whose arguments arrive in ``arguments`` fragments."""
    parts = [openai_chunk({"role": "assistant", "content": ""})]
    parts.append(
        openai_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
    )
    for fragment in arguments:
        parts.append(
            openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]})
        )
    if finish is not None:
        parts.append(openai_chunk({}, finish))
    if usage is not None:
        parts.append(
            sse(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "model": "m",
                    "choices": [],
                    "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
                }
            )
        )
    if done:
        parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def openai_text_stream(
    words: list[str], finish: str | None = "stop", *, done: bool = True
) -> bytes:
    parts = [openai_chunk({"role": "assistant", "content": ""})]
    parts += [openai_chunk({"content": w}) for w in words]
    if finish is not None:
        parts.append(openai_chunk({}, finish))
    if done:
        parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def anthropic_event(data: dict[str, Any]) -> bytes:
    return sse(data, data["type"])


def anthropic_tool_stream(
    fragments: list[str],
    stop_reason: str | None,
    *,
    stop: bool = True,
    block_stop: bool = True,
    output_tokens: int = 5,
) -> bytes:
    parts = [
        anthropic_event(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            }
        ),
        anthropic_event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "shell",
                    "input": {},
                },
            }
        ),
    ]
    for fragment in fragments:
        parts.append(
            anthropic_event(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": fragment},
                }
            )
        )
    if block_stop:
        parts.append(anthropic_event({"type": "content_block_stop", "index": 0}))
    parts.append(
        anthropic_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason},
                "usage": {"output_tokens": output_tokens},
            }
        )
    )
    if stop:
        parts.append(anthropic_event({"type": "message_stop"}))
    return b"".join(parts)
