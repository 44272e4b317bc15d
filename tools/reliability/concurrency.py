"""Many streamed turns at once, through one client: does the pool fit the concurrency?

::

    python -m tools.reliability.concurrency [--turns 1000] [--delay 0.6]
                                            [--max-connections N] [--pool-timeout S]
                                            [--connect-timeout S] [--json PATH]

One :class:`~railings.testing.ScriptedServer` and one
:class:`~railings.transport.AsyncProviderClient` (its default pool unless
``--max-connections`` says otherwise), and ``--turns`` streamed turns started at
the same moment in one process. Each turn is slow on purpose (``--delay`` between
its events, about 20 events: some 12 s a turn by default), so every turn holds its
connection while the others open theirs: the peak number of turns streaming at the
same time is measured, not assumed. No retries (one attempt each), so a turn failed
by the pool shows as a failure instead of hiding in a resend.

``--max-connections 100 --pool-timeout 10`` is the pool railings had before:
httpx2's default, waited for only as long as the connect timeout.

Reported: turns completed and failed (by error class), the peak of turns in flight,
requests the server saw, open file descriptors and RSS before and after, and the
wall time. Exit status 1 unless every turn completed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from railings.messages import User
from railings.testing import Script, ScriptedServer
from railings.transport import AsyncProviderClient, ClientConfig, RetryPolicy, Timeouts
from tools.reliability.soak import _fds, _rss

__all__ = ["concurrency", "main"]


def _script(delay: float) -> Script:
    return Script.from_dict(
        {"delay": delay, "chunk_size": 16, "seed": 3, "turns": [{"text": {"$filler": 300}}]}
    )


async def _turns(
    url: str, turns: int, config: dict[str, Any]
) -> tuple[Counter[str], int, list[float]]:
    timeouts = Timeouts(connect=config["connect_timeout"], pool=config["pool_timeout"])
    cfg = ClientConfig(
        provider="openai",
        model="concurrency",
        base_url=url,
        api_key="sk-concurrency-not-a-real-key",
        http2=False,
        retry=RetryPolicy(attempts=1),
        timeouts=timeouts,
        max_connections=config["max_connections"],
    )
    in_flight = peak = 0
    outcomes: Counter[str] = Counter()
    seconds: list[float] = []

    async with AsyncProviderClient(cfg) as client:

        async def one() -> None:
            nonlocal in_flight, peak
            started = time.monotonic()
            streaming = False
            try:
                stream = client.stream_turn([User("go")])
                async for _ in stream:
                    if not streaming:
                        streaming = True
                        in_flight += 1
                        peak = max(peak, in_flight)
                outcomes[stream.turn.outcome.value] += 1
            except Exception as exc:  # every failure counts, by class
                outcomes[f"error {type(exc).__name__}"] += 1
            finally:
                if streaming:
                    in_flight -= 1
                seconds.append(time.monotonic() - started)

        await asyncio.gather(*(one() for _ in range(turns)))
    return outcomes, peak, seconds


def concurrency(
    turns: int = 1000,
    delay: float = 0.6,
    max_connections: int = 1000,
    pool_timeout: float = 600.0,
    connect_timeout: float = 10.0,
) -> dict[str, Any]:
    """Run ``turns`` streamed turns at once; return the report (see the module docstring)."""
    config = {
        "max_connections": max_connections,
        "pool_timeout": pool_timeout,
        "connect_timeout": connect_timeout,
    }
    with ScriptedServer(_script(delay)) as server:
        fds_before, rss_before = _fds(), _rss()
        started = time.monotonic()
        outcomes, peak, seconds = asyncio.run(_turns(server.openai_base_url, turns, config))
        elapsed = time.monotonic() - started
        fds_after, rss_after = _fds(), _rss()
        requests = len(server.requests)
    ordered = sorted(seconds)
    completed = outcomes.get("complete", 0)
    return {
        "ok": completed == turns,
        "turns": turns,
        "completed": completed,
        "failed": turns - completed,
        "outcomes": dict(outcomes),
        "peak_in_flight": peak,
        "requests": requests,
        "config": {**config, "delay": delay},
        "seconds": round(elapsed, 2),
        "turn_seconds": {
            "p50": round(ordered[len(ordered) // 2], 3) if ordered else 0.0,
            "max": round(ordered[-1], 3) if ordered else 0.0,
        },
        "open_fds": {"before": fds_before, "after": fds_after},
        "rss_bytes": {"before": rss_before, "after": rss_after},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--delay", type=float, default=0.6, help="seconds between events")
    parser.add_argument("--max-connections", type=int, default=1000)
    parser.add_argument("--pool-timeout", type=float, default=600.0)
    parser.add_argument("--connect-timeout", type=float, default=10.0)
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    report = concurrency(
        args.turns, args.delay, args.max_connections, args.pool_timeout, args.connect_timeout
    )
    text = json.dumps(report, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
