"""Speculative start: a read-only call starts while the turn is still streaming, and its task
is cancelled -- its result discarded -- whenever the call does not stand as written."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from conftest import capture
from railings.dispatch import (
    BatchResult,
    CircuitBreaker,
    Dispatcher,
    OutcomeStatus,
    SpeculativeRunner,
    Tool,
    ToolRegistry,
    default_chain,
    tool,
)
from railings.errors import CircuitOpen, ConfigurationError
from railings.events import ToolCallEnd, ToolCallStart
from railings.turn.reader import StreamReader
from streams import anthropic_tool_stream, openai_chunk

EXECUTED, REJECTED = OutcomeStatus.EXECUTED, OutcomeStatus.REJECTED


class Probe:
    """Tools that log what happens to them; ``blocking`` ones wait until cancelled."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.released = False  # once True, blocking tools return at once
        self.reader: StreamReader | None = None
        self.streaming_at_start: list[bool] = []

    def make(self, name: str, *, blocking: bool = False, speculative: bool = True) -> Tool:
        async def run(path: str) -> str:
            self.log.append(("start", path))
            if self.reader is not None:
                self.streaming_at_start.append(not self.reader.terminated)
            if blocking and not self.released:
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    self.log.append(("cancelled", path))
                    raise
            self.log.append(("done", path))
            return f"{name}({path})"

        return tool(name=name, read_only=True, speculative=speculative)(run)


def events_of(body: bytes) -> list[bytes]:
    """The body split into its SSE events, as a network would deliver them."""
    return [part + b"\n\n" for part in body.split(b"\n\n") if part.strip()]


async def stream(
    body: bytes, runner: SpeculativeRunner, probe: Probe | None = None, **options: Any
) -> StreamReader:
    """Read ``body`` event by event, feeding the runner live; the loop runs between events."""
    reader = StreamReader("auto", **options)
    if probe is not None:
        probe.reader = reader
    for piece in events_of(body):
        runner.feed_all(reader.feed(piece))
        for _ in range(3):
            await asyncio.sleep(0)  # let started tasks run while the stream goes on
    reader.close()
    return reader


def chunk_call(index: int, name: str, call_id: str) -> bytes:
    start = {"index": index, "id": call_id, "type": "function"}
    start["function"] = {"name": name, "arguments": ""}
    return openai_chunk({"tool_calls": [start]})


def chunk_args(index: int, fragment: str) -> bytes:
    return openai_chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})


def two_calls(
    first: str, second: str, finish: str | None = "tool_calls", *, done: bool = True
) -> bytes:
    parts = [
        openai_chunk({"role": "assistant", "content": ""}),
        chunk_call(0, "slow_read", "call_0"),
        chunk_args(0, first[:6]),
        chunk_args(0, first[6:]),
        chunk_call(1, "other", "call_1"),  # closes call 0's argument block
        chunk_args(1, second),
    ]
    if finish:
        parts.append(openai_chunk({}, finish))
    if done:
        parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


# -- the overlap -----------------------------------------------------------------------------


def test_a_real_capture_starts_both_calls_before_the_stream_ends() -> None:
    probe = Probe()
    ran: list[str] = []

    @tool(read_only=True, speculative=True)
    async def GetWeatherArgs(city: str, country: str, units: str) -> str:
        ran.append("weather")
        probe.streaming_at_start.append(not probe.reader.terminated)  # type: ignore[union-attr]
        return f"{city}: 12 {units}"

    @tool(read_only=True, speculative=True)
    async def get_stock_price(ticker: str, exchange: str) -> str:
        ran.append("stock")
        probe.streaming_at_start.append(not probe.reader.terminated)  # type: ignore[union-attr]
        return f"{ticker}: 230"

    registry = ToolRegistry([GetWeatherArgs, get_stock_price])

    async def main() -> tuple[SpeculativeRunner, BatchResult]:
        runner = SpeculativeRunner(registry)
        reader = await stream(capture("openai/parallel_tool_calls_usage_chunk.sse"), runner, probe)
        return runner, await Dispatcher(registry).dispatch_turn(reader.turn(), speculative=runner)

    runner, batch = asyncio.run(main())
    assert ran == ["weather", "stock"]  # each ran once: the results were reused
    assert probe.streaming_at_start == [True, True]  # ... and both started mid-stream
    assert runner.started == ("call_JMW1whyEaYG438VE1OIflxA2", "call_DNYTawLBoN8fj3KN6qU9N1Ou")
    assert [(o.status, o.content, o.speculative) for o in batch] == [
        (EXECUTED, "Edinburgh: 12 c", True),
        (EXECUTED, "AAPL: 230", True),
    ]


