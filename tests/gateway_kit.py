"""Shared pieces of the gateway tests: a recording upstream tap, request bodies, a runner."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2

from railings.gateway import Gateway, app
from railings.gateway.serve import ServingThread
from railings.transport.retry import RetryPolicy

KEY = "sk-railings-gw-7Q3xZ9distinctive"
TEXT = "The answer is forty-two, and here is exactly why it is so."
PATHS = {
    "openai": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "openai-responses": "/v1/responses",
}
NO_WAITS = RetryPolicy(initial=0.0, cap=0.0)


def body(provider: str, *, stream: bool = True, max_tokens: int | None = None) -> dict[str, Any]:
    """A minimal request body of each wire format."""
    if provider == "openai-responses":
        out: dict[str, Any] = {"model": "m", "input": "hi", "stream": stream}
        if max_tokens:
            out["max_output_tokens"] = max_tokens
        return out
    out = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    if provider == "openai" and stream:
        out["stream_options"] = {"include_usage": True}
    if provider == "anthropic" or max_tokens:
        out["max_tokens"] = max_tokens or 1024
    return out


def headers(provider: str, fault: str | None = None) -> dict[str, str]:
    out = (
        {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
        if provider == "anthropic"
        else {"authorization": f"Bearer {KEY}"}
    )
    if fault:
        out["x-railings-fault"] = fault
    return out


class _TeeStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, into: bytearray) -> None:
        self._inner, self._into = inner, into

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._into += chunk
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class Tee(httpx2.AsyncBaseTransport):
    """httpx2's own transport, keeping every request the gateway sent upstream and every
    response body it read."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.bodies: list[bytearray] = []
        self.requests: list[httpx2.Request] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        response = await self.inner.handle_async_request(request)
        into = bytearray()
        self.bodies.append(into)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _TeeStream(response.stream, into)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.contextmanager
def running(upstream: str, tmp: Path, **options: Any) -> Iterator[tuple[str, Gateway, Tee]]:
    """A real gateway on 127.0.0.1 (a free port) in front of ``upstream``."""
    tee = Tee()
    options.setdefault("retry", NO_WAITS)
    options.setdefault("journal", tmp / "journal.sqlite3")
    gateway = app(upstream, transport=tee, **options)
    with ServingThread(gateway) as url:
        yield url, gateway, tee
