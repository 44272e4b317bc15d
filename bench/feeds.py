"""What every consumer is fed: the mock transports' pieces, the request, the result shape.

:mod:`consumers` (the registry, the floors, railings) and :mod:`sdk_consumers` (the
official SDKs) share these; the pieces a mock transport answers with are set before each
run (:class:`Feed`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2

__all__ = [
    "ANTHROPIC_TOOLS",
    "ANTHROPIC_URL",
    "MESSAGES",
    "MODEL",
    "OPENAI_TOOLS",
    "OPENAI_URL",
    "SSE_HEADERS",
    "Feed",
    "Pieces",
    "Result",
    "arguments",
    "handler",
    "mock",
]

OPENAI_URL = "http://bench.invalid/v1"
ANTHROPIC_URL = "http://bench.invalid"
MODEL = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
MESSAGES = [{"role": "user", "content": "Write the handler."}]
TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "content": {"type": "string"},
        "mode": {"type": "string"},
    },
    "required": ["path", "content"],
}
OPENAI_TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": TOOL_SCHEMA}}]
ANTHROPIC_TOOLS = [{"name": "write_file", "input_schema": TOOL_SCHEMA}]


@dataclass(frozen=True, slots=True)
class Result:
    """What the consumer got out of the stream (the orjson split extracts nothing: ``events``)."""

    text: str = ""
    arguments: Any = None
    events: int | None = None
    bytes: int | None = None  # the httpx2 consumers, which only read the body


class Feed:
    """The pieces the mock transports answer with; set before each run."""

    pieces: list[bytes] = []  # noqa: RUF012 -- one shared slot, set per run


class Pieces(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._pieces)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            yield piece


SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8"}


def handler(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, headers=SSE_HEADERS, stream=Pieces(Feed.pieces))


def mock(guard: bool = False) -> httpx2.BaseTransport:
    transport = httpx2.MockTransport(handler)
    if guard:
        import railings.guard

        return railings.guard.transport(inner=transport)
    return transport


def arguments(parts: list[str]) -> Any:
    return json.loads("".join(parts)) if parts else None