def test_an_anthropic_call_starts_at_content_block_stop() -> None:
    probe = Probe()
    registry = ToolRegistry([probe.make("lookup")])
    body = anthropic_tool_stream(['{"path": ', '"a.txt"}'], "tool_use")
    body = body.replace(b'"name": "shell"', b'"name": "lookup"')

    async def main() -> BatchResult:
        runner = SpeculativeRunner(registry)
        reader = await stream(body, runner, probe)
        return await Dispatcher(registry).dispatch_turn(reader.turn(), speculative=runner)

    batch = asyncio.run(main())
    assert probe.streaming_at_start == [True]
    assert [(o.status, o.content, o.speculative) for o in batch] == [
        (EXECUTED, "lookup(a.txt)", True)
    ]


# -- the cancellation ------------------------------------------------------------------------


def test_an_abrupt_end_cancels_the_started_task_and_executes_nothing() -> None:
    probe = Probe()
    registry = ToolRegistry([probe.make("slow_read", blocking=True), probe.make("other")])
    body = two_calls('{"path": "a.txt"}', '{"path": "b.txt"}', done=False)

    async def main() -> tuple[SpeculativeRunner, BatchResult]:
        runner = SpeculativeRunner(registry)
        reader = await stream(body, runner)
        assert probe.log == [("start", "a.txt"), ("start", "b.txt"), ("done", "b.txt")]
        return runner, await Dispatcher(registry).dispatch_turn(reader.turn(), speculative=runner)

    runner, batch = asyncio.run(main())
    assert [(o.status, o.verdict.reason and o.verdict.reason.value) for o in batch] == [
        (REJECTED, "interrupted"),
        (REJECTED, "interrupted"),
    ]
    assert probe.log[-1] == ("cancelled", "a.txt")
    assert runner.cancelled == ("call_0",)  # call_1's task had already finished: discarded


def test_a_call_rewritten_after_its_block_closed_is_cancelled_then_and_there() -> None:
    # A provider that sends one more fragment for call 0 after call 1 started: the task
    # started on arguments that are no longer the call's. At the output limit, the call's
    # arguments no longer parse: truncated, rejected. The sibling still executes.
    probe = Probe()
    registry = ToolRegistry([probe.make("slow_read", blocking=True), probe.make("other")])
    body = b"".join(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            chunk_call(0, "slow_read", "call_0"),
            chunk_args(0, '{"path": "a.txt"}'),
            chunk_call(1, "other", "call_1"),
            chunk_args(0, ', "path": "/etc/pass'),
            chunk_args(1, '{"path": "b.txt"}'),
            openai_chunk({}, "length"),
            b"data: [DONE]\n\n",
        ]
    )

    async def main() -> BatchResult:
        runner = SpeculativeRunner(registry)
        reader = await stream(body, runner, probe)
        assert ("cancelled", "a.txt") in probe.log  # before the stream even ended
        assert runner.cancelled == ("call_0",)
        return await Dispatcher(registry).dispatch_turn(reader.turn(), speculative=runner)

    batch = asyncio.run(main())
    assert [(o.status, o.verdict.reason and o.verdict.reason.value) for o in batch] == [
        (REJECTED, "truncated"),
        (EXECUTED, None),
    ]
    assert probe.log == [
        ("start", "a.txt"),
        ("cancelled", "a.txt"),
        ("start", "b.txt"),
        ("done", "b.txt"),
    ]


