"""The end-to-end bench's load process: N concurrent streams through one client.

Runs in its own process (``bench/e2e.py`` starts it and sends it rounds down a
pipe), on one asyncio event loop kept for the whole run, with one client object
per kind kept across rounds (its connection pool warm, as a service keeps it).
A round opens ``streams`` streams at once and reads every one to its end; its
figures are the process's CPU time (``time.process_time``: every thread), the
wall time, the events the server sent, and the streams that failed. A stream
counts only when the client got out of it exactly the text the server sent (the
byte reader: exactly the body), so a fast client that reads wrongly has no figures.

The clients:

* ``railings``: :class:`railings.transport.AsyncProviderClient` built as a user
  builds it (``ClientConfig``, the default transports), each event iterated.
* ``openai``: ``AsyncOpenAI().chat.completions.create(stream=True)``, iterated.
* ``anthropic``: ``AsyncAnthropic().messages.create(stream=True)``, iterated.
* ``httpx2``: the body's bytes through an ``httpx2.AsyncClient`` (``aiter_raw``),
  nothing parsed: the HTTP stack's own cost, the limit for any client built on it.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["CLIENTS", "WIRE", "load"]

# Which workload each client reads (the server's path picks it).
WIRE = {
    "railings": "W1",
    "openai": "W1",
    "httpx2": "W1",
    "railings-anthropic": "W3",
    "anthropic": "W3",
}
CLIENTS = tuple(WIRE)
_MODEL = {"W1": "gpt-4o-mini", "W3": "claude-haiku-4-5"}
_PROMPT = "Write the handler."

One = Callable[[Any], Awaitable[bool]]  # reads one stream of the workload given


def _railings(url: str, wire: str) -> tuple[One, Callable[[], Awaitable[None]]]:
    from railings.events import TextDelta
    from railings.messages import User
    from railings.transport import AsyncProviderClient, ClientConfig
    from railings.turn.model import Outcome

    provider = "openai" if wire == "W1" else "anthropic"
    base = f"{url}/v1" if wire == "W1" else url
    client = AsyncProviderClient(
        ClientConfig(provider=provider, model=_MODEL[wire], base_url=base, api_key="bench")
    )
    history = [User(_PROMPT)]

    async def one(expected: Any) -> bool:
        stream = client.stream_turn(history)
        parts = []
        async for event in stream:
            if type(event) is TextDelta:
                parts.append(event.text)
        return stream.turn.outcome is Outcome.COMPLETE and "".join(parts) == expected.text

    return one, client.aclose


def _openai(url: str, wire: str) -> tuple[One, Callable[[], Awaitable[None]]]:
    import openai

    client = openai.AsyncOpenAI(api_key="bench", base_url=f"{url}/v1", max_retries=0)
    messages: Any = [{"role": "user", "content": _PROMPT}]

    async def one(expected: Any) -> bool:
        stream = await client.chat.completions.create(
            model=_MODEL[wire], messages=messages, stream=True
        )
        parts = []
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
        return "".join(parts) == expected.text

    return one, client.close


def _anthropic(url: str, wire: str) -> tuple[One, Callable[[], Awaitable[None]]]:
    import anthropic

    client = anthropic.AsyncAnthropic(api_key="bench", base_url=url, max_retries=0)
    messages: Any = [{"role": "user", "content": _PROMPT}]

    async def one(expected: Any) -> bool:
        stream = await client.messages.create(
            model=_MODEL[wire], max_tokens=4096, messages=messages, stream=True
        )
        parts = []
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                parts.append(event.delta.text)
        return "".join(parts) == expected.text

    return one, client.close


def _httpx2(url: str, wire: str) -> tuple[One, Callable[[], Awaitable[None]]]:
    import httpx2

    # The official SDKs' pool (1,000 connections), so the pool never queues a stream.
    limits = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
    client = httpx2.AsyncClient(limits=limits, timeout=600)
    body = {"model": _MODEL[wire], "messages": [{"role": "user", "content": _PROMPT}]}
    target = f"{url}/v1/chat/completions"

    async def one(expected: Any) -> bool:
        parts = []
        async with client.stream("POST", target, json=body) as response:
            async for chunk in response.aiter_raw():
                parts.append(chunk)
        return b"".join(parts) == expected.body

    return one, client.aclose


_BUILD = {
    "railings": _railings,
    "railings-anthropic": _railings,
    "openai": _openai,
    "anthropic": _anthropic,
    "httpx2": _httpx2,
}


async def _round(one: One, streams: int, expected: Any) -> tuple[int, str | None]:
    """Open ``streams`` streams at once; the failures and the first error's text."""
    results = await asyncio.gather(*(one(expected) for _ in range(streams)), return_exceptions=True)
    failed = [r for r in results if r is not True]
    first = next((r for r in failed if isinstance(r, BaseException)), None)
    why = f"{type(first).__name__}: {first}"[:200] if first is not None else None
    if failed and why is None:
        why = "wrong text"
    return len(failed), why


