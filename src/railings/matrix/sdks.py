"""The official SDKs as the matrix drives them, each reduced to an :class:`Observation`.

* ``openai-sdk``: ``AsyncOpenAI.chat.completions.create(stream=True)`` (and
  ``responses.create(stream=True)`` for the Responses API), the deltas joined as
  the OpenAI docs show (text, and tool-call arguments by index).
* ``anthropic-sdk``: ``AsyncAnthropic.messages.stream(...)``, the documented
  helper: text and ``input_json`` deltas joined, then ``get_final_message()``.
* ``...+guard``: the same, over :func:`railings.guard.async_transport` built
  into the SDK's own default http client, as the guard's docstring advises.

Every SDK client gets the cell's idle gap as its read timeout and keeps its
default ``max_retries=2``, so it has the same chance to notice silence and to
recover from a 429 that the railings client has. An SDK never executes tools:
its observation is what it handed to the application. ``openai`` and
``anthropic`` are imported when a cell runs, not before.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2

from railings import guard
from railings.matrix.observation import (
    Observation,
    Target,
    clip,
    raised,
    shared_ssl_context,
)

# The specs by value: inside the adapters, ``openai`` and ``anthropic`` are the SDKs.
from railings.providers.anthropic import SPEC as ANTHROPIC_SPEC
from railings.providers.openai_chat import SPEC as CHAT_SPEC
from railings.providers.openai_responses import SPEC as RESPONSES_SPEC

__all__ = ["SHELL_DESCRIPTION", "AnthropicSDK", "OpenAISDK"]

SHELL_DESCRIPTION = "Run one shell command and return its output."


_SHELL_SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "string"}},
    "required": ["command"],
}
# The ``shell`` tool as Chat Completions declares it (and Ollama, which takes the same).
_CHAT_TOOL = {
    "type": "function",
    "function": {"name": "shell", "description": SHELL_DESCRIPTION, "parameters": _SHELL_SCHEMA},
}


def _timeout(target: Target) -> httpx2.Timeout:
    return httpx2.Timeout(connect=10, read=target.idle, write=30, pool=10)


def _http_options(guarded: bool, target: Target) -> dict[str, Any]:
    """The SDK's own default http client, with the shared TLS context, and the guard
    around its transport when asked."""
    if not guarded:
        return {"verify": shared_ssl_context()}
    inner = httpx2.AsyncHTTPTransport(verify=shared_ssl_context())
    return {"transport": guard.async_transport(inner, idle=target.idle)}


def _key(target: Target, variable: str) -> dict[str, Any]:
    """The key to send. The SDKs refuse to start without one, where railings sends none:
    a placeholder lets a keyless endpoint answer, and a real one say 401."""
    if target.api_key:
        return {"api_key": target.api_key}
    return {} if os.environ.get(variable) else {"api_key": "no-key-set"}


class _SDK:
    """An official client: its cells are informative, and it resumes nothing."""

    kind: Literal["railings", "sdk"] = "sdk"
    resumes = False


class OpenAISDK(_SDK):
    """The official ``openai`` package, optionally over the guard transport: Chat
    Completions for ``openai``, ``client.responses.create(stream=True)`` for
    ``openai-responses`` (deltas joined as the docs show, in both)."""

    providers: frozenset[str] = frozenset({CHAT_SPEC.name, RESPONSES_SPEC.name})
    requires: tuple[str, ...] = ("openai",)

    def __init__(self, *, guarded: bool = False) -> None:
        self.guarded = guarded
        self.name = "openai-sdk+guard" if guarded else "openai-sdk"

    async def run(self, target: Target) -> Observation:
        """Stream one turn with ``AsyncOpenAI``: what the SDK handed the application, or what it
        raised (with the railings reason behind it, when guarded)."""
        import openai

        http = openai.DefaultAsyncHttpx2Client(**_http_options(self.guarded, target))
        seen = _Seen()
        try:
            async with openai.AsyncOpenAI(
                base_url=target.base_url,
                http_client=http,
                timeout=_timeout(target),
                **_key(target, CHAT_SPEC.api_key_env),
            ) as client:
                if target.provider.name == RESPONSES_SPEC.name:
                    await _responses(client, target, seen)
                else:
                    await _chat(client, target, seen)
        except Exception as exc:
            return seen.failed(exc)
        return seen.observation()


@dataclass(slots=True)
class _Seen:
    """What an SDK handed the application so far: text, calls by index, a stop reason."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, list[str]] = field(default_factory=dict)
    stop: str | None = None
    error_event: str | None = None  # an error the SDK yielded as an event

    def call(self, index: int, name: str | None = None, arguments: str | None = None) -> None:
        entry = self.calls.setdefault(index, ["", ""])
        if name:
            entry[0] = name
        if arguments:
            entry[1] += arguments

    def observation(self, **notes: Any) -> Observation:
        if self.error_event:
            notes["error_event"] = self.error_event
        return Observation(
            returned=True,
            text="".join(self.text),
            stop_reason=self.stop,
            calls=[(n, a) for _, (n, a) in sorted(self.calls.items())],
            notes=notes,
        )

    def failed(self, exc: BaseException) -> Observation:
        """The SDK raised ``exc``: how much text it had handed over, and the railings
        reason behind the error (over the guard)."""
        notes: dict[str, Any] = {"text_chars_before_raise": len("".join(self.text))}
        cause = guard.interruption(exc)
        if cause is not None:
            notes["railings_reason"] = type(cause).__name__
        return raised(exc, notes=notes)


