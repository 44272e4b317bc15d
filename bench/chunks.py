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
import time

import h11
from workloads import build, pieces

from railings.transport.chunks import wrap

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
READ = 64 * 1024


def framed(events: list[bytes]) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"


def read(body: bytes, bulk: bool) -> tuple[bytes, float]:
    """The body's data through a client connection, and the CPU seconds it took."""
    conn = h11.Connection(h11.CLIENT)
    headers = [("host", "b"), ("content-length", "0")]
    conn.send(h11.Request(method="POST", target="/", headers=headers))
    conn.send(h11.EndOfMessage())
    conn.receive_data(HEAD)
    conn.next_event()
    if bulk and not wrap(conn):
        raise SystemExit("the bulk reader could not be put in place")
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
        body = framed(events)
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
