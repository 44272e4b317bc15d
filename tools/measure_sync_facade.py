"""The blocking ProviderClient against the AsyncProviderClient: iterate every event of a turn.

Both clients read the same body, best of ``--runs``; the ratio is what matters.
``--mock``: httpx2.MockTransport, fed the bench workloads' pieces (``bench/workloads.py``,
1-4 KiB network pieces or one event per piece). ``--loopback``: a real socket on
127.0.0.1 (tests/_server.CannedServer), one event per HTTP chunk.

    .venv/bin/python tools/measure_sync_facade.py --mock W1 net
    .venv/bin/python tools/measure_sync_facade.py --loopback
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx2

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

from railings.messages import User  # noqa: E402
from railings.transport import AsyncProviderClient, ClientConfig, ProviderClient  # noqa: E402

HISTORY = [User("go")]


def best(runs: int, once: Callable[[], int]) -> tuple[float, int]:
    fastest, count = float("inf"), 0
    for _ in range(runs):
        started = time.perf_counter()
        count = once()
        fastest = min(fastest, time.perf_counter() - started)
    return fastest, count


def compare(config: ClientConfig, runs: int, before: Callable[[], None], **kw: Any) -> str:
    loop = asyncio.new_event_loop()
    client = AsyncProviderClient(config, **kw)

    async def read_async() -> int:
        return len([event async for event in client.stream_turn(HISTORY)])

    def async_once() -> int:
        before()
        return loop.run_until_complete(read_async())

    a, events = best(runs, async_once)
    loop.run_until_complete(client.aclose())
    loop.close()
    with ProviderClient(config, **kw) as blocking:

        def sync_once() -> int:
            before()
            return sum(1 for _ in blocking.stream_turn(HISTORY))

        s, same = best(runs, sync_once)
    if same != events:
        raise SystemExit(f"the clients saw {events} and {same} events")
    return (
        f"{events} events: async {a * 1e3:.1f} ms, sync {s * 1e3:.1f} ms, sync/async {s / a:.2f}x"
    )


def mock(workload: str, mode: str, n: int, runs: int) -> str:
    from workloads import build, pieces

    parts = pieces(build(workload, n).body, mode)

    class Pieces(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for part in parts:
                yield part

    def handle(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Pieces())

    openai = workload in ("W1", "W2")
    config = ClientConfig(
        provider="openai" if openai else "anthropic",
        model="m",
        base_url="http://bench.test/v1" if openai else "http://bench.test",
        api_key="bench-key-0000",
    )
    result = compare(config, runs, lambda: None, transport=httpx2.MockTransport(handle))
    return f"{workload} {mode} n={n}, {len(parts)} pieces, {result}"


def loopback(n: int, runs: int) -> str:
    from _server import CannedServer, Reply, openai_text

    chunks = openai_text([f"w{i} " for i in range(n)])
    with CannedServer() as server:
        config = ClientConfig(
            provider="openai",
            model="m",
            base_url=f"{server.url}/v1",
            api_key="bench-key-0000",
            http2=False,
        )
        result = compare(config, runs, lambda: server.push(Reply(chunks=chunks)))
    return f"loopback n={n}, one event per chunk, {result}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--mock", nargs=2, metavar=("WORKLOAD", "MODE"))
    where.add_argument("--loopback", action="store_true")
    parser.add_argument("-n", type=int, default=5000, help="deltas per turn")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    if args.mock:
        print(mock(args.mock[0], args.mock[1], args.n, args.runs))
    else:
        print(loopback(args.n, args.runs))


if __name__ == "__main__":
    main()
