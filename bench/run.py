"""railings benchmark: the same bytes through railings, the official SDKs, httpx-sse and the floor.

Usage (from the repository root)::

    make bench                               # default: about 4 minutes on 2 cores
    make bench BENCH_ARGS=--quick            # under a minute: bodies at 1/4 size, fewer runs
    .venv/bin/python bench/run.py --write-docs   # also refresh docs/PERFORMANCE.md
    .venv/bin/python bench/run.py --profile      # add the per-layer account and cProfile

See ``docs/PERFORMANCE.md`` for what is measured and why; the modules here say
how: :mod:`workloads` (the bodies), :mod:`consumers` (who reads them),
:mod:`measure` (timing and memory), :mod:`report` (tables and targets),
:mod:`sdk_consumers` and :mod:`feeds` (beside :mod:`consumers`),
:mod:`faultproxy` and :mod:`profiling`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import consumers as C  # noqa: E402
import faultproxy  # noqa: E402
import measure as M  # noqa: E402
import report as R  # noqa: E402
import workloads as W  # noqa: E402

RESULTS = BENCH / "results"
DOC = ROOT / "docs" / "PERFORMANCE.md"
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
FULL_N = 20_000


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="bodies at 1/4 size (5k events; 1.25k/2.5k/5k growth), SDKs run once",
    )
    p.add_argument("--rounds", type=int, help="timing rounds (default 5)")
    p.add_argument(
        "--full",
        action="store_true",
        help="every consumer at every size in both modes (slow: 10+ minutes)",
    )
    p.add_argument("--consumers", help="comma-separated subset (default: all available)")
    p.add_argument("--workloads", default="W1,W2,W3,W4,W5")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    p.add_argument(
        "--json-backend",
        choices=("auto", "stdlib"),
        default="auto",
        help="stdlib: time railings as if the optional jiter were not installed",
    )
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--no-proxy", action="store_true")
    p.add_argument(
        "--profile",
        action="store_true",
        help="also measure railings per layer and run cProfile on it",
    )
    p.add_argument(
        "--write-docs",
        action="store_true",
        help=f"replace the generated block of {DOC.relative_to(ROOT)}",
    )
    p.add_argument("--json", type=Path, default=RESULTS / "latest.json")
    return p.parse_args(argv)


def _environment() -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for dist in (
        "railings",
        "openai",
        "anthropic",
        "httpx2",
        "httpx",
        "httpx-sse",
        "rich",
        "jiter",
    ):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from railings.wire import _json

    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "versions": versions,
        "json_backend": getattr(_json, "BACKEND", "json"),
    }


HELPERS = {"openai.stream", "anthropic.stream"}
GUARDS = {"openai+guard", "anthropic+guard"}
PROBES = {"httpx2", "httpx2+guard"}  # the guard's own cost
LEAN = {
    "floor",
    "orjson-split",
    "httpx-sse",
    "railings",
    "railings-plain",
    "railings-transport",
    "railings-sync",
}


def _timed_here(
    args: argparse.Namespace, names: set[str], name: str, size: int, n: int, mode: str
) -> set[str]:
    """Which consumers time this case (see docs/PERFORMANCE.md, "Method")."""
    if args.full:
        return names
    if size != n:  # the smaller W2 and W4 sizes: net pieces, no guard
        return names - GUARDS - PROBES if mode == "net" else set()
    if mode == "event":
        if args.quick:
            return names & (LEAN | PROBES)
        return names - HELPERS - (GUARDS if name in ("W2", "W4") else set())
    return names


def _plan(
    args: argparse.Namespace, names: set[str]
) -> tuple[list[M.Case], list[int], dict[str, W.Workload]]:
    """The cases to time, the W2/W4 sizes, and every body by its key."""
    n = FULL_N // 4 if args.quick else FULL_N
    sizes = [n // 4, n // 2, n]
    cases: list[M.Case] = []
    bodies: dict[str, W.Workload] = {}
    for name in args.workloads.split(","):
        for size in sizes if name in ("W2", "W4") else [n]:
            workload = W.build(name, size)
            bodies[workload.key] = workload
            for mode in W.MODES:
                chosen = M.consumers_for(
                    workload.provider, _timed_here(args, names, name, size, n, mode)
                )
                if chosen:
                    cases.append(M.Case(workload, mode, chosen, W.pieces(workload.body, mode)))
    return cases, sizes, bodies


def _memory(
    args: argparse.Namespace, names: set[str], n: int, progress: Any
) -> tuple[dict[tuple[str, str], int], dict[str, W.Workload]]:
    """Every consumer but the guards at ``n // 8`` (the SDKs under tracemalloc are slow);
    the floor, httpx-sse and railings at ``n`` too, for the memory target."""
    small = [W.build(name, n // 8) for name in args.workloads.split(",")]
    full = [W.build(name, n) for name in args.workloads.split(",")]
    everyone = [c for c in C.CONSUMERS if c.name in names and c.group != "guard"]
    out = M.memory_pass(small, everyone, progress)
    lean = [c for c in everyone if c.name in ("floor", "httpx-sse", "railings")]
    out.update(M.memory_pass(full, lean, progress))
    return out, {w.key: w for w in small + full}


# Pairs of runs behind each growth ratio (odd: the median is one of them).
GROWTH_PAIRS = 11


def _growth(cases: list[M.Case], sizes: list[int], clock: str, progress: Any) -> dict[str, float]:
    """W2, W4 -> railings' time at the largest size over its time at the smallest, net
    pieces, the median of pairs run back to back (:func:`measure.growth_pairs`)."""
    by_key = {c.key: c for c in cases}
    out: dict[str, float] = {}
    for name in ("W2", "W4"):
        small = by_key.get(f"{name}@{W.size_label(sizes[0])}/net")
        big = by_key.get(f"{name}@{W.size_label(sizes[-1])}/net")
        if small is None or big is None:
            continue
        for consumer in big.consumers:
            if consumer.name == "railings":
                out[name] = M.growth_pairs(small, big, consumer, GROWTH_PAIRS, clock)
    progress(f"growth measured in {GROWTH_PAIRS} pairs per workload")
    return out


def _use_stdlib_json() -> None:
    """railings' JSON fast path without jiter (the SDKs import jiter, so it cannot be hidden)."""
    from railings.wire import _json

    _json._fast, _json.BACKEND = _json._stdlib_fast(), "json"


