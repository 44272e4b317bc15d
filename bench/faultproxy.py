"""The fault proxy in pass-through mode: what it adds per event, and how much it moves.

Three processes on loopback, so none of them waits for another's GIL: an
upstream that serves SSE (this module's :class:`_Upstream`, a
``railings.testing`` service), ``railings.testing.FaultProxy`` in front of it
with no fault, and this process as a raw-socket client that does almost nothing
but read.

* **Latency**: the upstream sends ``events`` OpenAI-sized events (about 300
  bytes), one per HTTP chunk, ``pace_ms`` apart, each stamped with
  ``time.perf_counter_ns()`` just before it is written (CLOCK_MONOTONIC, one
  clock for every process on Linux). The client notes when each event's blank
  line arrives. The per-event latency is read straight from the upstream and
  through the proxy, three times each, alternating; the proxy's cost is the
  difference of the median p99s.
* **Throughput**: the upstream writes the W1 body in 1-4 KiB chunks as fast as
  it can; the client reads to EOF. MB/s = body bytes / time from the request to
  the last byte, direct and through the proxy (median of ``repeats``).

``make bench`` runs it with no fault. Alone, and with a fault the proxy applies
to every request (one that never fires still takes the event-by-event path)::

    .venv/bin/python bench/faultproxy.py
    .venv/bin/python bench/faultproxy.py --fault duplicate:event=100000000
"""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import socket
import statistics
import time
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["measure"]

_STAMP = re.compile(rb'"t":(\d+)\}\n\n')
_PAD = "x" * 240  # an OpenAI content chunk is about 300 bytes


def _serve_upstream(conn: Connection, bulk_n: int) -> None:
    import workloads

    from railings.testing.http import LAST_CHUNK, encode_chunk, read_request, render_head
    from railings.testing.service import Service

    body_pieces = workloads.pieces(workloads.build("W1", bulk_n).body, "net")

    class _Upstream(Service):
        async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            request = await read_request(reader)
            writer.write(
                render_head(
                    200,
                    [
                        ("content-type", "text/event-stream"),
                        ("transfer-encoding", "chunked"),
                        ("connection", "close"),
                    ],
                )
            )
            if request.path.startswith("/paced/"):
                _, _, n, pace = request.path.split("/")
                for i in range(int(n)):
                    event = f'data: {{"i":{i},"pad":"{_PAD}","t":{time.perf_counter_ns()}}}\n\n'
                    writer.write(encode_chunk(event.encode()))
                    await writer.drain()
                    await asyncio.sleep(float(pace) / 1000)
            else:
                for piece in body_pieces:
                    writer.write(encode_chunk(piece))
                    await writer.drain()
            writer.write(LAST_CHUNK)
            await writer.drain()

    async def main() -> None:
        server = _Upstream()
        await server.start()
        conn.send(server.url)
        await asyncio.Event().wait()

    asyncio.run(main())


def _serve_proxy(conn: Connection, upstream: str, fault: str | None) -> None:
    from railings.testing import FaultProxy

    async def main() -> None:
        proxy = FaultProxy(upstream, fault)
        await proxy.start()
        conn.send(proxy.url)
        await asyncio.Event().wait()

    asyncio.run(main())