def load(conn: Connection, url: str) -> None:
    """The load process: run each round sent down ``conn``; send its figures back.

    A round is ``(client, streams, n, profile)``: ``n`` is the number of content chunks
    the server now sends (the expected text is built from it), ``profile`` True runs
    the round under cProfile and adds the top functions. None ends the process.
    """
    import workloads

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    built: dict[str, tuple[One, Callable[[], Awaitable[None]]]] = {}
    bodies: dict[tuple[str, int], Any] = {}
    while (job := conn.recv()) is not None:
        name, streams, n, profile = job
        wire = WIRE[name]
        if name not in built:
            built[name] = _BUILD[name](url, wire)
        if (wire, n) not in bodies:
            bodies[wire, n] = workloads.build(wire, n)
        expected = bodies[wire, n]
        work = _round(built[name][0], streams, expected)
        gc.collect()  # the previous round's garbage is not this round's cost
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        cpu, wall = time.process_time(), time.perf_counter()
        failures, why = loop.run_until_complete(work)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        events = expected.events * streams
        figures: dict[str, Any] = {
            "cpu_s": cpu, "wall_s": wall, "events": events, "failures": failures, "error": why,
        }  # fmt: skip
        if profiler is not None:
            profiler.disable()
            figures["profile"] = _top(profiler, events)
        conn.send(figures)
    for _, close in built.values():
        loop.run_until_complete(close())
    loop.close()


def _top(profiler: Any, events: int, count: int = 60) -> dict[str, Any]:
    """The profile per event: by package (own time) and the top functions."""
    import pstats

    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    packages: dict[str, float] = {}
    rows = []
    for (path, line, func), (_, calls, own, cumulative, _) in stats.items():
        where = _package(path)
        packages[where] = packages.get(where, 0.0) + own
        rows.append((own, calls, cumulative, f"{where}:{path.rsplit('/', 1)[-1]}:{line}({func})"))
    rows.sort(reverse=True)
    return {
        "packages_us_per_event": {
            k: v / events * 1e6 for k, v in sorted(packages.items(), key=lambda kv: -kv[1])
        },
        "top": [
            {"function": f, "calls_per_event": c / events, "own_us": o / events * 1e6,
             "cumulative_us": cu / events * 1e6}
            for o, c, cu, f in rows[:count]
        ],
    }  # fmt: skip


def _package(path: str) -> str:
    """The package a profiled function belongs to (``railings``, ``h11``, ``asyncio``...)."""
    if "/site-packages/" in path:
        return path.split("/site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if "/src/railings/" in path:
        return "railings"
    if "/lib/python3" in path:
        return path.rsplit("/lib/python3", 1)[1].split("/")[1].removesuffix(".py")
    if path.startswith("~") or path.startswith("<"):
        return "builtins"
    return path.rsplit("/", 1)[-1].removesuffix(".py")
