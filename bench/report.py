"""Turning samples into numbers: per-case rows, the growth table, the targets, JSON and Markdown.

One set of derived numbers (:func:`summarize`) feeds three outputs: the rich
tables on the terminal, ``bench/results/latest.json`` and the generated block of
``docs/PERFORMANCE.md``, so they never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure import Case, Sample, paired_ratio
from workloads import Workload, size_label

__all__ = [
    "Row",
    "Target",
    "growth",
    "guard_overheads",
    "markdown",
    "print_tables",
    "rows",
    "targets",
]

MB = 1_000_000
# T1b: railings' core against the floor, by feeding (the limits the performance work set).
FLOOR_LIMITS = {"net": 0.6, "event": 0.9}


@dataclass(frozen=True, slots=True)
class Row:
    case: str  # "W1@20k/net"
    workload: str  # "W1@20k"
    mode: str
    consumer: str
    seconds: float | None
    runs: int
    events_per_s: float | None
    mb_per_s: float | None
    x_railings: float | None
    x_floor: float | None
    error: str | None


@dataclass(frozen=True, slots=True)
class Target:
    id: str
    text: str
    where: str
    measured: float | None
    limit: float
    unit: str
    passed: bool | None  # None: not measured

    def shown(self) -> str:
        if self.measured is None:
            return "not measured"
        return f"{self.measured:.3g}{self.unit}"


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def rows(cases: list[Case], samples: dict[tuple[str, str], Sample], clock: str) -> list[Row]:
    out: list[Row] = []
    for case in cases:
        wl = case.workload
        base = {
            name: samples[case.key, name].median(clock)
            for name in ("railings", "floor")
            if (case.key, name) in samples
        }
        for consumer in case.consumers:
            sample = samples[case.key, consumer.name]
            t = sample.median(clock) if sample.error is None else None
            out.append(
                Row(
                    case.key,
                    wl.key,
                    case.mode,
                    consumer.name,
                    t,
                    len(sample.cpu),
                    wl.events / t if t else None,
                    len(wl.body) / MB / t if t else None,
                    _ratio(t, base.get("railings")),
                    _ratio(t, base.get("floor")),
                    sample.error,
                )
            )
    return out


def _time(table: list[Row], case: str, consumer: str) -> float | None:
    for row in table:
        if row.case == case and row.consumer == consumer:
            return row.seconds
    return None


def growth(
    table: list[Row], names: tuple[str, ...], sizes: list[int], mode: str
) -> dict[str, dict[str, list[float | None]]]:
    """workload -> consumer -> [time at each size]; the growth of W2 and W4."""
    out: dict[str, dict[str, list[float | None]]] = {}
    for name in names:
        largest = f"{name}@{size_label(sizes[-1])}/{mode}"
        consumers = [r.consumer for r in table if r.case == largest]
        out[name] = {
            c: [_time(table, f"{name}@{size_label(n)}/{mode}", c) for n in sizes] for c in consumers
        }
    return out


def guard_overheads(
    cases: list[Case], samples: dict[tuple[str, str], Sample], clock: str
) -> dict[str, dict[str, float]]:
    """case -> the percent the guard adds to the SDK's time, two ways.

    ``own``: the guard's own work, ``httpx2+guard`` minus ``httpx2`` (fast runs, repeated
    every round), over the SDK's median: precise, since the guard sees the same chunks
    whoever reads them. ``paired``: the median over rounds of ``sdk+guard / sdk - 1``, each
    pair run back to back: the end-to-end check, as noisy as the SDK's runs."""
    out: dict[str, dict[str, float]] = {}
    for case in cases:

        def median(name: str, key: str = case.key) -> float | None:
            sample = samples.get((key, name))
            return None if sample is None or sample.error else sample.median(clock)

        for sdk in ("openai", "anthropic"):
            sdk_time = median(sdk)
            if sdk_time is None:
                continue
            entry: dict[str, float] = {}
            plain, guarded = median("httpx2"), median("httpx2+guard")
            if plain is not None and guarded is not None:
                entry["own"] = (guarded - plain) / sdk_time * 100
            paired = paired_ratio(samples, case.key, sdk, f"{sdk}+guard", clock)
            if paired is not None:
                entry["paired"] = (paired - 1) * 100
            if entry:
                out[case.key] = entry
    return out