def test_a_rejected_call_is_cancelled_before_any_sibling_runs() -> None:
    # The dispatcher's own placement, apart from the runner's: the runner saw call 0
    # complete, the turn it is handed says call 0 was cut at the output limit. The task is
    # cancelled -- and has stopped -- before the sibling starts.
    probe = Probe()
    registry = ToolRegistry(
        [probe.make("slow_read", blocking=True), probe.make("other", speculative=False)]
    )
    seen = two_calls('{"path": "a.txt"}', '{"path": "b.txt"}', done=False)
    judged = b"".join(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            chunk_call(0, "slow_read", "call_0"),
            chunk_args(0, '{"path": "a.t'),
            chunk_call(1, "other", "call_1"),
            chunk_args(1, '{"path": "b.txt"}'),
            openai_chunk({}, "length"),
            b"data: [DONE]\n\n",
        ]
    )

    async def main() -> BatchResult:
        runner = SpeculativeRunner(registry)
        await stream(seen, runner)
        turn = (await stream(judged, SpeculativeRunner(ToolRegistry()))).turn()
        return await Dispatcher(registry).dispatch_turn(turn, speculative=runner)

    batch = asyncio.run(main())
    assert [o.status for o in batch] == [REJECTED, EXECUTED]
    assert probe.log == [
        ("start", "a.txt"),
        ("cancelled", "a.txt"),
        ("start", "b.txt"),
        ("done", "b.txt"),
    ]


def test_no_task_outlives_dispatch_turn() -> None:
    probe = Probe()
    registry = ToolRegistry([probe.make("slow_read", blocking=True), probe.make("other")])
    body = two_calls('{"path": "a.txt"}', '{"path": "b.txt"}', done=False)

    async def main() -> None:
        runner = SpeculativeRunner(registry)
        reader = await stream(body, runner)
        await Dispatcher(registry).dispatch_turn(reader.turn(), speculative=runner)
        tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("speculative")]
        assert tasks == []

    asyncio.run(main())
    assert probe.log[-1] == ("cancelled", "a.txt")


def test_a_call_cut_by_the_output_limit_never_starts() -> None:
    probe = Probe()
    registry = ToolRegistry([probe.make("slow_read"), probe.make("other")])
    body = two_calls('{"path": "a.txt"}', '{"path": "b.t', "length")

    async def main() -> tuple[SpeculativeRunner, BatchResult]:
        runner = SpeculativeRunner(registry)
        reader = await stream(body, runner, probe)
        return runner, await Dispatcher(registry).dispatch_turn(reader.turn(), speculative=runner)

    runner, batch = asyncio.run(main())
    assert runner.started == ("call_0",)  # call_1's block closed, but its arguments are cut
    assert [(o.status, o.speculative) for o in batch] == [(EXECUTED, True), (REJECTED, False)]
    assert probe.log == [("start", "a.txt"), ("done", "a.txt")]


def test_only_speculative_tools_with_valid_arguments_start() -> None:
    probe = Probe()
    registry = ToolRegistry([probe.make("slow_read", speculative=False), probe.make("other")])
    body = two_calls('{"path": "a.txt"}', '{"file": "b.txt"}')

    async def main() -> SpeculativeRunner:
        runner = SpeculativeRunner(registry)
        await stream(body, runner)
        return runner

    assert asyncio.run(main()).started == ()  # not opted in; schema mismatch
    assert probe.log == []


def test_a_repaired_call_does_not_use_the_task_started_on_other_arguments() -> None:
    probe = Probe()
    registry = ToolRegistry([probe.make("slow_read"), probe.make("other")])
    body = b"".join(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            chunk_call(0, "slow_read", "call_0"),
            chunk_args(0, '{"path": "a.txt"}'),
            chunk_call(1, "other", "call_1"),
            chunk_args(0, "\n```"),  # now a fenced object: repaired by UNWRAP at the end
            chunk_args(1, '{"path": "b.txt"}'),
            openai_chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    )

    async def main() -> BatchResult:
        runner = SpeculativeRunner(registry)
        reader = await stream(body, runner)
        assert probe.log[:2] == [("start", "a.txt"), ("done", "a.txt")]  # finished early
        return await Dispatcher(registry).dispatch_turn(reader.turn(), speculative=runner)

    batch = asyncio.run(main())
    assert [(o.status, o.speculative, o.verdict.repaired) for o in batch] == [
        (EXECUTED, False, True),  # its finished task is discarded; run afresh
        (EXECUTED, True, False),
    ]
    assert probe.log.count(("start", "a.txt")) == 2


