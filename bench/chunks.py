"""h11's chunked reader against railings' bulk one: ``.venv/bin/python bench/chunks.py``.

The body is a workload's (``bench/workloads.py``) as a provider sends it, one SSE event
per HTTP chunk, handed to an h11 client connection 64 KiB at a time (httpcore2's read
size) and read to its end, once with h11's own ``ChunkedReader`` and once with
``transport/chunks.ChunksInBulk`` in its place. Both runs alternate, CPU time of this
thread, medians; the ratio is bulk over h11. Both must read the same bytes, or the run
stops.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import h11

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent)]  # workloads; tools.reliability.chunked

from workloads import build, pieces  # noqa: E402

from tools.reliability.chunked import LAST, chunk, connection  # noqa: E402

READ = 64 * 1024


def read(body: bytes, bulk: bool) -> tuple[bytes, float]:
    """The body's data through a client connection, and the CPU seconds it took."""
    conn = connection(bulk)
    out: list[bytes] = []
    started = time.thread_time()
    for at in range(0, len(body), READ):
        conn.receive_data(body[at : at + READ])
        event = conn.next_event()
        while type(event) is h11.Data:
            out.append(event.data)
            event = conn.next_event()
    spent = time.thread_time() - started
    if type(event) is not h11.EndOfMessage:
        raise SystemExit(f"the body did not end: {event!r}")
    return b"".join(out), spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="W1,W3")
    parser.add_argument("-n", type=int, default=20_000, help="content events per body")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    print("| workload | events | h11 µs/event | bulk µs/event | bulk / h11 |")
    print("|---|---:|---:|---:|---:|")
    for name in args.workloads.split(","):
        workload = build(name, args.n)
        events = pieces(workload.body, "event")
        body = b"".join(chunk(e) for e in events) + LAST
        times: dict[bool, list[float]] = {False: [], True: []}
        for r in range(args.rounds):
            for bulk in (False, True) if r % 2 == 0 else (True, False):
                data, spent = read(body, bulk)
                if data != workload.body:
                    raise SystemExit(f"{name}: the {'bulk' if bulk else 'h11'} reader lost bytes")
                times[bulk].append(spent)
        plain, bulk_time = statistics.median(times[False]), statistics.median(times[True])
        per = 1e6 / len(events)
        print(
            f"| {name}@{args.n // 1000}k | {len(events):,} | {plain * per:.2f} | "
            f"{bulk_time * per:.2f} | {bulk_time / plain:.2f}x |"
        )


if __name__ == "__main__":
    main()
