"""The soak's wire: a transport that gives every request its own fault, and the oracle.

:class:`FaultingTransport` wraps httpx2's: each request, retries included, draws
a fault spec (:func:`draw_fault`) and a scripted turn, sent to the fault proxy
and the scripted server in the ``x-railings-fault`` and ``x-railings-turn``
headers, and each response's bytes are kept as they pass. :func:`wire_truth`
then reads those bytes without the decoder under test: did a whole termination
proof arrive, and did anything before it spoil the stream?
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx2

from railings.testing import FAULT_HEADER
from tools.reliability.corpus import is_proof_block, split_blocks

__all__ = ["Attempt", "FaultingTransport", "WireTruth", "draw_fault", "wire_truth"]

IDLE = 0.4  # the client's idle gap; an idle fault of 1 s passes it, one of 0.02 s does not


def draw_fault(rng: random.Random) -> str:
    """One fault spec, drawn from every class the proxy has (``none`` most often)."""
    k = rng.randint(1, 14)
    end = rng.choice(("clean", "abrupt", "reset"))
    choices = [
        ("none", 6),
        (f"truncate:events={k},end={end}", 2),
        (f"truncate:bytes={rng.randint(1, 3000)},end={end}", 1),
        (f"drop_terminator:end={end}", 1),
        (f"idle:events={k},seconds={rng.choice((0.02, 1.0))}", 1),
        (f"reorder:event={k}", 1),
        (f"duplicate:event={k},count={rng.randint(1, 2)}", 1),
        (f"reset:events={k}", 1),
        ("close_after_terminator", 1),
        (f"drip:delay=0,size={rng.randint(1, 7)}", 1),
        (f"status:code={rng.choice((429, 500, 503, 529))}", 1),
        (f"error_event:events={k},type={rng.choice(('overloaded_error', 'api_error'))}", 1),
        (f"corrupt:event={k},kind={rng.choice(('json', 'utf8'))}", 1),
    ]
    specs, weights = zip(*choices, strict=True)
    return str(rng.choices(specs, weights)[0])


# -- the oracle --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WireTruth:
    """What the bytes of one response say, read without the decoder under test."""

    proof: bool  # a whole termination proof block arrived
    spoiled: str | None  # why the stream is broken before its proof, if it is

    @property
    def clean(self) -> bool:
        return self.proof and self.spoiled is None


def wire_truth(status: int, body: bytes) -> WireTruth:
    if not 200 <= status < 300:
        return WireTruth(False, f"HTTP {status}")
    blocks, _ = split_blocks(body)
    for block in blocks:
        if is_proof_block(block):
            return WireTruth(True, None)
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError:
            return WireTruth(False, "invalid UTF-8")
        event, data = _fields(text)
        if not data:
            continue  # comments and keep-alives
        try:
            obj = json.loads(data)
        except ValueError:
            return WireTruth(False, "data that is not JSON")
        if event == "error" or (
            isinstance(obj, dict) and ("error" in obj or obj.get("type") == "error")
        ):
            return WireTruth(False, "an error event")
    return WireTruth(False, "no proof")


def _fields(block: str) -> tuple[str, str]:
    event, data = "", []
    for line in block.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    return event, "\n".join(data)


# -- the transport that picks each request's fault and keeps each response's bytes --------------


@dataclass
class Attempt:
    fault: str
    turn: int
    status: int = 0
    body: bytearray = field(default_factory=bytearray)
    error: str | None = None  # the request failed before a response

    @property
    def fault_class(self) -> str:
        return self.fault.partition(":")[0]

    def truth(self) -> WireTruth:
        if self.error is not None:
            return WireTruth(False, self.error)
        return wire_truth(self.status, bytes(self.body))


class _Tee(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, sink: bytearray) -> None:
        self._inner, self._sink = inner, sink

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._sink += chunk
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class FaultingTransport(httpx2.AsyncBaseTransport):
    """Draws a fault and a scripted turn for every request; keeps what came back."""

    def __init__(self, rng: random.Random, turns: int) -> None:
        self._inner = httpx2.AsyncHTTPTransport(http2=False)
        self.rng = rng
        self.turns = turns  # how many scripted turns there are to pick from
        self.attempts: list[Attempt] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        attempt = Attempt(draw_fault(self.rng), self.rng.randrange(self.turns))
        self.attempts.append(attempt)
        request.headers[FAULT_HEADER] = attempt.fault
        request.headers["x-railings-turn"] = str(attempt.turn)
        try:
            response = await self._inner.handle_async_request(request)
        except Exception as exc:
            attempt.error = f"{type(exc).__name__}: {exc}"
            raise
        attempt.status = response.status_code
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_Tee(response.stream, attempt.body),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()
