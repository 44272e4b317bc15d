"""Bounds on one turn, the two idle clocks and the connection pool, against real servers.

Every server here runs on 127.0.0.1 and ignores what it was asked: it streams past
``max_tokens``, or sends nothing but keep-alives. What is asserted is counted
(characters, events, bytes, pings, requests), never how long anything took.
"""

from __future__ import annotations

import asyncio
import collections
import gzip
import json
from collections.abc import Iterator

import pytest

from _server import DONE, CannedServer, Reply, openai_text
from railings.errors import IdleTimeout, PoolTimeout, StreamInterrupted, TurnTooLarge
from railings.limits import TurnLimits, TurnMeter
from railings.messages import User
from railings.testing import Script, ScriptedServer
from railings.transport import AsyncProviderClient, ClientConfig, RetryPolicy, Timeouts
from railings.turn.model import Outcome, Turn
from railings.turn.verdict import judge
from streams import anthropic_event, anthropic_tool_stream, openai_chunk


@pytest.fixture
def server() -> Iterator[CannedServer]:
    with CannedServer() as running:
        yield running


def config(server: CannedServer, provider: str = "openai", **kw: object) -> ClientConfig:
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    kw.setdefault("retry", RetryPolicy(attempts=1))
    return ClientConfig(provider=provider, model="m", base_url=base, api_key="k", **kw)  # type: ignore[arg-type]


async def stream_once(cfg: ClientConfig) -> tuple[Turn, StreamInterrupted | None]:
    async with AsyncProviderClient(cfg) as client:
        stream = client.stream_turn([User("hi")])
        turn = await stream.result()
        return turn, stream.interruption


# -- the bounds and their defaults ----------------------------------------------------------


def test_default_bounds_are_derived_from_max_tokens() -> None:
    small, large = TurnLimits().resolve(16), TurnLimits().resolve(4096)
    assert small.text == 256 * 1024 + 64 * 16
    assert small.events == 10_000 + 8 * 16
    assert small.bytes == 16 * 2**20 + 4096 * 16
    assert large.arguments == 256 * 1024 + 64 * 4096
    assert TurnLimits(text=10).resolve(4096).text == 10  # an override is kept
    assert TurnLimits().resolve(None) == TurnLimits().resolve(128_000)


def test_a_well_behaved_turn_is_far_from_its_bounds() -> None:
    # 64 characters per token is more than any tokenizer's average by an order of magnitude.
    meter = TurnMeter(None, 4096)
    limits = meter.limits
    assert limits.text is not None and limits.text > 4096 * 16


# -- a provider that ignores max_tokens -----------------------------------------------------


def test_text_past_the_bound_ends_the_turn_with_a_typed_error(server: CannedServer) -> None:
    piece = openai_chunk({"content": "x" * 4000})
    server.push(Reply(chunks=[openai_chunk({"role": "assistant", "content": ""})] + [piece] * 3000))
    turn, interruption = asyncio.run(stream_once(config(server, max_tokens=16)))
    limit = TurnLimits().resolve(16).text
    assert limit is not None
    assert turn.outcome is Outcome.PARTIAL
    assert interruption is not None
    cause = interruption.__cause__
    assert isinstance(cause, TurnTooLarge)
    assert (cause.bound, cause.limit, cause.max_tokens) == ("text", limit, 16)
    assert not cause.retryable and not interruption.retryable
    assert "ignored its output limit" in interruption.message
    # Cut within one network read of the bound (a read is at most 64 KiB), not at 12 M.
    assert limit < len(turn.text) <= limit + 65536


def test_tool_arguments_past_the_bound(server: CannedServer) -> None:
    body = anthropic_tool_stream(['{"command": "'] + ["y" * 2000] * 500, "tool_use")
    server.push(Reply(chunks=[body[i : i + 4096] for i in range(0, len(body), 4096)]))
    turn, interruption = asyncio.run(stream_once(config(server, "anthropic", max_tokens=16)))
    assert interruption is not None and isinstance(interruption.__cause__, TurnTooLarge)
    assert interruption.__cause__.bound == "arguments"
    assert turn.outcome is Outcome.PARTIAL
    assert turn.tool_calls and not any(v.execute for v in judge(turn))  # nothing of it runs


def test_events_past_the_bound(server: CannedServer) -> None:
    # 20,000 one-character deltas: little text, but a journal row each.
    piece = openai_chunk({"content": "z"})
    server.push(Reply(chunks=[b"".join([piece] * 1000)] * 20))
    turn, interruption = asyncio.run(stream_once(config(server, max_tokens=16)))
    assert interruption is not None and isinstance(interruption.__cause__, TurnTooLarge)
    assert interruption.__cause__.bound == "events"
    assert turn.outcome is Outcome.PARTIAL
    assert len(turn.text) <= 10_000 + 8 * 16 + 1000


def test_keepalives_past_the_byte_bound_raise_and_are_not_resent(server: CannedServer) -> None:
    # 280 MB of keep-alive comments in 0.5 MB of gzip; nothing else, so the turn is Empty.
    body = gzip.compress(b": keep-alive\n\n" * 2_000_000)
    headers = (("content-type", "text/event-stream"), ("content-encoding", "gzip"))
    chunks = [body[i : i + 65536] for i in range(0, len(body), 65536)] * 10
    server.push(Reply(chunks=chunks, headers=headers), Reply(chunks=openai_text(["never"])))
    cfg = config(server, retry=RetryPolicy(attempts=3), limits=TurnLimits(bytes=2**20))
    with pytest.raises(TurnTooLarge) as raised:
        asyncio.run(stream_once(cfg))
    assert raised.value.bound == "bytes" and raised.value.limit == 2**20
    turn = raised.value.turn
    assert isinstance(turn, Turn) and turn.outcome is Outcome.EMPTY
    assert turn.error is not None and not turn.error.retryable
    assert len(server.requests) == 1  # a remote fault: never resent


