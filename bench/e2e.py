"""End to end over loopback: N concurrent streams through each client, events per CPU second.

Usage (from the repository root)::

    make e2e-bench                              # about 90 s (also run by make bench)
    .venv/bin/python bench/e2e.py --quick       # about 30 s: shorter streams, one round
    .venv/bin/python bench/e2e.py --profile     # + where the load process spends its time
    .venv/bin/python bench/e2e.py --write-docs  # refresh the block in docs/PERFORMANCE.md

Two processes share the machine: a minimal keep-alive HTTP/1.1 server
(``bench/_e2e_server.py``: one SSE event per HTTP chunk, chunked transfer encoding,
each chunk written on its own as the providers flush them) and the load process
(``bench/_e2e_load.py``: one asyncio loop, one client object of each kind kept warm
for the whole run). Each round opens N streams at once through one client and
reads them all to the end; a stream counts only if the client got out of it
exactly the text the server sent.

* **events per CPU second**: the SSE events the server sent, over the CPU time of
  the load process in the round (user + system, every thread). CPU time is what a
  client costs, and it holds on a shared machine where wall time does not; the
  wall-clock rate is printed beside it.
* **x SDK**: the official SDK's CPU per event over the client's (``openai`` on W1,
  ``anthropic`` on W3), both the median of the same interleaved rounds (the order
  rotates each round); the wall-clock ratio beside it.
* **failures**: streams that raised or got the wrong text, summed over the rounds.

The targets: railings' ``AsyncProviderClient`` at >= 10x the openai SDK's events per
second at 100 concurrent streams, and 1,000 concurrent streams with 0 failures.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # workloads, the helpers

import _e2e_load
import _e2e_server

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "PERFORMANCE.md"
RESULTS = ROOT / "bench" / "results"
BEGIN, END = "<!-- e2e-bench:begin -->", "<!-- e2e-bench:end -->"
TARGET_RATIO = 10.0
# How each client shows in the tables (bench/_e2e_load.py says what each one runs).
_LABEL = {
    "railings": "railings, OpenAI W1",
    "openai": "openai SDK, W1",
    "httpx2": "httpx2 bytes, W1",
    "railings-anthropic": "railings, Anthropic W3",
    "anthropic": "anthropic SDK, W3",
}
_PACKAGES = ("railings", "httpx2", "httpcore2", "h11", "anyio", "openai", "anthropic", "pydantic")


def _available(names: list[str]) -> list[str]:
    """The clients whose package is installed (the SDKs are the ``bench`` extra's)."""
    import importlib.util

    need = {"openai": "openai", "anthropic": "anthropic"}
    return [n for n in names if n not in need or importlib.util.find_spec(need[n]) is not None]


class _Processes:
    """The server and the load process, each started with ``spawn``."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._control, theirs = ctx.Pipe()
        self.server = ctx.Process(target=_e2e_server.serve, args=(theirs,), daemon=True)
        self.server.start()
        self.url: str = self._control.recv()
        self._jobs, theirs = ctx.Pipe()
        self.load = ctx.Process(target=_e2e_load.load, args=(theirs, self.url), daemon=True)
        self.load.start()

    def serve(self, n: int) -> None:
        """From now on the server answers with ``n`` content chunks."""
        self._control.send(n)
        assert self._control.recv() == n

    def round(self, client: str, streams: int, n: int, profile: bool = False) -> dict[str, Any]:
        self._jobs.send((client, streams, n, profile))
        figures: dict[str, Any] = self._jobs.recv()
        return figures

    def close(self) -> None:
        self._jobs.send(None)
        self.load.join(60)
        for process in (self.load, self.server):
            if process.is_alive():
                process.terminate()
                process.join(10)


def _phase(
    procs: _Processes, clients: list[str], streams: int, n: int, rounds: int, say: Any
) -> dict[str, Any]:
    """``rounds`` interleaved rounds of every client at ``streams`` concurrent streams."""
    procs.serve(n)
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in clients}
    for r in range(rounds):
        order = clients[r % len(clients) :] + clients[: r % len(clients)]
        for client in order:
            got = procs.round(client, streams, n)
            runs[client].append(got)
            say(
                f"{streams} streams, round {r + 1}/{rounds}: {client} "
                f"{got['cpu_s'] / got['events'] * 1e6:.1f} µs CPU/event, "
                f"{got['failures']} failures"
            )
    out: dict[str, Any] = {}
    for client, got in runs.items():
        per_event = statistics.median(g["cpu_s"] / g["events"] for g in got)
        wall_rate = statistics.median(g["events"] / g["wall_s"] for g in got)
        out[client] = {
            "rounds": len(got),
            "events_per_round": got[0]["events"],
            "cpu_us_per_event": per_event * 1e6,
            "events_per_cpu_s": 1 / per_event,
            "events_per_wall_s": wall_rate,
            "cpu_share": statistics.median(g["cpu_s"] / g["wall_s"] for g in got),
            "failures": sum(g["failures"] for g in got),
            "error": next((g["error"] for g in got if g["error"]), None),
            "samples": [{k: g[k] for k in ("cpu_s", "wall_s", "events", "failures")} for g in got],
        }
    for client, figures in out.items():
        # Against the official SDK of the same wire: openai on W1, anthropic on W3.
        base = out.get("openai" if _e2e_load.WIRE[client] == "W1" else "anthropic")
        figures["x_sdk"] = base["cpu_us_per_event"] / figures["cpu_us_per_event"] if base else None
        figures["x_sdk_wall"] = (
            figures["events_per_wall_s"] / base["events_per_wall_s"] if base else None
        )
    return {"streams": streams, "n": n, "clients": out}


def _targets(phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    at = {p["streams"]: p["clients"] for p in phases}
    out = []
    ratio = at.get(100, {}).get("railings", {}).get("x_sdk")
    out.append(
        {
            "id": "T9",
            "text": "railings >=10x openai events/s at 100 streams",
            "measured": ratio,
            "limit": f">= {TARGET_RATIO:g}x",
            "passed": None if ratio is None else ratio >= TARGET_RATIO,
            "shown": "not measured" if ratio is None else f"{ratio:.1f}x",
        }
    )
    big = at.get(1000, {}).get("railings")
    failures = None if big is None else big["failures"]
    out.append(
        {
            "id": "T9",
            "text": "1,000 concurrent streams, 0 failures",
            "measured": failures,
            "limit": "0",
            "passed": None if failures is None else failures == 0,
            "shown": "not measured"
            if failures is None
            else f"{failures} of {big['rounds'] * 1000:,} streams",
        }
    )
    return out


def _environment() -> dict[str, Any]:
    versions = {}
    for name in ("railings", "httpx2", "httpcore2", "h11", "anyio", "openai", "anthropic"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.2f} at the start",
        "versions": versions,
    }


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value / 1000:,.1f}k"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}x"


def _rows(phases: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    rows = []
    for phase in phases:
        for client, f in phase["clients"].items():
            rows.append(
                (
                    f"{phase['streams']:,}",
                    _LABEL[client],
                    f"{f['events_per_round']:,}",
                    f"{f['cpu_us_per_event']:.1f}",
                    _rate(f["events_per_cpu_s"]),
                    _rate(f["events_per_wall_s"]),
                    _x(f["x_sdk"]),
                    _x(f["x_sdk_wall"]),
                    str(f["failures"]),
                )
            )
    return rows


_HEADS = (
    "streams",
    "client",
    "events/round",
    "CPU µs/event",
    "events/CPU s",
    "events/wall s",
    "x SDK (CPU)",
    "x SDK (wall)",
    "failures",
)


def _print(console: Any, result: dict[str, Any]) -> None:
    from rich.table import Table

    t = Table(title="end to end over loopback (bench/e2e.py)", title_justify="left")
    for head in _HEADS:
        t.add_column(head, justify="left" if head in ("client", "streams") else "right")
    for row in _rows(result["phases"]):
        t.add_row(*row)
    console.print(t)
    for phase in result["phases"]:
        for client, f in phase["clients"].items():
            if f["error"]:
                console.print(f"[red]{client} at {phase['streams']}: {f['error']}[/red]")
    if result.get("profile"):
        t = Table(title="load process, µs of own CPU per event (cProfile)", title_justify="left")
        t.add_column("client")
        for name in (*_PACKAGES, "asyncio", "other"):
            t.add_column(name, justify="right")
        for client, prof in result["profile"].items():
            per = prof["packages_us_per_event"]
            other = sum(v for k, v in per.items() if k not in (*_PACKAGES, "asyncio"))
            cells = [f"{per.get(k, 0.0):.1f}" for k in (*_PACKAGES, "asyncio")]
            t.add_row(client, *cells, f"{other:.1f}")
        console.print(t)
    t = Table(title="targets", title_justify="left")
    for head in ("id", "target", "measured", "limit", "result"):
        t.add_column(head)
    for g in result["targets"]:
        verdict = {True: "[green]PASS[/green]", False: "[red]FAIL[/red]", None: "n/a"}
        t.add_row(g["id"], g["text"], g["shown"], g["limit"], verdict[g["passed"]])
    console.print(t)


def markdown(result: dict[str, Any]) -> str:
    """The generated block of docs/PERFORMANCE.md."""
    env = result["environment"]
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items() if v)
    phases = "; ".join(
        f"{p['streams']:,} streams x W1/W3 at {p['n']:,} content chunks, "
        f"{p['rounds']} round{'s' if p['rounds'] > 1 else ''}"
        for p in result["plan"]
    )
    out = [
        f"Generated by `{result['command']}` on {env['date']}: {env['machine']}; {versions}. "
        f"{phases}; medians of interleaved rounds.",
        "",
        "| " + " | ".join(_HEADS) + " |",
        "|" + "|".join("---" if h in ("client", "streams") else "---:" for h in _HEADS) + "|",
    ]
    out += ["| " + " | ".join(row) + " |" for row in _rows(result["phases"])]
    out += ["", "| id | target | measured | limit | result |", "|---|---|---:|---:|---|"]
    for g in result["targets"]:
        verdict = {True: "PASS", False: "**FAIL**", None: "n/a"}[g["passed"]]
        out.append(f"| {g['id']} | {g['text']} | {g['shown']} | {g['limit']} | {verdict} |")
    if result.get("profile"):
        out += [
            "",
            "Own CPU per event in the load process by package (cProfile, one round at "
            "100 streams; the profiler inflates every figure, the proportions hold):",
            "",
            "| client | " + " | ".join((*_PACKAGES, "asyncio", "other")) + " |",
            "|---|" + "---:|" * (len(_PACKAGES) + 2),
        ]
        for client, prof in result["profile"].items():
            per = prof["packages_us_per_event"]
            other = sum(v for k, v in per.items() if k not in (*_PACKAGES, "asyncio"))
            cells = " | ".join(f"{per.get(k, 0.0):.1f}" for k in (*_PACKAGES, "asyncio"))
            out.append(f"| {client} | {cells} | {other:.1f} |")
    return "\n".join(out) + "\n"


def write_docs(block: str) -> None:
    """Replace the generated block of docs/PERFORMANCE.md."""
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC.relative_to(ROOT)} has no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    DOC.write_text(head + BEGIN + "\n\n" + block + "\n" + END + rest.split(END, 1)[1])


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller streams, fewer rounds")
    p.add_argument("--rounds", type=int, help="rounds at 100 streams (default 3; quick 1)")
    p.add_argument("--n", type=int, help="content chunks per stream at 100 streams (500)")
    p.add_argument("--n-1000", type=int, help="content chunks per stream at 1,000 streams (30)")
    p.add_argument("--clients", help=f"comma-separated, of {','.join(_e2e_load.CLIENTS)}")
    p.add_argument("--profile", action="store_true", help="one profiled round per client")
    p.add_argument("--json", type=Path, default=RESULTS / "e2e.json", help="where to save")
    p.add_argument("--write-docs", action="store_true", help="replace the block in docs/")
    args = p.parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 150)
    started = time.perf_counter()

    def say(message: str) -> None:
        console.print(f"[dim]{time.perf_counter() - started:6.1f}s  {message}[/dim]")

    clients = _available(args.clients.split(",") if args.clients else list(_e2e_load.CLIENTS))
    rounds = args.rounds or (1 if args.quick else 3)
    plan = [
        {"streams": 100, "n": args.n or (100 if args.quick else 500), "rounds": rounds},
        {"streams": 1000, "n": args.n_1000 or (20 if args.quick else 30), "rounds": 1},
    ]
    env = _environment()
    procs = _Processes()
    try:
        procs.serve(1)
        for client in clients:  # warm: imports done, 100 connections open in each pool
            procs.round(client, 100, 1)
        say(f"server at {procs.url}; clients {', '.join(clients)} warm")
        phases = [_phase(procs, clients, s["streams"], s["n"], s["rounds"], say) for s in plan]
        profile = {}
        if args.profile:
            procs.serve(plan[0]["n"])
            for client in clients:
                profile[client] = procs.round(client, 100, plan[0]["n"], profile=True)["profile"]
            say("profiled")
    finally:
        procs.close()
    command = "bench/e2e.py" + (" " + " ".join(argv) if argv else "")
    result = {
        "command": command,
        "environment": env,
        "elapsed_s": time.perf_counter() - started,
        "plan": plan,
        "phases": phases,
        "profile": profile,
    }
    result["targets"] = _targets(phases)
    _print(console, result)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, default=str))
    console.print(f"elapsed {result['elapsed_s']:.0f} s; JSON in {args.json}")
    if args.write_docs:
        write_docs(markdown(result))
        console.print(f"wrote {DOC.relative_to(ROOT)}")
    failed = any(f["failures"] for ph in phases for f in ph["clients"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