def test_a_gate_refusing_a_started_call_discards_its_result() -> None:
    probe = Probe()
    registry = ToolRegistry([probe.make("slow_read", blocking=True), probe.make("other")])
    dispatcher = Dispatcher(registry, chain=default_chain(max_repeats=2))

    async def main() -> BatchResult:
        probe.released = True  # the first slow_read(a.txt) runs to its end
        first = await dispatcher.dispatch_turn(
            (
                await stream(
                    _one_call("slow_read", '{"path": "a.txt"}'), SpeculativeRunner(ToolRegistry())
                )
            ).turn()
        )
        assert [o.status for o in first] == [EXECUTED]
        probe.released = False
        runner = SpeculativeRunner(registry)
        reader = await stream(two_calls('{"path": "a.txt"}', '{"path": "b.txt"}'), runner)
        assert probe.log[-3:] == [("start", "a.txt"), ("start", "b.txt"), ("done", "b.txt")]
        # The same call again: the loop guard intercepts it although its task started.
        return await dispatcher.dispatch_turn(reader.turn(), speculative=runner)

    batch = asyncio.run(main())
    assert [(o.status, o.speculative) for o in batch] == [
        (OutcomeStatus.INTERCEPTED, False),
        (EXECUTED, True),
    ]
    assert probe.log[-1] == ("cancelled", "a.txt")


def _one_call(name: str, arguments: str) -> bytes:
    return b"".join(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            chunk_call(0, name, "call_x"),
            chunk_args(0, arguments),
            openai_chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    )


def test_an_open_circuit_still_cancels_every_started_task() -> None:
    probe = Probe()

    @tool
    def broken(path: str) -> str:
        raise OSError("disk on fire")

    registry = ToolRegistry([probe.make("slow_read", blocking=True), broken])
    body = b"".join(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            chunk_call(0, "broken", "call_0"),
            chunk_args(0, '{"path": "x"}'),
            chunk_call(1, "slow_read", "call_1"),
            chunk_args(1, '{"path": "a.txt"}'),
            openai_chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    )

    async def main() -> None:
        runner = SpeculativeRunner(registry)
        reader = await stream(body, runner)
        dispatcher = Dispatcher(registry, breaker=CircuitBreaker(max_failures=1))
        with pytest.raises(CircuitOpen):
            await dispatcher.dispatch_turn(reader.turn(), speculative=runner)

    asyncio.run(main())
    assert probe.log == [("start", "a.txt"), ("cancelled", "a.txt")]


def test_leaving_the_runner_cancels_what_it_started() -> None:
    probe = Probe()
    registry = ToolRegistry([probe.make("slow_read", blocking=True), probe.make("other")])
    body = two_calls('{"path": "a.txt"}', '{"path": "b.txt"}', done=False)

    async def main() -> None:
        async with SpeculativeRunner(registry) as runner:
            await stream(body, runner)  # the stream failed; the turn is never dispatched

    asyncio.run(main())
    assert probe.log[-1] == ("cancelled", "a.txt")


def test_the_runner_needs_a_running_event_loop() -> None:
    probe = Probe()
    runner = SpeculativeRunner(ToolRegistry([probe.make("slow_read")]))
    start = ToolCallStart(
        index=0, id="call_0", name="slow_read", initial_arguments=json.dumps({"path": "a"})
    )
    runner.feed(start)
    with pytest.raises(ConfigurationError, match="running event loop"):
        runner.feed(ToolCallEnd(index=0))
