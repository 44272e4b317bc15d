"""Load through ``railings gateway``: N concurrent streams, the latency it adds, its memory.

Usage (from the repository root)::

    make gateway-bench                     # 1,000 streams, about 1 minute (also run by make bench)
    .venv/bin/python bench/gateway.py --streams 200 --events 10 --json
    .venv/bin/python bench/gateway.py --write-docs   # refresh the tables in docs/

Three processes share the machine, so the two cores are shared the way they are in
production: a paced upstream (a minimal asyncio HTTP/1.1 server, its own process),
the gateway (``railings gateway``, journal on, as a user runs it, its own process) and
the load generator (this process: raw asyncio sockets, one connection per stream).
The CPU each one used in the steady window is printed, so a load generator that
became the bottleneck would show. The load generator runs as SCHED_BATCH (Linux):
the same share of the cores, but its wake-ups (one per event the gateway writes) do
not preempt the gateway in the middle of an event (``RAILINGS_BENCH_BATCH=0`` turns
it off). The upstream keeps the normal policy: a batch upstream that waits for a core
sends the events it owes in bursts, and a burst of k events costs its last one k
events of the gateway's CPU.

Every stream through the gateway has a **twin** opened straight at the upstream at
the same moment. The upstream pairs the two (a request header names the pair) and
writes each event to both connections back to back, the direct one first, stamped
with one ``time.monotonic()`` (CLOCK_MONOTONIC is one clock for every process of a
Linux machine). Each copy's arrival is the instant the kernel received it on the
load generator's socket (``SO_TIMESTAMPNS``, brought to the monotonic clock), so the
load generator's own waits for a core are not counted as the gateway's; the instant
the load generator read it is printed beside. The latency the gateway adds to an
event is measured on that event: its arrival through the gateway minus its twin's
arrival direct, under the same load, in the same second.
Streams start evenly over ``--ramp`` seconds (plus up to one interval of jitter);
the figures are taken in the steady window, from the last start to the first end,
when every stream is open at once.

* **failures**: a stream that did not arrive whole (its HTTP status, every event,
  ``[DONE]`` and the chunked end) counts as one; the target is 0.
* **added latency per event**: the percentiles of (through the gateway - direct)
  over the events of the steady window; the target is p99 <= 1 ms.
* **memory per open stream**: the gateway's resident memory with every stream open
  (at the start of the steady window), minus its memory before the run, over N.
* **stalls**: the events past the added p99, grouped by 10 ms gaps: a few groups
  mean a few stalls of the whole gateway (a wait for a core), not a slow event path;
  the machine's CPU pressure (PSI) says how often anything waited for a core.
* **GC**: the gateway process records each garbage collection (``gc.callbacks``, a
  few microseconds per collection); the pauses in the window, and how many of the
  events past the added p99 arrived across one, say how much of the tail is the
  collector's.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import bisect
import datetime
import gc
import importlib.util
import json
import os
import platform
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCS = (ROOT / "docs" / "PERFORMANCE.md", ROOT / "docs" / "GATEWAY.md")
BEGIN, END = "<!-- gateway-bench:begin -->", "<!-- gateway-bench:end -->"
_STAMP = re.compile(rb"t=(\d+\.\d+)")
_PAIR = re.compile(rb"(?i)x-bench-pair:\s*(\d+)")
_DIRECT = re.compile(rb"(?i)x-bench-direct:")
# Linux's SO_TIMESTAMPNS (= SCM_TIMESTAMPNS; the socket module does not name it): each read
# comes with the instant the kernel received its last segment, a struct timespec.
_SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("qq")


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _event(delta: dict[str, str], finish: str | None = None) -> bytes:
    obj = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


# -- the paced upstream (its own process) -------------------------------------------------

_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


class _Upstream:
    """Pairs each stream with its twin (``x-bench-pair``) and paces both at once."""

    def __init__(self, events: int, interval: float) -> None:
        self.events, self.interval = events, interval
        self.waiting: dict[bytes, tuple[asyncio.StreamWriter, asyncio.Future[None]]] = {}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?i)content-length:\s*(\d+)", head)
            if length:
                await reader.readexactly(int(length.group(1)))
            writer.write(_HEAD + _chunk(_event({"role": "assistant", "content": ""})))
            pair = _PAIR.search(head)
            key = pair.group(1) if pair else b"-%d" % id(writer)
            if key in self.waiting or not pair:
                twin, done = self.waiting.pop(key, (None, None))
                writers = [writer] if twin is None else [writer, twin]
                if twin is not None and _DIRECT.search(head) is None:
                    writers.reverse()  # the direct copy is written first: no head start for ours
                await self._pace(writers)
                if done is not None:
                    done.set_result(None)
            else:
                done = asyncio.get_running_loop().create_future()
                self.waiting[key] = (writer, done)
                await asyncio.wait_for(done, 60)  # the twin paces this stream too
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            writer.close()

    async def _pace(self, writers: list[asyncio.StreamWriter]) -> None:
        # Each stream keeps its own schedule, one event every interval from its start: a
        # stall of this process delays the events due meanwhile, and then each stream is
        # back on its schedule. (Sleeping one interval after each write would keep every
        # stream a stall delayed in step with the others ever after, a burst each round.)
        loop = asyncio.get_running_loop()
        start = loop.time()
        for k in range(1, self.events + 1):
            await asyncio.sleep(max(0.0, start + k * self.interval - loop.time()))
            data = _chunk(_event({"content": f"t={time.monotonic():.6f} "}))
            for w in writers:
                w.write(data)
        end = _chunk(_event({}, "stop") + b"data: [DONE]\n\n") + b"0\r\n\r\n"
        for w in writers:
            w.write(end)
        await asyncio.gather(*(w.drain() for w in writers), return_exceptions=True)


def _batch() -> bool:
    """This process as SCHED_BATCH (Linux): its wake-ups no longer preempt the process
    that runs on the core, the gateway included. Its share of the cores is unchanged."""
    if os.environ.get("RAILINGS_BENCH_BATCH", "1") == "0" or not hasattr(os, "SCHED_BATCH"):
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except OSError:
        return False
    return True


async def _upstream_main(port_file: str, events: int, interval: float) -> None:
    upstream = _Upstream(events, interval)
    server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0, backlog=4096)
    Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


def _traced_gateway(trace_file: str, argv: list[str]) -> int:
    """Run ``railings gateway`` in this process, noting every garbage collection."""
    pauses: list[tuple[int, float, float]] = []  # generation, start (monotonic), seconds
    began = [0.0]

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            began[0] = time.monotonic()
        else:
            pauses.append((info["generation"], began[0], time.monotonic() - began[0]))

    gc.callbacks.append(note)
    setting = os.environ.get("RAILINGS_BENCH_GC", "tuned")
    if setting != "tuned":  # --gc: compare the gateway's tuning with another
        import railings.gateway.serve as serve

        tune = serve.tune_gc
        threshold = tuple(int(n) for n in setting.split(",")) if setting != "off" else None

        def retuned(_: object = None) -> None:
            if threshold is not None:
                tune((threshold[0], threshold[1], threshold[2]))

        serve.tune_gc = retuned  # type: ignore[assignment]
    atexit.register(lambda: Path(trace_file).write_text(json.dumps(pauses)))
    from railings.cli import main

    return main(["gateway", *argv])


# -- the load generator ---------------------------------------------------------------------


async def _one(
    port: int,
    pair: int,
    events: int,
    arrivals: dict[bytes, tuple[float, float]],
    start: float,
    *,
    direct: bool,
) -> bool:
    """One stream: for each event, when the kernel received it on this socket and when this
    process read it (both on the monotonic clock)."""
    await asyncio.sleep(start)
    loop = asyncio.get_running_loop()
    payload = b'{"model":"bench","messages":[{"role":"user","content":"hi"}],"stream":true}'
    sock = socket.socket()
    sock.setblocking(False)
    sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    data = bytearray()
    seen = 0
    ended: asyncio.Future[None] = loop.create_future()
    # The kernel's stamps are CLOCK_REALTIME: one offset brings them to the monotonic clock.
    offset = time.time() - time.monotonic()

    def readable() -> None:
        nonlocal seen
        try:
            chunk, ancillary, _, _ = sock.recvmsg(65536, 64)
        except BlockingIOError:
            return
        except OSError as exc:
            chunk, ancillary = b"", []
            if not ended.done():
                ended.set_exception(exc)
        now = time.monotonic()
        if not chunk:
            loop.remove_reader(sock)
            if not ended.done():
                ended.set_result(None)
            return
        kernel = now
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
                sec, nsec = _TIMESPEC.unpack_from(value)
                kernel = sec + nsec / 1e9 - offset
        for stamp in _STAMP.findall(chunk):
            arrivals[stamp] = (kernel, now)
            seen += 1
        data.extend(chunk)

    try:
        await loop.sock_connect(sock, ("127.0.0.1", port))
        await loop.sock_sendall(
            sock,
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            b"authorization: Bearer sk-bench-key-0000000000\r\ncontent-type: application/json\r\n"
            b"x-bench-pair: %d\r\n%scontent-length: %d\r\nconnection: close\r\n\r\n%s"
            % (pair, b"x-bench-direct: 1\r\n" if direct else b"", len(payload), payload),
        )
        loop.add_reader(sock, readable)
        await ended
    finally:
        loop.remove_reader(sock)
        sock.close()
    ok = data.startswith(b"HTTP/1.1 200") and b"data: [DONE]" in data
    return ok and seen == events and data.endswith(b"0\r\n\r\n")


def _pressure() -> float:
    """Seconds, since boot, in which some runnable task of this machine waited for a core
    (Linux PSI, ``/proc/pressure/cpu``; NaN without it)."""
    try:
        some = Path("/proc/pressure/cpu").read_text().split("\n")[0]
        return int(some.rsplit("total=", 1)[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return float("nan")


def _waited(pid: int) -> float:
    """Seconds a process's main thread spent runnable but waiting for a core."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return float("nan")  # a kernel without schedstat


