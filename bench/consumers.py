"""The consumers measured side by side: each reads a body fed as pieces and returns the result.

Every consumer gets the same pre-cut pieces and must hand back what a caller
needs from the turn: the answer text and the tool call's parsed arguments
(:class:`Result`), so the benchmark can check each one got it right before it
is timed. Where a consumer has HTTP machinery, the pieces reach it through that
machinery's own mock transport (``httpx2.MockTransport`` for railings and the
official SDKs, ``httpx.MockTransport`` for httpx-sse): no network, no server,
only consumption is measured. Clients are built once, outside the timing.

The consumers:

* ``floor``: the body split on blank lines, one ``json.loads`` per event, the text
  or argument delta taken out, the text joined and the arguments parsed at the end:
  the least any client that returns the turn does (no SSE rules, no proof, no
  checks). It returns what railings returns, and is checked the same way.
* ``orjson-split``: the same split with ``orjson.loads``, nothing extracted or
  kept: about the limit for pure Python, the practical floor.
* ``httpx2`` (below) iterates the body bytes and nothing else: the physical floor.
* ``httpx-sse``: httpx-sse's decoder and ``json.loads``, with the few dict
  lookups a hand-written client needs. No checks: the lean baseline.
* ``railings``: the sans-IO core, ``StreamReader`` bytes -> turn.
* ``railings-plain``: the same with every acceleration off (``fast=False``: the plain
  path, the specification), printed beside it.
* ``railings-transport``: railings' own ``AsyncProviderClient`` (one event loop,
  reused across runs), iterated event by event, then its turn.
* ``railings-sync``: the blocking ``ProviderClient`` (its event loop on a thread of
  its own), iterated event by event, then its turn: the sync facade's cost.
* ``openai`` / ``openai.stream``: ``chat.completions.create(stream=True)``
  iterated, and the ``chat.completions.stream()`` accumulating helper.
* ``anthropic`` / ``anthropic.stream``: ``messages.create(stream=True)`` iterated,
  and ``messages.stream()`` with ``get_final_message()``.
* ``openai+guard`` / ``anthropic+guard``: the same plain iteration, with
  ``railings.guard.transport(inner=...)`` wrapping the mock transport.
* ``httpx2`` / ``httpx2+guard``: the body bytes read through an httpx2 client, plain
  and guarded: the guard's own cost, measured on runs fast enough to repeat.

The official SDKs' runners are in :mod:`sdk_consumers`; what every runner is fed (the
mock transports, the request, :class:`~feeds.Result`) is in :mod:`feeds`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import sdk_consumers as S
from feeds import (
    ANTHROPIC_URL,
    MODEL,
    OPENAI_URL,
    SSE_HEADERS,
    Feed,
    Result,
    arguments,
    handler,
    mock,
)
from workloads import Workload

__all__ = ["CONSUMERS", "Consumer", "Result", "available", "check", "runner"]

# -- the floor and the lean baseline -----------------------------------------------------


def _blocks(pieces: list[bytes]) -> Iterator[bytes]:
    """The ``data:`` payload of each event: the body split on blank lines, nothing checked.

    Past 64 KiB held (W5's ``response.completed`` holds the whole text) the pieces are
    kept apart and joined once the blank line arrives, not re-copied with every piece."""
    rest = b""
    held: list[bytes] = []  # the pieces of a long event
    for piece in pieces:
        if len(rest) > 65536:
            last = held[-1] if held else rest
            held.append(piece)
            if b"\n\n" not in piece and not (last[-1:] == b"\n" and piece[:1] == b"\n"):
                continue
            piece = b"".join(held)
            held = []
        blocks = (rest + piece).split(b"\n\n")
        rest = blocks.pop()
        for block in blocks:
            yield block[block.find(b"data: ") + 6 :]


def _floor(provider: str) -> Callable[[list[bytes]], Result]:
    """Split + ``json.loads`` per event + the text or argument delta + the final parse.

    What any client that returns the turn must do at least: no SSE rules, no proof,
    no checks. It hands back the same :class:`Result` railings does."""
    loads = json.loads

    def openai(pieces: list[bytes]) -> Result:
        text: list[str] = []
        args: list[str] = []
        for data in _blocks(pieces):
            if data == b"[DONE]":
                break
            choices = loads(data)["choices"]
            if choices:
                delta = choices[0]["delta"]
                content = delta.get("content")
                if content:
                    text.append(content)
                calls = delta.get("tool_calls")
                if calls:
                    args.append(calls[0]["function"].get("arguments") or "")
        return Result("".join(text), arguments(args))

    def anthropic(pieces: list[bytes]) -> Result:
        text: list[str] = []
        args: list[str] = []
        for data in _blocks(pieces):
            event = loads(data)
            if event["type"] == "content_block_delta":
                delta = event["delta"]
                if delta["type"] == "text_delta":
                    text.append(delta["text"])
                elif delta["type"] == "input_json_delta":
                    args.append(delta["partial_json"])
        return Result("".join(text), arguments(args))

    return {"openai": openai, "anthropic": anthropic, "openai-responses": _floor_responses}[
        provider
    ]


def _floor_responses(pieces: list[bytes]) -> Result:
    """The floor for the Responses API: the text and argument deltas by event type."""
    loads = json.loads
    text: list[str] = []
    args: list[str] = []
    for data in _blocks(pieces):
        event = loads(data)
        kind = event["type"]
        if kind == "response.output_text.delta":
            text.append(event["delta"])
        elif kind == "response.function_call_arguments.delta":
            args.append(event["delta"])
    return Result("".join(text), arguments(args))


def _orjson_split(pieces: list[bytes]) -> Result:
    """The practical limit in pure Python: split + ``orjson.loads`` per event, nothing kept."""
    import orjson

    loads = orjson.loads
    events = 0
    for data in _blocks(pieces):
        if data != b"[DONE]":
            loads(data)
        events += 1
    return Result(events=events)


def _httpx_sse(provider: str) -> Callable[[list[bytes]], Result]:
    import httpx
    from httpx_sse import connect_sse

    class Pieces(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            return iter(Feed.pieces)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=SSE_HEADERS, stream=Pieces())

    client = httpx.Client(transport=httpx.MockTransport(handler))
    loads = json.loads
    path = (
        f"{OPENAI_URL}/chat/completions"
        if provider == "openai"
        else (f"{ANTHROPIC_URL}/v1/messages")
    )

    def openai(pieces: list[bytes]) -> Result:
        text: list[str] = []
        args: list[str] = []
        with connect_sse(client, "POST", path, json={"stream": True}) as source:
            for sse in source.iter_sse():
                if sse.data == "[DONE]":
                    break
                choices = loads(sse.data)["choices"]
                if choices:
                    delta = choices[0]["delta"]
                    if delta.get("content"):
                        text.append(delta["content"])
                    for call in delta.get("tool_calls") or ():
                        args.append(call["function"].get("arguments") or "")
        return Result("".join(text), arguments(args))

    def anthropic(pieces: list[bytes]) -> Result:
        text: list[str] = []
        args: list[str] = []
        with connect_sse(client, "POST", path, json={"stream": True}) as source:
            for sse in source.iter_sse():
                event = loads(sse.data)
                kind = event["type"]
                if kind == "content_block_delta":
                    delta = event["delta"]
                    if delta["type"] == "text_delta":
                        text.append(delta["text"])
                    elif delta["type"] == "input_json_delta":
                        args.append(delta["partial_json"])
                elif kind == "message_stop":
                    break
        return Result("".join(text), arguments(args))

    return openai if provider == "openai" else anthropic


# -- railings ----------------------------------------------------------------------------


def _railings_core(provider: str, fast: bool | None = None) -> Callable[[list[bytes]], Result]:
    """``StreamReader``: the path the accelerations switch chooses, or ``fast``'s."""
    from railings.turn.reader import StreamReader

    def run(pieces: list[bytes]) -> Result:
        reader = StreamReader(provider, fast=fast)
        feed = reader.feed
        for piece in pieces:
            feed(piece)
        reader.close()
        turn = reader.turn()
        calls = turn.tool_calls
        return Result(turn.text, calls[0].arguments if calls else None)

    return run


def _railings_transport(provider: str) -> Callable[[list[bytes]], Result]:
    from railings.messages import User
    from railings.transport import AsyncProviderClient, ClientConfig

    base = OPENAI_URL if provider == "openai" else ANTHROPIC_URL
    config = ClientConfig(
        provider=provider,
        model=MODEL[provider],
        base_url=base,  # type: ignore[arg-type]
        api_key="bench",
        # W2 and W4 carry 1 MB of arguments: about 250k tokens, so a request for them
        # asks for that much output (the turn's bounds derive from it).
        max_tokens=262_144,
    )
    client = AsyncProviderClient(config, transport=httpx2.MockTransport(handler))
    loop = asyncio.new_event_loop()
    history = [User("Write the handler.")]

    async def read() -> Any:
        stream = client.stream_turn(history)
        async for _ in stream:  # as a caller reads it (and as railings-sync does)
            pass
        return await stream.result()

    def run(pieces: list[bytes]) -> Result:
        turn = loop.run_until_complete(read())
        calls = turn.tool_calls
        return Result(turn.text, calls[0].arguments if calls else None)

    return run


def _railings_sync(provider: str) -> Callable[[list[bytes]], Result]:
    from railings.messages import User
    from railings.transport import ClientConfig, ProviderClient

    base = OPENAI_URL if provider == "openai" else ANTHROPIC_URL
    config = ClientConfig(
        provider=provider,
        model=MODEL[provider],
        base_url=base,  # type: ignore[arg-type]
        api_key="bench",
        max_tokens=262_144,  # as railings-transport
    )
    client = ProviderClient(config, transport=httpx2.MockTransport(handler))
    history = [User("Write the handler.")]

    def run(pieces: list[bytes]) -> Result:
        stream = client.stream_turn(history)
        for _ in stream:  # every event crosses from the client's loop thread
            pass
        turn = stream.result()
        calls = turn.tool_calls
        return Result(turn.text, calls[0].arguments if calls else None)

    return run


def _httpx2_bytes(provider: str, guard: bool) -> Callable[[list[bytes]], Result]:
    """The body read through an httpx2 client, and nothing else. The guard's own cost is the
    difference between the guarded and the plain runs (see report.guard_overheads)."""
    client = httpx2.Client(transport=mock(guard))
    url = (
        f"{OPENAI_URL}/chat/completions"
        if provider == "openai"
        else (f"{ANTHROPIC_URL}/v1/messages")
    )

    def run(pieces: list[bytes]) -> Result:
        size = 0
        with client.stream("POST", url, json={}) as response:
            for chunk in response.iter_bytes():
                size += len(chunk)
        return Result(bytes=size)

    return run


# -- the registry ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Consumer:
    """One way of reading a stream. ``make(provider)`` builds its runner (clients included)."""

    name: str
    providers: tuple[str, ...]
    make: Callable[[str], Callable[[list[bytes]], Result]]
    group: str  # "floor" | "baseline" | "railings" | "sdk" | "guard"
    note: str
    threads: bool = False  # its work runs on a thread of its own: timed by process CPU


CONSUMERS: tuple[Consumer, ...] = (
    Consumer(
        "floor",
        ("openai", "anthropic", "openai-responses"),
        _floor,
        "floor",
        "split on blank lines + json.loads + the text/argument delta + the final parse",
    ),
    Consumer(
        "orjson-split",
        ("openai", "anthropic", "openai-responses"),
        lambda p: _orjson_split,
        "floor",
        "split on blank lines + orjson.loads per event, nothing kept: the practical limit",
    ),
    Consumer(
        "httpx-sse",
        ("openai", "anthropic"),
        _httpx_sse,
        "baseline",
        "httpx MockTransport + httpx-sse + json.loads",
    ),
    Consumer(
        "railings",
        ("openai", "anthropic", "openai-responses"),
        _railings_core,
        "railings",
        "core: StreamReader bytes -> Turn",
    ),
    Consumer(
        "railings-plain",
        ("openai", "anthropic", "openai-responses"),
        lambda p: _railings_core(p, fast=False),
        "railings",
        "the core with every acceleration off: StreamReader(fast=False)",
    ),
    Consumer(
        "railings-transport",
        ("openai", "anthropic"),
        _railings_transport,
        "railings",
        "AsyncProviderClient over httpx2.MockTransport",
    ),
    Consumer(
        "railings-sync",
        ("openai", "anthropic"),
        _railings_sync,
        "railings",
        "ProviderClient (blocking) over httpx2.MockTransport, events iterated",
        threads=True,
    ),
    Consumer(
        "httpx2",
        ("openai", "anthropic"),
        lambda p: _httpx2_bytes(p, False),
        "baseline",
        "httpx2 MockTransport, body bytes iterated",
    ),
    Consumer(
        "httpx2+guard",
        ("openai", "anthropic"),
        lambda p: _httpx2_bytes(p, True),
        "guard",
        "the same through railings.guard.transport: the guard's own cost",
    ),
    Consumer(
        "openai",
        ("openai",),
        lambda p: S.openai_iterate(False),
        "sdk",
        "chat.completions.create(stream=True), iterated",
    ),
    Consumer(
        "openai.responses",
        ("openai-responses",),
        lambda p: S.openai_responses(),
        "sdk",
        "responses.create(stream=True), iterated",
    ),
    Consumer(
        "openai.stream",
        ("openai",),
        lambda p: S.openai_helper(),
        "sdk",
        "chat.completions.stream() + get_final_completion()",
    ),
    Consumer(
        "openai+guard",
        ("openai",),
        lambda p: S.openai_iterate(True),
        "guard",
        "create(stream=True) through railings.guard.transport",
    ),
    Consumer(
        "anthropic",
        ("anthropic",),
        lambda p: S.anthropic_iterate(False),
        "sdk",
        "messages.create(stream=True), iterated",
    ),
    Consumer(
        "anthropic.stream",
        ("anthropic",),
        lambda p: S.anthropic_helper(),
        "sdk",
        "messages.stream() + get_final_message()",
    ),
    Consumer(
        "anthropic+guard",
        ("anthropic",),
        lambda p: S.anthropic_iterate(True),
        "guard",
        "create(stream=True) through railings.guard.transport",
    ),
)


def available() -> dict[str, str]:
    """Which optional consumers can run here: name -> reason it cannot ("" when it can)."""
    missing: dict[str, str] = {}
    for module, names in (
        ("httpx_sse", ("httpx-sse",)),
        ("orjson", ("orjson-split",)),
        ("openai", ("openai", "openai.responses", "openai.stream", "openai+guard")),
        ("anthropic", ("anthropic", "anthropic.stream", "anthropic+guard")),
        ("railings.transport", ("railings-transport", "railings-sync")),
        ("railings.guard", ("openai+guard", "anthropic+guard", "httpx2+guard")),
    ):
        try:
            __import__(module)
        except ImportError as exc:
            for name in names:
                missing[name] = f"{module} not importable: {exc}"
    return {c.name: missing.get(c.name, "") for c in CONSUMERS}


def runner(consumer: Consumer, provider: str) -> Callable[[list[bytes]], Result]:
    """The consumer's runner for ``provider``: its mock transports answer with the pieces."""
    run = consumer.make(provider)

    def fed(pieces: list[bytes]) -> Result:
        Feed.pieces = pieces
        return run(pieces)

    return fed


def check(workload: Workload, result: Result) -> str | None:
    """None when the consumer got the workload's text and arguments, else what differs."""
    if result.bytes is not None:
        return None if result.bytes == len(workload.body) else "read a different body"
    if result.events is not None:
        return (
            None
            if result.events == workload.events
            else (f"parsed {result.events} events, expected {workload.events}")
        )
    if result.text != workload.text:
        return f"text differs ({len(result.text)} vs {len(workload.text)} characters)"
    if result.arguments != workload.arguments:
        return "arguments differ"
    return None