def targets(
    table: list[Row],
    sizes: list[int],
    memory: dict[tuple[str, str], int],
    bodies: dict[str, Workload],
    proxy: dict[str, Any] | None,
    modes: tuple[str, ...],
    guard: dict[str, dict[str, float]],
    growth_ratio: dict[str, float],
    samples: dict[tuple[str, str], Sample],
    clock: str,
) -> list[Target]:
    """The issue's targets, each measured where the issue says, in every feeding mode.
    T1b and T8 are the median of the ratios of paired runs (``measure.TWINS``)."""
    big, small = size_label(sizes[-1]), size_label(sizes[0])
    out: list[Target] = []

    def pair(case: str, lead: str, twin: str) -> float | None:
        return paired_ratio(samples, case, lead, twin, clock)

    def add(
        id_: str, text: str, where: str, value: float | None, limit: float, unit: str, at_most: bool
    ) -> None:
        passed = None if value is None else (value <= limit if at_most else value >= limit)
        out.append(Target(id_, text, where, value, limit, unit, passed))

    for mode in modes:
        # T1b replaces the first target (within 2.0x of the floor), which it implies.
        limit = FLOOR_LIMITS.get(mode, 1.0)
        for name in ("W1", "W2", "W3", "W4", "W5"):
            case = f"{name}@{big}/{mode}"
            add(
                "T1b",
                f"railings core at most {limit}x the floor",
                case,
                pair(case, "floor", "railings"),
                limit,
                "x",
                True,
            )
    for mode in modes:
        for name, sdk in (("W1", "openai"), ("W3", "anthropic")):
            case = f"{name}@{big}/{mode}"
            railings = _time(table, case, "railings")
            add(
                "T2",
                f"railings core at least 3x faster than {sdk} create(stream=True)",
                case,
                _ratio(_time(table, case, sdk), railings),
                3.0,
                "x",
                False,
            )
    for name in ("W2", "W4"):
        add(
            "T3",
            "linear: 4x the fragments take at most 4.5x the time",
            f"{name} {small}->{big}/net",
            growth_ratio.get(name),
            4.5,
            "x",
            True,
        )
    for mode in modes:
        case = f"W4@{big}/{mode}"
        add(
            "T4",
            "railings at least 20x faster than anthropic messages.stream()",
            case,
            _ratio(_time(table, case, "anthropic.stream"), _time(table, case, "railings")),
            20.0,
            "x",
            False,
        )
    for name in ("W2", "W4"):
        key = f"{name}@{big}"
        peak = memory.get((key, "railings"))
        add(
            "T5",
            "railings peak memory at most 3x the body size",
            key,
            None if peak is None else peak / len(bodies[key].body),
            3.0,
            "x",
            True,
        )
    for mode in modes:
        for name, sdk in (
            ("W1", "openai"),
            ("W2", "openai"),
            ("W3", "anthropic"),
            ("W4", "anthropic"),
        ):
            case = f"{name}@{big}/{mode}"
            add(
                "T6",
                f"the guard adds at most 10% to {sdk} create(stream=True)",
                case,
                guard.get(case, {}).get("own"),
                10.0,
                "%",
                True,
            )
    if proxy is not None and "error" not in proxy:
        add(
            "T7",
            "fault proxy pass-through adds at most 0.5 ms per event at p99",
            "loopback",
            proxy["latency"]["added_p99_ms"],
            0.5,
            " ms",
            True,
        )
        add(
            "T7",
            "fault proxy pass-through moves at least 100 MB/s",
            "loopback, W1 body",
            proxy["throughput"]["proxy_mb_per_s"],
            100.0,
            " MB/s",
            False,
        )
    else:
        add(
            "T7", "fault proxy pass-through (p99 latency, MB/s)", "loopback", None, 0.5, " ms", True
        )
    for mode in modes:
        for name in ("W1", "W2", "W3", "W4"):
            case = f"{name}@{big}/{mode}"
            add(
                "T8",
                "sync facade (ProviderClient) within 1.5x of the async client",
                case,
                pair(case, "railings-transport", "railings-sync"),
                1.5,
                "x",
                True,
            )
    return out