# -- two idle clocks ------------------------------------------------------------------------

PINGS = 3000  # at 20 ms apart the server would ping for a minute


def test_keepalives_do_not_reset_the_content_clock(server: CannedServer) -> None:
    ping = b": ping\n\n"
    chunks: list[bytes | float] = [openai_chunk({"role": "assistant", "content": "hello"})]
    chunks += [0.02, ping] * PINGS + [DONE]
    server.push(Reply(chunks=chunks))
    cfg = config(server, timeouts=Timeouts(idle=10.0, content_idle=0.3))
    turn, interruption = asyncio.run(stream_once(cfg))
    assert turn.outcome is Outcome.PARTIAL and turn.text == "hello"
    assert isinstance(interruption, IdleTimeout)
    assert interruption.idle_seconds == 0.3
    assert "only keep-alives" in interruption.message
    assert interruption.received.count(ping) < PINGS  # ended by the client, not the server


def test_anthropic_pings_do_not_reset_the_content_clock(server: CannedServer) -> None:
    start, *_ = anthropic_tool_stream(['{"a": 1}'], "tool_use").split(b"\n\n", 1)
    ping = anthropic_event({"type": "ping"})
    server.push(Reply(chunks=[start + b"\n\n", *([0.02, ping] * PINGS)]))
    cfg = config(server, "anthropic", timeouts=Timeouts(idle=10.0, first_byte=0.3))
    with pytest.raises(IdleTimeout) as raised:  # no content yet: Empty, raised (attempts=1)
        asyncio.run(stream_once(cfg))
    assert raised.value.empty
    assert raised.value.received.count(b'"ping"') < PINGS


def test_any_byte_keeps_the_connection_clock_alive(server: CannedServer) -> None:
    chunks: list[bytes | float] = [openai_chunk({"role": "assistant", "content": "a"})]
    chunks += [0.05, b": ping\n\n"] * 30 + openai_text(["b"])[1:]
    server.push(Reply(chunks=chunks))
    cfg = config(server, timeouts=Timeouts(idle=1.0, content_idle=60.0))
    turn, interruption = asyncio.run(stream_once(cfg))
    assert interruption is None and turn.outcome is Outcome.COMPLETE and turn.text == "ab"


# -- the pool fits the concurrency ----------------------------------------------------------


def _slow_script() -> Script:
    # Each turn holds its connection for about 6 s (six pieces, 1 s apart): twice the connect
    # timeout below, so a queue bounded by the connect timeout fails by a wide margin, while
    # a loopback connect is thousands of times faster than that timeout, even on a busy machine.
    return Script.from_dict({"delay": 1.0, "chunk_size": 4, "turns": [{"text": "slow but sure"}]})


def test_more_concurrent_turns_than_the_old_pool_all_complete() -> None:
    # 150 turns at once, each holding its connection for several event delays: more than
    # httpx2's default pool of 100. A short connect timeout must not fail the queued ones.
    async def main(url: str) -> collections.Counter[str]:
        cfg = ClientConfig(
            provider="openai",
            model="m",
            base_url=url,
            api_key="k",
            timeouts=Timeouts(connect=3.0),
            retry=RetryPolicy(attempts=1),
        )
        async with AsyncProviderClient(cfg) as client:
            turns = await asyncio.gather(
                *(client.stream_turn([User("hi")]).result() for _ in range(150))
            )
        return collections.Counter(t.outcome.name for t in turns)

    with ScriptedServer(_slow_script()) as scripted:
        assert asyncio.run(main(scripted.openai_base_url)) == {"COMPLETE": 150}
        assert len(scripted.requests) == 150


def test_waiting_for_a_full_pool_is_its_own_typed_timeout() -> None:
    async def main(url: str) -> tuple[object, object]:
        cfg = ClientConfig(
            provider="openai",
            model="m",
            base_url=url,
            api_key="k",
            max_connections=1,
            timeouts=Timeouts(pool=0.1),
        )
        async with AsyncProviderClient(cfg) as client:
            first = asyncio.create_task(client.stream_turn([User("hi")]).result())
            while not scripted.requests:
                await asyncio.sleep(0.01)
            second = await asyncio.gather(
                client.stream_turn([User("hi")]).result(), return_exceptions=True
            )
            return await first, second[0]

    with ScriptedServer(_slow_script()) as scripted:
        first, second = asyncio.run(main(scripted.openai_base_url))
        assert isinstance(first, Turn) and first.outcome is Outcome.COMPLETE
        assert isinstance(second, PoolTimeout)
        assert (second.seconds, second.max_connections) == (0.1, 1)
        assert not second.retryable
        assert len(scripted.requests) == 1  # never retried


def test_pool_options_are_validated() -> None:
    from railings.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        ClientConfig(provider="openai", model="m", max_connections=0)
    with pytest.raises(ConfigurationError):
        Timeouts(pool=0)
    with pytest.raises(ConfigurationError):
        TurnLimits(text=0)
    assert json.dumps(ClientConfig(provider="openai", model="m").max_connections) == "1000"


def test_the_concurrency_tool_counts_what_it_runs() -> None:
    from tools.reliability.concurrency import concurrency

    report = concurrency(turns=30, delay=0.02)
    assert report["ok"] and report["completed"] == 30 and report["requests"] == 30
    assert 1 <= report["peak_in_flight"] <= 30