async def _chat(client: Any, target: Target, seen: _Seen) -> None:
    import openai

    tools: Any = [_CHAT_TOOL] if target.tool else openai.omit
    stream = await client.chat.completions.create(
        model=target.model,
        max_tokens=target.max_tokens,
        stream=True,
        tools=tools,
        messages=[{"role": "user", "content": target.prompt}],
    )
    async for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                seen.text.append(delta.content)
            for tc in delta.tool_calls or ():
                function = tc.function
                seen.call(
                    tc.index,
                    function.name if function else None,
                    function.arguments if function else None,
                )
            seen.stop = choice.finish_reason or seen.stop


async def _responses(client: Any, target: Target, seen: _Seen) -> None:
    import openai

    tools: Any = (
        [
            {
                "type": "function",
                "name": "shell",
                "description": SHELL_DESCRIPTION,
                "parameters": _SHELL_SCHEMA,
                "strict": False,
            }
        ]
        if target.tool
        else openai.omit
    )
    stream = await client.responses.create(
        model=target.model,
        input=target.prompt,
        max_output_tokens=target.max_tokens,
        stream=True,
        tools=tools,
    )
    async for event in stream:
        match event.type:
            case "response.output_text.delta":
                seen.text.append(event.delta)
            case "response.output_item.added" if event.item.type == "function_call":
                seen.call(event.output_index, event.item.name)
            case "response.function_call_arguments.delta":
                seen.call(event.output_index, arguments=event.delta)
            case "response.completed":
                seen.stop = "completed"
            case "response.incomplete":
                details = event.response.incomplete_details
                seen.stop = details.reason if details is not None else "incomplete"
            case "error" | "response.failed":
                # The SDK hands these over as typed events; it does not raise.
                seen.error_event = event.type


class AnthropicSDK(_SDK):
    """The official ``anthropic`` package, optionally over the guard transport."""

    providers: frozenset[str] = frozenset({ANTHROPIC_SPEC.name})
    requires: tuple[str, ...] = ("anthropic",)

    def __init__(self, *, guarded: bool = False) -> None:
        self.guarded = guarded
        self.name = "anthropic-sdk+guard" if guarded else "anthropic-sdk"

    async def run(self, target: Target) -> Observation:
        """Stream one turn with ``messages.stream``: what the helper handed the application (and
        each call's parsed input), or what it raised."""
        import anthropic

        http = anthropic.DefaultAsyncHttpxClient(**_http_options(self.guarded, target))
        seen = _Seen()
        inputs: list[Any] = []
        try:
            async with anthropic.AsyncAnthropic(
                base_url=target.base_url,
                http_client=http,
                timeout=_timeout(target),
                **_key(target, ANTHROPIC_SPEC.api_key_env),
            ) as client:
                inputs = await _messages(client, target, seen)
        except Exception as exc:
            return seen.failed(exc)
        if not inputs:
            return seen.observation()
        return seen.observation(
            final_inputs=[clip(json.dumps(i, ensure_ascii=False)) for i in inputs]
        )


async def _messages(client: Any, target: Target, seen: _Seen) -> list[Any]:
    """Stream with the helper; return each tool call's input as the helper parsed it."""
    import anthropic

    tools: Any = (
        [{"name": "shell", "description": SHELL_DESCRIPTION, "input_schema": _SHELL_SCHEMA}]
        if target.tool
        else anthropic.omit
    )
    async with client.messages.stream(
        model=target.model,
        max_tokens=target.max_tokens,
        tools=tools,
        messages=[{"role": "user", "content": target.prompt}],
    ) as stream:
        async for event in stream:
            match event.type:
                case "content_block_start" if event.content_block.type == "tool_use":
                    seen.call(event.index, event.content_block.name)
                case "content_block_delta" if event.delta.type == "text_delta":
                    seen.text.append(event.delta.text)
                case "content_block_delta" if event.delta.type == "input_json_delta":
                    seen.call(event.index, arguments=event.delta.partial_json)
                case "message_delta":
                    seen.stop = event.delta.stop_reason or seen.stop
        final = await stream.get_final_message()
    # What the helper hands the application as each call's parsed input.
    return [block.input for block in final.content if block.type == "tool_use"]
