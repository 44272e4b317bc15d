"""Load through ``railings gateway``: N concurrent streams, the latency it adds, its memory.

Usage (from the repository root)::

    make gateway-bench                                   # 1,000 streams, about 1 minute
    .venv/bin/python bench/gateway.py --streams 200 --events 10 --json

Three processes share the machine: a paced upstream (a minimal asyncio HTTP/1.1
server, so the upstream is never the bottleneck), the gateway (``railings gateway``,
journal on, as a user runs it) and the load generator (raw asyncio sockets, one
connection per stream). Streams start evenly over ``--ramp`` seconds (plus up to one
interval of jitter), so that in the steady window, from the last start to the first
end, every stream is open at once; the figures are taken there. Each upstream event
carries the upstream's
``time.monotonic()`` at the moment it was written (CLOCK_MONOTONIC is one clock for
every process of a Linux machine); the client subtracts it from the arrival time.

* **failures**: a stream that did not arrive whole (its HTTP status, every event,
  ``[DONE]`` and the chunked end) counts as one; the target is 0.
* **added latency per event**: the same load is run straight at the upstream first
  (the baseline: the kernel and the load generator's own delays) and then through
  the gateway; the added p50 / p99 is the gateway's minus the baseline's.
* **memory per open stream**: the gateway's resident memory with every stream open
  (at the start of the steady window), minus its memory before the run, over N.
* **CPU per event**: the gateway process's user + system time over the steady window,
  over the events that arrived in it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RAILINGS = str(Path(sys.executable).with_name("railings"))
_STAMP = re.compile(rb"t=(\d+\.\d+)")


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _event(content: str | None, finish: str | None = None) -> bytes:
    delta = {"content": content} if content is not None else {}
    obj = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


# -- the paced upstream (its own process) -------------------------------------------------


async def _upstream_handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, events: int, interval: float
) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?i)content-length:\s*(\d+)", head)
        if length:
            await reader.readexactly(int(length.group(1)))
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n" + _chunk(_role())
        )
        for _ in range(events):
            await asyncio.sleep(interval)
            writer.write(_chunk(_event(f"t={time.monotonic():.6f} ")))
        writer.write(_chunk(_event(None, "stop") + b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


def _role() -> bytes:
    obj = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
    }
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


async def _upstream_main(port_file: str, events: int, interval: float) -> None:
    server = await asyncio.start_server(
        lambda r, w: _upstream_handle(r, w, events, interval), "127.0.0.1", 0, backlog=4096
    )
    Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


# -- the load generator ---------------------------------------------------------------------


async def _one(
    port: int, events: int, latencies: list[tuple[float, float]], start: float, jitter: float
) -> bool:
    await asyncio.sleep(start + random.uniform(0.0, jitter))
    payload = b'{"model":"bench","messages":[{"role":"user","content":"hi"}],"stream":true}'
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        b"authorization: Bearer sk-bench-key-0000000000\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(payload), payload)
    )
    await writer.drain()
    data = bytearray()
    seen = 0
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            now = time.monotonic()
            for stamp in _STAMP.findall(chunk):
                sent = float(stamp)
                latencies.append((sent, now - sent))
                seen += 1
            data += chunk
    finally:
        writer.close()
    ok = data.startswith(b"HTTP/1.1 200") and b"data: [DONE]" in data
    return ok and seen == events and data.endswith(b"0\r\n\r\n")


async def _load(
    port: int, streams: int, events: int, interval: float, ramp: float, pid: int | None
) -> dict[str, object]:
    """Open ``streams`` streams, started evenly over ``ramp`` seconds (plus up to one
    interval of jitter: independent clients never send in lockstep). The steady window
    runs from the last start to the first end: every stream open at once."""
    latencies: list[tuple[float, float]] = []
    began = time.monotonic()
    tasks = [
        asyncio.create_task(_one(port, events, latencies, ramp * i / streams, interval))
        for i in range(streams)
    ]
    window = (began + ramp + interval, began + events * interval)
    samples: dict[str, float] = {}
    if pid is not None and window[1] > window[0]:
        await asyncio.sleep(window[0] - time.monotonic())
        samples["cpu0"], samples["rss0"] = _cpu_seconds(pid), _rss_kib(pid)
        await asyncio.sleep(max(0.0, window[1] - time.monotonic()))
        samples["cpu1"], samples["rss1"] = _cpu_seconds(pid), _rss_kib(pid)
    results = await asyncio.gather(*tasks, return_exceptions=True)
    steady = [lat for sent, lat in latencies if window[0] <= sent <= window[1]]
    return {
        "failures": sum(1 for r in results if r is not True),
        "all": [lat for _, lat in latencies],
        "steady": steady,
        "samples": samples,
    }


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _spawn_upstream(events: int, interval: float) -> tuple[subprocess.Popen[bytes], int]:
    port_file = tempfile.mktemp(prefix="gw-bench-port-")
    proc = subprocess.Popen(
        [sys.executable, __file__, "--upstream-only", port_file, str(events), str(interval)]
    )
    for _ in range(600):
        if os.path.exists(port_file) and Path(port_file).read_text():
            port = int(Path(port_file).read_text())
            os.unlink(port_file)
            return proc, port
        time.sleep(0.05)
    raise RuntimeError("the bench upstream did not start")


def _spawn_gateway(upstream: int, journal: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [
            RAILINGS,
            "gateway",
            "--upstream",
            f"http://127.0.0.1:{upstream}",
            "--port",
            "0",
            "--journal",
            journal,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if not found:
        raise RuntimeError(f"the gateway did not start: {line!r}")
    # Drain its per-turn log lines so a full pipe never stalls it.
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--streams", type=int, default=1000)
    p.add_argument("--events", type=int, default=40, help="content events per stream")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between events")
    p.add_argument("--ramp", type=float, default=5.0, help="seconds over which streams start")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument("--upstream-only", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.upstream_only:
        port_file, events, interval = args.upstream_only
        asyncio.run(_upstream_main(port_file, int(events), float(interval)))
        return 0
    upstream, up_port = _spawn_upstream(args.events, args.interval)
    journal = tempfile.mkdtemp(prefix="gw-bench-") + "/journal.sqlite3"
    load = (args.streams, args.events, args.interval, args.ramp)
    try:
        direct = asyncio.run(_load(up_port, *load, None))
        gateway, gw_port = _spawn_gateway(up_port, journal)
        try:
            asyncio.run(_load(gw_port, 20, args.events, 0.01, 0.1, None))  # warm up
            idle = _rss_kib(gateway.pid)
            via = asyncio.run(_load(gw_port, *load, gateway.pid))
        finally:
            gateway.terminate()
            gateway.wait(30)
    finally:
        upstream.terminate()
        upstream.wait(30)
    d, v = direct["steady"], via["steady"]
    s = via["samples"]
    assert isinstance(d, list) and isinstance(v, list) and isinstance(s, dict)
    window_events = len(v)
    figures = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "streams": args.streams,
        "events_per_stream": args.events,
        "interval_s": args.interval,
        "ramp_s": args.ramp,
        "failures_direct": direct["failures"],
        "failures_gateway": via["failures"],
        "events_steady": window_events,
        "direct_p50_ms": statistics.median(d) * 1e3,
        "direct_p99_ms": _pct(d, 0.99) * 1e3,
        "gateway_p50_ms": statistics.median(v) * 1e3,
        "gateway_p99_ms": _pct(v, 0.99) * 1e3,
        "added_p50_ms": (statistics.median(v) - statistics.median(d)) * 1e3,
        "added_p99_ms": (_pct(v, 0.99) - _pct(d, 0.99)) * 1e3,
        "rss_idle_mib": idle / 1024,
        "rss_open_mib": s["rss0"] / 1024,
        "kib_per_open_stream": (s["rss0"] - idle) / args.streams,
        "gateway_cpu_us_per_event": (s["cpu1"] - s["cpu0"]) / max(1, window_events) * 1e6,
    }
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            text = f"{value:.3f}" if isinstance(value, float) else str(value)
            print(f"{key:>26}: {text}")
    return 0 if via["failures"] == 0 and direct["failures"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