def _request(url: str, path: str) -> tuple[socket.socket, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = b"{}"
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock, time.perf_counter_ns()


def _latencies(url: str, events: int, pace_ms: float) -> list[float]:
    """Milliseconds from each event's stamp to the arrival of its blank line."""
    sock, _ = _request(url, f"/paced/{events}/{pace_ms:g}")
    out: list[float] = []
    rest = b""
    with sock:
        while data := sock.recv(65536):
            now = time.perf_counter_ns()
            rest += data
            end = 0
            for m in _STAMP.finditer(rest):
                out.append((now - int(m.group(1))) / 1e6)
                end = m.end()
            rest = rest[end:]
    return out


def _throughput(url: str) -> float:
    """Seconds from the request to the last byte of the bulk body."""
    sock, started = _request(url, "/bulk")
    with sock:
        while sock.recv(262144):
            pass
    return (time.perf_counter_ns() - started) / 1e9


def _cpu(pid: int | None) -> float:
    """CPU seconds of a process's main thread, the one the proxy runs on (Linux
    ``/proc/PID/schedstat``, nanoseconds; NaN elsewhere)."""
    try:
        with open(f"/proc/{pid}/schedstat") as stat:
            return int(stat.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return float("nan")


def _quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": statistics.median(ordered),
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "max_ms": ordered[-1],
    }


def measure(
    events: int, pace_ms: float, bulk_n: int, repeats: int, fault: str | None = None
) -> dict[str, Any]:
    """Run both measurements; ``{"error": ...}`` when the test kit is not importable."""
    try:
        from railings.testing import FaultProxy, ScriptedServer  # noqa: F401
    except ImportError as exc:
        return {"error": f"railings.testing not importable: {exc}"}
    import workloads

    body_bytes = len(workloads.build("W1", bulk_n).body)
    ctx = multiprocessing.get_context("spawn")
    up_recv, up_send = ctx.Pipe(duplex=False)
    upstream = ctx.Process(target=_serve_upstream, args=(up_send, bulk_n), daemon=True)
    upstream.start()
    proxy: multiprocessing.process.BaseProcess | None = None
    try:
        upstream_url = up_recv.recv()
        px_recv, px_send = ctx.Pipe(duplex=False)
        proxy = ctx.Process(target=_serve_proxy, args=(px_send, upstream_url, fault), daemon=True)
        proxy.start()
        proxy_url = px_recv.recv()
        _latencies(proxy_url, 50, pace_ms)  # warm both paths
        runs: dict[str, list[dict[str, float]]] = {"direct": [], "proxy": []}
        for _ in range(3):  # alternating, so a busy moment hits both paths
            for label, url in (("direct", upstream_url), ("proxy", proxy_url)):
                got = _latencies(url, events, pace_ms)
                if len(got) != events:
                    return {"error": f"lost events {label}: {len(got)} of {events}"}
                runs[label].append(_quantiles(got))
        times: dict[str, list[float]] = {"direct": [], "proxy": []}
        cpu = 0.0  # the proxy process's CPU seconds over its transfers
        for _ in range(repeats):
            times["direct"].append(_throughput(upstream_url))
            before = _cpu(proxy.pid)
            times["proxy"].append(_throughput(proxy_url))
            cpu += _cpu(proxy.pid) - before
    finally:
        for process in (proxy, upstream):
            if process is not None:
                process.terminate()
                process.join(5)
    # Each quantile: the median of the three runs.
    summary = {
        label: {q: statistics.median(r[q] for r in rs) for q in rs[0]} for label, rs in runs.items()
    }
    lat: dict[str, Any] = {
        "events": events,
        "pace_ms": pace_ms,
        "runs": 3,
        **summary,
        "added_p99_ms": summary["proxy"]["p99_ms"] - summary["direct"]["p99_ms"],
    }
    thr = {
        "body_bytes": body_bytes,
        "repeats": repeats,
        "direct_s": times["direct"],
        "proxy_s": times["proxy"],
        "direct_mb_per_s": body_bytes / 1e6 / statistics.median(times["direct"]),
        "proxy_mb_per_s": body_bytes / 1e6 / statistics.median(times["proxy"]),
        # What the proxy's own CPU allows: the bound on a machine where it has a core.
        "proxy_cpu_s": cpu,
        "proxy_cpu_mb_per_s": body_bytes * repeats / 1e6 / cpu if cpu > 0 else float("nan"),
    }
    return {"latency": lat, "throughput": thr}


def main() -> None:
    import argparse
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))  # workloads, when run alone
    parser = argparse.ArgumentParser(description="The fault proxy's added latency and throughput.")
    parser.add_argument("--fault", help="a fault spec for every request (default: none)")
    parser.add_argument("--events", type=int, default=1000, help="paced events (default 1000)")
    parser.add_argument("--repeats", type=int, default=5, help="bulk transfers (default 5)")
    args = parser.parse_args()
    result = measure(args.events, 1.0, 20_000, args.repeats, args.fault)
    if "error" in result:
        raise SystemExit(result["error"])
    lat, thr = result["latency"], result["throughput"]
    print(
        f"fault {args.fault or 'none'}: added p99 {lat['added_p99_ms']:.3f} ms per event; "
        f"{thr['proxy_mb_per_s']:.1f} MB/s through the proxy, "
        f"{thr['direct_mb_per_s']:.1f} MB/s direct; the proxy's CPU moves "
        f"{thr['proxy_cpu_mb_per_s']:.0f} MB per CPU second"
    )


if __name__ == "__main__":
    main()