def _stat(pid: int) -> tuple[float, int, float]:
    """A process's CPU seconds (user + system), resident KiB, and system CPU seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / tick
    return cpu, int(fields[21]) * os.sysconf("SC_PAGE_SIZE") // 1024, int(fields[12]) / tick


async def _load(
    up_port: int, gw_port: int, streams: int, events: int, interval: float, ramp: float,
    pids: dict[str, int],
) -> dict[str, Any]:  # fmt: skip
    """Open ``streams`` pairs (one stream direct, its twin through the gateway)."""
    direct: list[dict[bytes, tuple[float, float]]] = [{} for _ in range(streams)]
    via: list[dict[bytes, tuple[float, float]]] = [{} for _ in range(streams)]
    began = time.monotonic()
    tasks = []
    for i in range(streams):
        start = ramp * i / streams + random.uniform(0.0, interval)
        tasks.append(asyncio.create_task(_one(up_port, i, events, direct[i], start, direct=True)))
        tasks.append(asyncio.create_task(_one(gw_port, i, events, via[i], start, direct=False)))
    window = (began + ramp + 2 * interval, began + events * interval)
    cpu: dict[str, float] = {}
    system: dict[str, float] = {}
    pressure = float("nan")
    waited: dict[str, float] = {}
    rss_open = 0
    if window[1] > window[0]:
        await asyncio.sleep(window[0] - time.monotonic())
        everyone = {**pids, "load generator": os.getpid()} if pids else {}
        before = {name: (_stat(pid), _waited(pid)) for name, pid in everyone.items()}
        pressure = _pressure()
        rss_open = _stat(pids["gateway"])[1] if pids else 0
        await asyncio.sleep(max(0.0, window[1] - time.monotonic()))
        after = {name: _stat(pid) for name, pid in everyone.items()}
        cpu = {name: after[name][0] - before[name][0][0] for name in everyone}
        system = {name: after[name][2] - before[name][0][2] for name in everyone}
        waited = {name: _waited(pid) - before[name][1] for name, pid in everyone.items()}
        pressure = _pressure() - pressure
    results = await asyncio.gather(*tasks, return_exceptions=True)
    # (sent, direct latency, gateway latency at the kernel's receipt, the same two at the
    # load generator's read), steady window only
    samples = []
    for d, v in zip(direct, via, strict=True):
        for stamp, (kernel, read) in v.items():
            sent = float(stamp)
            if window[0] <= sent <= window[1] and stamp in d:
                twin_kernel, twin_read = d[stamp]
                samples.append(
                    (sent, twin_kernel - sent, kernel - sent, twin_read - sent, read - sent)
                )
    return {
        "failures_direct": sum(1 for r in results[0::2] if r is not True),
        "failures_gateway": sum(1 for r in results[1::2] if r is not True),
        "samples": samples,
        "window": window,
        "cpu": cpu,
        "system": system,
        "pressure": pressure,
        "waited": waited,
        "rss_open": rss_open,
    }


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


def _spawn_gateway(
    upstream: int, journal: str, trace: str, gc_setting: str, network: str
) -> tuple[subprocess.Popen[str], int]:
    argv = ["--upstream", f"http://127.0.0.1:{upstream}", "--port", "0", "--journal", journal]
    argv += ["--network", network]
    proc = subprocess.Popen(
        [sys.executable, __file__, "--traced-gateway", trace, *argv],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RAILINGS_BENCH_GC": gc_setting},
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if not found:
        raise RuntimeError(f"the gateway did not start: {line!r}")
    # Drain its per-turn log lines so a full pipe never stalls it.
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, int(found.group(1))


def _gc_figures(pauses: list[list[float]], run: dict[str, Any], p99: float) -> dict[str, Any]:
    lo, hi = run["window"]
    inside = [(g, s, d) for g, s, d in pauses if lo <= s <= hi]
    spans = sorted((s, s + d) for _, s, d in inside if d >= 0.001)
    starts = [s for s, _ in spans]

    def across(sent: float, lat: float) -> bool:  # a pause of 1 ms or more began in flight
        i = bisect.bisect_right(starts, sent + lat)
        return i > 0 and spans[i - 1][1] >= sent

    tail = [(s, v) for s, d, v, *_ in run["samples"] if v - d >= p99]
    sent = sorted(s for s, _ in tail)
    # Tail events sent within 10 ms of each other were held up by one stall of the gateway.
    bursts = sum(1 for i, s in enumerate(sent) if i == 0 or s - sent[i - 1] > 0.010)
    return {
        "tail_bursts": bursts,
        "gc_collections": {f"gen{g}": sum(1 for x in inside if x[0] == g) for g in (0, 1, 2)},
        "gc_pause_total_ms": sum(d for _, _, d in inside) * 1e3,
        "gc_pause_max_ms": max((d for _, _, d in inside), default=0.0) * 1e3,
        "tail_events_across_gc": f"{sum(1 for s, v in tail if across(s, v))} of {len(tail)}",
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """One measured run: the figures as a dict."""
    load_before = os.getloadavg()[0]
    upstream, up_port = _spawn_upstream(args.events, args.interval)
    tmp = tempfile.mkdtemp(prefix="gw-bench-")
    trace = tmp + "/gc.json"
    try:
        gateway, gw_port = _spawn_gateway(
            up_port, tmp + "/journal.sqlite3", trace, args.gc, args.network
        )
        batch = _batch()  # after the gateway started: it keeps the normal policy
        try:
            asyncio.run(_load(up_port, gw_port, 20, 2, 0.01, 0.1, {}))  # warm up
            idle = _stat(gateway.pid)[1]
            pids = {"gateway": gateway.pid, "upstream": upstream.pid}
            load = (args.streams, args.events, args.interval, args.ramp, pids)
            result = asyncio.run(_load(up_port, gw_port, *load))
        finally:
            gateway.terminate()
            gateway.wait(30)
    finally:
        upstream.terminate()
        upstream.wait(30)
    pauses = json.loads(Path(trace).read_text()) if os.path.exists(trace) else []
    shutil.rmtree(tmp, ignore_errors=True)
    samples = result["samples"]
    if args.samples:
        args.samples.write_text(json.dumps({"samples": samples, "pauses": pauses}))
    d = [x[1] * 1e3 for x in samples]
    v = [x[2] * 1e3 for x in samples]
    added = [b - a for a, b in zip(d, v, strict=True)]
    added_read = [(x[4] - x[3]) * 1e3 for x in samples]
    seconds = result["window"][1] - result["window"][0]
    figures: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average {load_before:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end",
        "gc": args.gc,
        "harness_batch": batch,
        "server": "uvicorn, "
        + ("uvloop" if importlib.util.find_spec("uvloop") else "asyncio")
        + " + "
        + ("httptools" if importlib.util.find_spec("httptools") else "h11"),
        "streams": args.streams,
        "events_per_stream": args.events,
        "interval_s": args.interval,
        "failures_gateway": result["failures_gateway"],
        "failures_direct": result["failures_direct"],
        "events_steady": len(samples),
        "direct_p50_ms": _pct(d, 0.5),
        "direct_p99_ms": _pct(d, 0.99),
        "gateway_p50_ms": _pct(v, 0.5),
        "gateway_p99_ms": _pct(v, 0.99),
        "ratio_p50": _pct(v, 0.5) / _pct(d, 0.5) if d else float("nan"),
        "ratio_p99": _pct(v, 0.99) / _pct(d, 0.99) if d else float("nan"),
        "added_p50_ms": _pct(added, 0.5),
        "added_p99_ms": _pct(added, 0.99),
        "added_p999_ms": _pct(added, 0.999),
        "added_max_ms": max(added, default=float("nan")),
        "direct_read_p99_ms": _pct([x[3] * 1e3 for x in samples], 0.99),
        "gateway_read_p99_ms": _pct([x[4] * 1e3 for x in samples], 0.99),
        "added_read_p50_ms": _pct(added_read, 0.5),
        "added_read_p99_ms": _pct(added_read, 0.99),
        "rss_idle_mib": idle / 1024,
        "rss_open_mib": result["rss_open"] / 1024,
        "kib_per_open_stream": (result["rss_open"] - idle) / args.streams,
        "gateway_cpu_us_per_event": result["cpu"].get("gateway", 0) / max(1, len(v)) * 1e6,
        "gateway_system_us_per_event": result["system"].get("gateway", 0) / max(1, len(v)) * 1e6,
        "cpu_share": {k: round(c / seconds, 3) for k, c in result["cpu"].items()},
        "waited_for_a_core_ms": {k: round(w * 1e3) for k, w in result["waited"].items()},
        "machine_cpu_pressure": result["pressure"] / seconds,
    }
    figures.update(_gc_figures(pauses, result, _pct(added, 0.99) / 1e3))
    return figures


def table(f: dict[str, Any], command: str) -> str:
    """The figures as the Markdown block of the docs."""
    cpu = ", ".join(f"{k} {v * 100:.0f}%" for k, v in f["cpu_share"].items())
    waited = ", ".join(f"{k} {v:,} ms" for k, v in f["waited_for_a_core_ms"].items())
    gcs = ", ".join(f"{n} {k}" for k, n in f["gc_collections"].items())
    rows = [
        ("concurrent streams through the gateway (+ as many direct twins)", f"{f['streams']:,}"),
        ("failures, gateway / direct", f"{f['failures_gateway']} / {f['failures_direct']}"),
        ("events in the steady window", f"{f['events_steady']:,}"),
        (
            "event latency p50 at the client's socket, direct → gateway",
            f"{f['direct_p50_ms']:.2f} → {f['gateway_p50_ms']:.2f} ms ({f['ratio_p50']:.1f}x)",
        ),
        (
            "event latency p99 at the client's socket, direct → gateway",
            f"{f['direct_p99_ms']:.2f} → {f['gateway_p99_ms']:.2f} ms ({f['ratio_p99']:.1f}x)",
        ),
        (
            "**added latency per event** p50 / p99 (target ≤ 1 ms)",
            f"**{f['added_p50_ms']:.2f} / {f['added_p99_ms']:.2f} ms**",
        ),
        ("added latency p99.9 / max", f"{f['added_p999_ms']:.1f} / {f['added_max_ms']:.1f} ms"),
        (
            "added latency p50 / p99 at the load generator's read (its own waits included)",
            f"{f['added_read_p50_ms']:.2f} / {f['added_read_p99_ms']:.2f} ms",
        ),
        (
            "events past the added p99: stalls they came in (10 ms apart)",
            f"{f['tail_bursts']}",
        ),
        (
            "gateway resident memory, idle → all open",
            f"{f['rss_idle_mib']:.0f} → {f['rss_open_mib']:.0f} MiB",
        ),
        ("**memory per open stream**", f"**{f['kib_per_open_stream']:.0f} KiB**"),
        (
            "gateway CPU per event (of it in the kernel)",
            f"{f['gateway_cpu_us_per_event']:.0f} µs ({f['gateway_system_us_per_event']:.0f} µs)",
        ),
        ("CPU in the window (of one core)", cpu),
        ("time runnable but waiting for a core, in the window", waited),
        (
            "the machine's CPU pressure in the window (PSI: some task waiting for a core)",
            f"{f['machine_cpu_pressure'] * 100:.0f}% of the time",
        ),
        (
            "gateway GC in the window: collections; pause total / max",
            f"{gcs}; {f['gc_pause_total_ms']:.0f} / {f['gc_pause_max_ms']:.1f} ms",
        ),
        ("events past the added p99 that arrived across a GC pause", f["tail_events_across_gc"]),
    ]
    head = (
        f"Generated by `{command}` on {f['date']}: {f['machine']}; {f['server']}; "
        f"{f['events_per_stream']} events per stream, {f['interval_s']} s apart.\n\n"
    )
    body = "| figure | measured |\n|---|---|\n" + "".join(f"| {a} | {b} |\n" for a, b in rows)
    return head + body


def write_docs(block: str) -> None:
    """Replace the generated block of each doc that has one."""
    for doc in DOCS:
        text = doc.read_text()
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            doc.write_text(head + BEGIN + "\n\n" + block + "\n" + END + rest.split(END, 1)[1])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--traced-gateway"]:
        return _traced_gateway(argv[1], argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--streams", type=int, default=1000)
    p.add_argument("--events", type=int, default=40, help="content events per stream")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between events")
    p.add_argument("--ramp", type=float, default=5.0, help="seconds over which streams start")
    p.add_argument(
        "--gc",
        default="tuned",
        metavar="tuned|off|A,B,C",
        help="the gateway's collector: as `railings gateway` tunes it (default), CPython's "
        "defaults without the freeze (off), or gc.freeze() and these thresholds",
    )
    p.add_argument(
        "--network",
        choices=("stock", "asyncio"),
        default="stock",
        help="the gateway's upstream backend (`railings gateway --network`)",
    )
    p.add_argument("--samples", type=Path, help="save every event's timings (JSON) here")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument("--write-docs", action="store_true", help="replace the block in docs/")
    p.add_argument("--docs-from", type=Path, help="write the docs' block from a saved --json run")
    p.add_argument("--upstream-only", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.docs_from:
        saved = json.loads(args.docs_from.read_text())
        write_docs(table(saved, saved.get("command", "bench/gateway.py")))
        return 0
    if args.upstream_only:
        port_file, events, interval = args.upstream_only
        asyncio.run(_upstream_main(port_file, int(events), float(interval)))
        return 0
    figures = run(args)
    figures["command"] = " ".join(["bench/gateway.py", *argv])
    if args.json:
        print(json.dumps(figures))
    else:
        print("\nrailings gateway under load (bench/gateway.py)")
        for key, value in figures.items():
            text = f"{value:.3f}" if isinstance(value, float) else str(value)
            print(f"{key:>26}: {text}")
    if args.write_docs:
        write_docs(table(figures, figures["command"]))
    return 0 if figures["failures_gateway"] == 0 and figures["failures_direct"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