def _write_docs(block: str, command: str, env: dict[str, Any], elapsed: float) -> None:
    text = DOC.read_text() if DOC.exists() else f"# Performance\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    v = env["versions"]
    stamp = (
        f"Generated by `{command}` on {datetime.date.today().isoformat()} in "
        f"{elapsed:.0f} s: Python {env['python']}, {env['cpu']} x{env['cpus']} "
        f"(load average {env['load_average'][0]:.2f} at the start), openai {v['openai']}, "
        f"anthropic {v['anthropic']}, httpx-sse {v['httpx-sse']}, "
        f"JSON backend `{env['json_backend']}`. Clock: CPU time of the consuming thread."
    )
    DOC.write_text(f"{head}{BEGIN}\n\n{stamp}\n\n{block}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    args = _args(argv)
    if args.json_backend == "stdlib":
        _use_stdlib_json()
    console = Console(width=None if sys.stdout.isatty() else 150)
    started = time.perf_counter()
    command = "make bench" + (f" BENCH_ARGS='{shlex.join(sys.argv[1:])}'" if sys.argv[1:] else "")
    env = _environment()
    ready = C.available()
    for name, why in ready.items():
        if why:
            console.print(f"[yellow]skipping {name}: {why}[/yellow]")
    names = {n for n, why in ready.items() if not why}
    if args.consumers:
        names &= set(args.consumers.split(","))
    rounds = args.rounds or 5

    def progress(message: str) -> None:
        console.print(f"[dim]{time.perf_counter() - started:6.1f}s  {message}[/dim]")

    cases, sizes, bodies = _plan(args, names)
    progress(
        f"{len(cases)} cases, {sum(len(c.consumers) for c in cases)} (case, consumer) "
        f"pairs, {rounds} rounds"
    )
    small = {
        "openai": W.build("W1", 200),
        "anthropic": W.build("W3", 200),
        "openai-responses": W.build("W5", 200),
    }
    schedule = M.QUICK_RUNS_BY_DURATION if args.quick else M.RUNS_BY_DURATION
    samples = M.timing_rounds(cases, rounds, schedule, small, progress)
    memory: dict[tuple[str, str], int] = {}
    if not args.no_memory:
        memory, more = _memory(args, names, sizes[-1], progress)
        bodies.update(more)
    proxy = None
    if not args.no_proxy:
        proxy = faultproxy.measure(
            events=300 if args.quick else 1000,
            pace_ms=1.0,
            bulk_n=sizes[-1],
            repeats=3 if args.quick else 5,
        )
        progress(proxy.get("error", "fault proxy measured"))
    layers = None
    if args.profile:
        import profiling

        layers = profiling.run(sizes[-1], RESULTS, console)
        progress("profile done")

    table = R.rows(cases, samples, args.clock)
    grow = R.growth(table, tuple(w for w in ("W2", "W4") if w in args.workloads), sizes, "net")
    memory_rows = [
        {
            "workload": key,
            "n": bodies[key].n,
            "body_bytes": len(bodies[key].body),
            "consumer": consumer,
            "peak_bytes": peak,
            "x_body": peak / len(bodies[key].body),
        }
        for (key, consumer), peak in sorted(
            memory.items(), key=lambda kv: (bodies[kv[0][0]].n, kv[0][0])
        )
    ]
    modes = W.MODES
    guard = R.guard_overheads(cases, samples, args.clock)
    linear = _growth(cases, sizes, args.clock, progress)
    goals = R.targets(
        table, sizes, memory, bodies, proxy, modes, guard, linear, samples, args.clock
    )
    R.print_tables(console, table, grow, sizes, goals, memory_rows, guard)
    elapsed = time.perf_counter() - started
    console.print(f"elapsed {elapsed:.0f} s; JSON in {args.json}")

    result = {
        "command": command,
        "argv": sys.argv[1:],
        "date": datetime.datetime.now().isoformat(),
        "elapsed_s": elapsed,
        "clock": args.clock,
        "environment": env,
        "plan": {
            "quick": args.quick,
            "full": args.full,
            "rounds": rounds,
            "sizes": sizes,
            "runs_by_duration": schedule,
        },
        "cases": [
            {
                "key": c.key,
                "workload": c.workload.name,
                "n": c.workload.n,
                "mode": c.mode,
                "body_bytes": len(c.workload.body),
                "events": c.workload.events,
                "pieces": len(c.pieces),
                "consumers": {
                    k.name: {
                        "cpu_s": samples[c.key, k.name].cpu,
                        "wall_s": samples[c.key, k.name].wall,
                        "error": samples[c.key, k.name].error,
                    }
                    for k in c.consumers
                },
            }
            for c in cases
        ],
        "rows": [{f: getattr(r, f) for f in r.__slots__} for r in table],
        "growth": grow,
        "guard_overhead_pct": guard,
        "memory": memory_rows,
        "proxy": proxy,
        "layers": layers,
        "targets": [{f: getattr(g, f) for f in g.__slots__} for g in goals],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, default=str))
    if args.write_docs:
        block = R.markdown(table, grow, sizes, goals, memory_rows, proxy, guard)
        if layers is not None:
            import profiling

            block += "\n" + profiling.markdown(layers)
        _write_docs(block, command, env, elapsed)
        console.print(f"wrote {DOC.relative_to(ROOT)}")
    wrong = [r for r in table if r.error]
    for r in wrong:
        console.print(f"[red]{r.consumer} on {r.case}: {r.error}[/red]")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