# -- rendering ---------------------------------------------------------------------------


def _fmt(value: float | None, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def _ms(seconds: float | None) -> str:
    return _fmt(None if seconds is None else seconds * 1000, ",.1f")


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:,.0f}k" if value >= 10_000 else f"{value:,.0f}"


def print_tables(
    console: Any,
    table: list[Row],
    grow: dict[str, Any],
    sizes: list[int],
    goals: list[Target],
    memory_rows: list[dict[str, Any]],
    guard: dict[str, dict[str, float]],
) -> None:
    from rich.table import Table

    largest = f"@{size_label(sizes[-1])}/"
    for case in dict.fromkeys(r.case for r in table):
        if largest not in case:
            continue  # the smaller W2 and W4 sizes are in the growth tables
        t = Table(title=f"{case}", title_justify="left")
        for col in ("consumer", "runs", "median ms", "events/s", "MB/s", "x railings", "x floor"):
            t.add_column(col, justify="left" if col == "consumer" else "right")
        for r in (r for r in table if r.case == case):
            if r.error:
                t.add_row(r.consumer, str(r.runs), f"[red]{r.error}[/red]", "", "", "", "")
                continue
            t.add_row(
                r.consumer,
                str(r.runs),
                _ms(r.seconds),
                _rate(r.events_per_s),
                _fmt(r.mb_per_s, ".1f"),
                _fmt(r.x_railings, ".2f"),
                _fmt(r.x_floor, ".2f"),
            )
        console.print(t)
    for name, per in grow.items():
        t = Table(title=f"{name} growth (net pieces): median ms", title_justify="left")
        t.add_column("consumer")
        for n in sizes:
            t.add_column(size_label(n), justify="right")
        t.add_column(f"{size_label(sizes[-1])} / {size_label(sizes[0])}", justify="right")
        for consumer, times in per.items():
            t.add_row(consumer, *(_ms(x) for x in times), _fmt(_ratio(times[-1], times[0]), ".2f"))
        console.print(t)
    t = Table(title="peak memory (tracemalloc, net pieces)", title_justify="left")
    for col in ("workload", "body MB", "consumer", "peak MB", "x body"):
        t.add_column(col, justify="left" if col in ("workload", "consumer") else "right")
    for m in memory_rows:
        t.add_row(
            m["workload"],
            f"{m['body_bytes'] / MB:.2f}",
            m["consumer"],
            f"{m['peak_bytes'] / MB:.2f}",
            f"{m['x_body']:.2f}",
        )
    console.print(t)
    t = Table(title="what the guard adds to the SDK's time (%)", title_justify="left")
    for col in ("case", "own work (httpx2+guard - httpx2)", "end to end (paired runs)"):
        t.add_column(col, justify="left" if col == "case" else "right")
    for case, entry in guard.items():
        t.add_row(case, _fmt(entry.get("own"), ".2f"), _fmt(entry.get("paired"), ".1f"))
    console.print(t)
    t = Table(title="targets", title_justify="left")
    for col in ("id", "target", "where", "measured", "limit", "result"):
        t.add_column(col)
    for g in goals:
        verdict = {
            True: "[green]PASS[/green]",
            False: "[red]FAIL[/red]",
            None: "[yellow]n/a[/yellow]",
        }[g.passed]
        t.add_row(g.id, g.text, g.where, g.shown(), f"{g.limit:g}{g.unit}", verdict)
    console.print(t)


