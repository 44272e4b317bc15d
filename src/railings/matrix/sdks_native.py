"""The official Gemini, Bedrock and Ollama clients as the matrix drives them.

* ``google-genai``: ``client.aio.models.generate_content_stream(...)``, the parts'
  text and whole ``function_call`` parts joined; the last ``finish_reason`` seen is
  the stop reason. Its own default: no retries.
* ``boto3``: ``bedrock-runtime`` ``converse_stream(...)`` (in a worker thread: boto3
  is synchronous), ``text`` and ``toolUse.input`` deltas joined by block index, the
  ``messageStop`` reason kept; default retries (``legacy`` mode).
* ``ollama``: ``AsyncClient.chat(..., stream=True)``, content and ``tool_calls``
  joined, ``done_reason`` of the ``done`` line kept. No retries.

Each gets the cell's idle gap as its read timeout (google-genai, whose one timeout
also bounds the connect, at least 2 s). A whole call's arguments are
written back as JSON text (``json.dumps``, as the script wrote them), so the judge
compares them with what the server sent. The packages are imported when a cell runs.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from railings.matrix.observation import Observation, Target
from railings.matrix.sdks import _CHAT_TOOL, _SDK, _SHELL_SCHEMA, SHELL_DESCRIPTION, _Seen

__all__ = ["Boto3SDK", "GenAISDK", "OllamaSDK"]


def _text(args: Any) -> str:
    return json.dumps(dict(args or {}), ensure_ascii=False)


def _genai_timeout(target: Target) -> int:
    """google-genai's one timeout, in milliseconds: it bounds the connect as well as each
    read, so it is never below 2 s (the idle fault's silence is 30 s: still caught)."""
    return int(max(target.idle, 2.0) * 1000)


class GenAISDK(_SDK):
    """The official ``google-genai`` package (Gemini API)."""

    name = "google-genai"
    providers: frozenset[str] = frozenset({"gemini"})
    requires: tuple[str, ...] = ("google.genai",)

    async def run(self, target: Target) -> Observation:
        """Stream one turn with the async client: what it handed over, or what it raised."""
        from google import genai
        from google.genai import types

        seen = _Seen()
        tools: Any = (
            [
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name="shell",
                            description=SHELL_DESCRIPTION,
                            parameters_json_schema=_SHELL_SCHEMA,
                        )
                    ]
                )
            ]
            if target.tool
            else None
        )
        config = types.GenerateContentConfig(
            max_output_tokens=target.max_tokens,
            tools=tools,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        client = genai.Client(
            api_key=target.api_key or "no-key-set",
            http_options={"base_url": target.origin, "timeout": _genai_timeout(target)},
        )
        try:
            stream = await client.aio.models.generate_content_stream(
                model=target.model, contents=target.prompt, config=config
            )
            async for chunk in stream:
                for candidate in chunk.candidates or ():
                    for part in (candidate.content.parts if candidate.content else None) or ():
                        if part.text and not part.thought:
                            seen.text.append(part.text)
                        if part.function_call:
                            call = part.function_call
                            seen.call(len(seen.calls), call.name, _text(call.args))
                    if candidate.finish_reason is not None:
                        seen.stop = str(candidate.finish_reason.value)
        except Exception as exc:
            return seen.failed(exc)
        finally:
            await client.aio.aclose()
        return seen.observation()


class Boto3SDK(_SDK):
    """The official ``boto3`` package, ``bedrock-runtime`` ``converse_stream``."""

    name = "boto3"
    providers: frozenset[str] = frozenset({"bedrock"})
    requires: tuple[str, ...] = ("boto3",)

    async def run(self, target: Target) -> Observation:
        """Stream one turn in a worker thread: what boto3 handed over, or what it raised."""
        seen = _Seen()
        try:
            await asyncio.to_thread(self._stream, target, seen)
        except Exception as exc:
            return seen.failed(exc)
        return seen.observation()

    def _stream(self, target: Target, seen: _Seen) -> None:
        import boto3  # type: ignore[import-untyped]
        from botocore.config import Config

        client = boto3.client(
            "bedrock-runtime",
            endpoint_url=target.origin,
            region_name="us-east-1",
            aws_access_key_id=target.api_key or "AKIDMATRIX",
            aws_secret_access_key="matrix-secret",
            config=Config(connect_timeout=10, read_timeout=target.idle),
        )
        request: dict[str, Any] = {
            "modelId": target.model,
            "messages": [{"role": "user", "content": [{"text": target.prompt}]}],
            "inferenceConfig": {"maxTokens": target.max_tokens},
        }
        if target.tool:
            spec = {"name": "shell", "description": SHELL_DESCRIPTION}
            schema = {"inputSchema": {"json": _SHELL_SCHEMA}}
            request["toolConfig"] = {"tools": [{"toolSpec": {**spec, **schema}}]}
        try:
            reply = client.converse_stream(**request)
            for event in reply["stream"]:
                if "contentBlockStart" in event:
                    start = event["contentBlockStart"]
                    tool = start.get("start", {}).get("toolUse")
                    if tool:
                        seen.call(start["contentBlockIndex"], tool["name"])
                elif "contentBlockDelta" in event:
                    block = event["contentBlockDelta"]
                    delta = block["delta"]
                    if "text" in delta:
                        seen.text.append(delta["text"])
                    elif "toolUse" in delta:
                        seen.call(block["contentBlockIndex"], arguments=delta["toolUse"]["input"])
                elif "messageStop" in event:
                    seen.stop = event["messageStop"]["stopReason"]
        finally:
            client.close()


class OllamaSDK(_SDK):
    """The official ``ollama`` package, ``AsyncClient.chat(stream=True)``."""

    name = "ollama"
    providers: frozenset[str] = frozenset({"ollama"})
    requires: tuple[str, ...] = ("ollama",)

    async def run(self, target: Target) -> Observation:
        """Stream one turn: what the client handed over, or what it raised."""
        import ollama

        seen = _Seen()
        tools = [_CHAT_TOOL] if target.tool else None
        client = ollama.AsyncClient(host=target.origin, timeout=target.idle)
        try:
            stream = await client.chat(
                model=target.model,
                messages=[{"role": "user", "content": target.prompt}],
                tools=tools,
                options={"num_predict": target.max_tokens},
                stream=True,
            )
            async for part in stream:
                if part.message.content:
                    seen.text.append(part.message.content)
                for call in part.message.tool_calls or ():
                    seen.call(len(seen.calls), call.function.name, _text(call.function.arguments))
                if part.done:
                    seen.stop = part.done_reason or "done"
        except Exception as exc:
            return seen.failed(exc)
        return seen.observation()
