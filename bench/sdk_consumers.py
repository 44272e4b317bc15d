"""The official SDKs as consumers: plain iteration, the accumulating helpers, the guard.

Each builder returns a runner over a client built once, whose ``httpx2`` client answers
through the mock transport (:func:`feeds.mock`, guarded or not).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
from feeds import (
    ANTHROPIC_TOOLS,
    ANTHROPIC_URL,
    MESSAGES,
    MODEL,
    OPENAI_TOOLS,
    OPENAI_URL,
    Result,
    arguments,
    mock,
)

__all__ = [
    "anthropic_helper",
    "anthropic_iterate",
    "openai_helper",
    "openai_iterate",
    "openai_responses",
]


def _openai_client(guard: bool = False) -> Any:
    import openai

    return openai.OpenAI(
        api_key="bench",
        base_url=OPENAI_URL,
        max_retries=0,
        http_client=httpx2.Client(transport=mock(guard)),
    )


def _anthropic_client(guard: bool = False) -> Any:
    import anthropic

    return anthropic.Anthropic(
        api_key="bench",
        base_url=ANTHROPIC_URL,
        max_retries=0,
        http_client=httpx2.Client(transport=mock(guard)),
    )


def openai_iterate(guard: bool) -> Callable[[list[bytes]], Result]:
    client = _openai_client(guard)

    def run(pieces: list[bytes]) -> Result:
        text: list[str] = []
        args: list[str] = []
        stream = client.chat.completions.create(
            model=MODEL["openai"], messages=MESSAGES, tools=OPENAI_TOOLS, stream=True
        )
        for chunk in stream:
            if chunk.choices:
                delta = chunk.choices[0].delta
                if delta.content:
                    text.append(delta.content)
                for call in delta.tool_calls or ():
                    if call.function and call.function.arguments:
                        args.append(call.function.arguments)
        return Result("".join(text), arguments(args))

    return run


def openai_responses() -> Callable[[list[bytes]], Result]:
    client = _openai_client()

    def run(pieces: list[bytes]) -> Result:
        text: list[str] = []
        args: list[str] = []
        stream = client.responses.create(
            model=MODEL["openai"], input="Write the handler.", stream=True
        )
        for event in stream:
            if event.type == "response.output_text.delta":
                text.append(event.delta)
            elif event.type == "response.function_call_arguments.delta":
                args.append(event.delta)
        return Result("".join(text), arguments(args))

    return run


def openai_helper() -> Callable[[list[bytes]], Result]:
    client = _openai_client()

    def run(pieces: list[bytes]) -> Result:
        with client.chat.completions.stream(
            model=MODEL["openai"], messages=MESSAGES, tools=OPENAI_TOOLS
        ) as stream:
            for _ in stream:
                pass
            message = stream.get_final_completion().choices[0].message
        calls = message.tool_calls or []
        args = json.loads(calls[0].function.arguments) if calls else None
        return Result(message.content or "", args)

    return run


def anthropic_iterate(guard: bool) -> Callable[[list[bytes]], Result]:
    client = _anthropic_client(guard)

    def run(pieces: list[bytes]) -> Result:
        text: list[str] = []
        args: list[str] = []
        stream = client.messages.create(
            model=MODEL["anthropic"],
            max_tokens=64000,
            messages=MESSAGES,
            tools=ANTHROPIC_TOOLS,
            stream=True,
        )
        for event in stream:
            if event.type == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta":
                    text.append(delta.text)
                elif delta.type == "input_json_delta":
                    args.append(delta.partial_json)
        return Result("".join(text), arguments(args))

    return run


def anthropic_helper() -> Callable[[list[bytes]], Result]:
    client = _anthropic_client()

    def run(pieces: list[bytes]) -> Result:
        with client.messages.stream(
            model=MODEL["anthropic"], max_tokens=64000, messages=MESSAGES, tools=ANTHROPIC_TOOLS
        ) as stream:
            message = stream.get_final_message()
        text = "".join(b.text for b in message.content if b.type == "text")
        tools = [b.input for b in message.content if b.type == "tool_use"]
        return Result(text, tools[0] if tools else None)

    return run