def markdown(
    table: list[Row],
    grow: dict[str, Any],
    sizes: list[int],
    goals: list[Target],
    memory_rows: list[dict[str, Any]],
    proxy: dict[str, Any] | None,
    guard: dict[str, dict[str, float]],
) -> str:
    """The generated part of docs/PERFORMANCE.md."""
    out: list[str] = [
        "### Targets",
        "",
        "| id | target | where | measured | limit | result |",
        "|---|---|---|---:|---:|---|",
    ]
    for g in goals:
        verdict = {True: "PASS", False: "**FAIL**", None: "n/a"}[g.passed]
        out.append(
            f"| {g.id} | {g.text} | {g.where} | {g.shown()} | {g.limit:g}{g.unit} | {verdict} |"
        )
    out += [
        "",
        "### Per workload",
        "",
        "Median of the runs shown; `x railings` and `x floor` are this consumer's time "
        "divided by railings' and by the floor's on the same case.",
        "",
    ]
    for case in dict.fromkeys(r.case for r in table):
        out += [
            f"**{case}**",
            "",
            "| consumer | runs | median ms | events/s | MB/s | x railings | x floor |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in (r for r in table if r.case == case):
            if r.error:
                out.append(f"| {r.consumer} | {r.runs} | error: {r.error} | | | | |")
                continue
            out.append(
                f"| {r.consumer} | {r.runs} | {_ms(r.seconds)} | {_rate(r.events_per_s)} "
                f"| {_fmt(r.mb_per_s, '.1f')} | {_fmt(r.x_railings, '.2f')} "
                f"| {_fmt(r.x_floor, '.2f')} |"
            )
        out.append("")
    for name, per in grow.items():
        head = " | ".join(f"{size_label(n)} ms" for n in sizes)
        out += [
            f"### {name} growth (net pieces)",
            "",
            f"| consumer | {head} | {size_label(sizes[-1])} / {size_label(sizes[0])} |",
            "|---|" + "---:|" * (len(sizes) + 1),
        ]
        for consumer, times in per.items():
            cells = " | ".join(_ms(x) for x in times)
            out.append(f"| {consumer} | {cells} | {_fmt(_ratio(times[-1], times[0]), '.2f')} |")
        out.append("")
    out += [
        "### What the guard adds to the SDK's time",
        "",
        "`own`: the guard's own work (`httpx2+guard` minus `httpx2`, fast runs repeated "
        "every round) over the SDK's median time; `paired`: the median of "
        "`sdk+guard / sdk - 1` over back-to-back runs, as noisy as the SDK runs are.",
        "",
        "| case | own % | paired % |",
        "|---|---:|---:|",
    ]
    for case, entry in guard.items():
        out.append(
            f"| {case} | {_fmt(entry.get('own'), '.2f')} | {_fmt(entry.get('paired'), '.1f')} |"
        )
    out.append("")
    out += [
        "### Peak memory (tracemalloc, net pieces)",
        "",
        "| workload | body MB | consumer | peak MB | x body |",
        "|---|---:|---|---:|---:|",
    ]
    for m in memory_rows:
        out.append(
            f"| {m['workload']} | {m['body_bytes'] / MB:.2f} | {m['consumer']} "
            f"| {m['peak_bytes'] / MB:.2f} | {m['x_body']:.2f} |"
        )
    out.append("")
    if proxy is not None:
        out += ["### Fault proxy, pass-through (loopback)", ""]
        if "error" in proxy:
            out.append(f"Not measured: {proxy['error']}")
        else:
            lat, thr = proxy["latency"], proxy["throughput"]
            out += ["| path | events | p50 ms | p99 ms | max ms |", "|---|---:|---:|---:|---:|"]
            for label in ("direct", "proxy"):
                s = lat[label]
                out.append(
                    f"| {label} | {lat['events']} | {s['p50_ms']:.3f} | "
                    f"{s['p99_ms']:.3f} | {s['max_ms']:.3f} |"
                )
            out += [
                "",
                f"Added at p99: {lat['added_p99_ms']:.3f} ms per event "
                f"(events paced {lat['pace_ms']:g} ms apart).",
                "",
                "| path | body MB | MB/s |",
                "|---|---:|---:|",
            ]
            for label in ("direct", "proxy"):
                out.append(
                    f"| {label} | {thr['body_bytes'] / MB:.1f} | {thr[f'{label}_mb_per_s']:.1f} |"
                )
        out.append("")
    return "\n".join(out)
