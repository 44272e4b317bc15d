"""The harness: interleaved timing rounds, then a separate peak-memory pass.

Timing. Every case (a workload at one size, fed one way) is run by every
consumer in its plan, round after round: round r runs each case's consumers in
an order rotated by r, so machine noise (other processes on a shared box, CPU
frequency) hits every consumer alike. The first run of each (case, consumer)
also checks the result (:func:`consumers.check`) before it counts. A consumer
whose first run took long gets fewer runs (:data:`RUNS_BY_DURATION`): the
official SDKs' helpers need 5-20 s a run at 20,000 events, and their
distance to railings is a factor of tens, not a matter of a few percent.
``gc.collect()`` runs before each run, outside the timing; the collector stays
on during it, as in real use.

The clock is the consuming thread's CPU time (``time.thread_time``) by default:
every consumer runs in this one thread (railings' async transport too, on a loop
driven from here), and CPU time does not count the time another process held
the core. The one exception, ``railings-sync`` (the blocking client, whose event
loop is a thread of its own), is timed by the process's CPU time: both threads.
Wall time is recorded alongside (``--clock wall`` reports it).

Memory. A separate pass, after the timing, under ``tracemalloc`` (which slows
allocation-heavy code fivefold and so must never overlap the timing): the peak
of traced memory during one run, above what was allocated before it. The body
and its pieces exist before the pass starts and are not counted.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field

from consumers import CONSUMERS, Consumer, Result, check, runner
from workloads import Workload, pieces

__all__ = [
    "QUICK_RUNS_BY_DURATION",
    "RUNS_BY_DURATION",
    "Case",
    "Sample",
    "consumers_for",
    "growth_pairs",
    "memory_pass",
    "paired_ratio",
    "timing_rounds",
]

# (first run shorter than this many seconds, total runs; None: every round); longer: one run.
Schedule = tuple[tuple[float, int | None], ...]
RUNS_BY_DURATION: Schedule = ((0.6, None), (2.5, 3), (7.0, 2))
QUICK_RUNS_BY_DURATION: Schedule = ((0.15, None),)


@dataclass
class Case:
    """One workload at one size, fed one way, and the consumers that read it."""

    workload: Workload
    mode: str
    consumers: list[Consumer]
    pieces: list[bytes] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.workload.key}/{self.mode}"


@dataclass
class Sample:
    """Every run of one consumer on one case."""

    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    runs: int = 0  # how many runs were planned
    error: str | None = None
    peak: int | None = None  # bytes, from the memory pass

    def median(self, clock: str) -> float | None:
        values = self.cpu if clock == "cpu" else self.wall
        return statistics.median(values) if values else None


def _runs(first: float, rounds: int, schedule: Schedule) -> int:
    for limit, runs in schedule:
        if first < limit:
            return rounds if runs is None else min(runs, rounds)
    return 1


def _timed(
    run: Callable[[list[bytes]], Result], chunks: list[bytes], threads: bool = False
) -> tuple[Result, float, float]:
    """One run: its result, its CPU time (this thread's, or with ``threads`` the whole
    process's: a consumer whose work runs on a thread of its own) and its wall time."""
    clock = time.process_time if threads else time.thread_time
    gc.collect()
    wall = time.perf_counter()
    cpu = clock()
    result = run(chunks)
    cpu = clock() - cpu
    wall = time.perf_counter() - wall
    return result, cpu, wall


def _warm(
    runners: dict[tuple[str, str], Callable[[list[bytes]], Result]], small: dict[str, Workload]
) -> None:
    """One untimed run per consumer on a small body: imports, caches and first-call costs."""
    for (name, provider), run in runners.items():
        workload = small[provider]
        try:
            run(pieces(workload.body, "net"))
        except Exception as exc:  # reported again, per case, by the timed run
            print(f"  warm-up of {name} on {provider} failed: {exc!r}", file=sys.stderr)


# The consumers a target compares run back to back, in alternating order, so the two runs of
# a pair see the same machine (a neighbour's load on a shared host comes and goes within
# seconds, and the SDKs between two consumers of a round take seconds): the floor and the
# core (T1b), the async client and the blocking one (T8), and each SDK and its guarded twin
# (T6, the "+guard" name).
TWINS = {"floor": "railings", "railings-transport": "railings-sync"}


def _twin(name: str) -> str:
    return TWINS.get(name) or f"{name}+guard"


def _units(consumers: list[Consumer]) -> list[list[Consumer]]:
    """Consumers in running order; a consumer and its twin (``TWINS``) form one unit."""
    names = {c.name for c in consumers}
    twins = {_twin(c.name) for c in consumers} & names
    units: list[list[Consumer]] = []
    for c in consumers:
        if c.name in twins:
            continue
        twin = [g for g in consumers if g.name == _twin(c.name)]
        units.append([c, *twin])
    return units


def paired_ratio(
    samples: dict[tuple[str, str], Sample], case: str, lead: str, twin: str, clock: str
) -> float | None:
    """The median over rounds of ``twin / lead``, each from one pair of runs made back to
    back; None when either has no runs."""
    a, b = samples.get((case, lead)), samples.get((case, twin))
    if a is None or b is None or a.error or b.error:
        return None
    x, y = (a.cpu, b.cpu) if clock == "cpu" else (a.wall, b.wall)
    pairs = [t / s for s, t in zip(x, y, strict=False) if s > 0]
    return statistics.median(pairs) if pairs else None


def timing_rounds(
    cases: list[Case],
    rounds: int,
    schedule: Schedule,
    small: dict[str, Workload],
    progress: Callable[[str], None],
) -> dict[tuple[str, str], Sample]:
    """Run every case's consumers ``rounds`` times, interleaved; return the samples.

    A consumer and its twin (``TWINS``: the floor and railings, the async and the blocking
    client, an SDK and its guarded twin) run back to back (in alternating order) and get the
    same number of runs, so their ratio is read from pairs of neighbouring runs.
    """
    runners = {
        (c.name, case.workload.provider): runner(c, case.workload.provider)
        for case in cases
        for c in case.consumers
    }
    _warm(runners, small)
    # Everything alive now (bodies, pieces, clients, imported SDKs) lives to the end: frozen,
    # the collector skips it, and gc.collect() before each run costs little and always the same.
    gc.collect()
    gc.freeze()
    samples = {(case.key, c.name): Sample(runs=rounds) for case in cases for c in case.consumers}
    for r in range(rounds):
        started = time.perf_counter()
        for case in cases:
            units = _units(case.consumers)
            units = units[r % len(units) :] + units[: r % len(units)]
            for unit in units:
                for consumer in unit if r % 2 == 0 else unit[::-1]:
                    _run_once(case, consumer, samples, runners, rounds, schedule)
                if len(unit) == 2:  # the twin runs as often as its SDK
                    samples[case.key, unit[1].name].runs = samples[case.key, unit[0].name].runs
        progress(f"round {r + 1}/{rounds} done in {time.perf_counter() - started:.1f} s")
    return samples


def growth_pairs(small: Case, big: Case, consumer: Consumer, pairs: int, clock: str) -> float:
    """The median over ``pairs`` of ``consumer``'s time on ``big`` over its time on
    ``small``, the two runs of each pair made back to back (in alternating order): the
    growth target's ratio. Read from the timing rounds instead, the two sizes ran seconds
    apart (the SDKs' runs between them), and their ratio took the machine's changes."""
    run = runner(consumer, small.workload.provider)
    ratios = []
    for p in range(pairs):
        times = {}
        for case in (small, big) if p % 2 == 0 else (big, small):
            _, cpu, wall = _timed(run, case.pieces, consumer.threads)
            times[case.key] = cpu if clock == "cpu" else wall
        ratios.append(times[big.key] / times[small.key])
    return statistics.median(ratios)


def _run_once(
    case: Case,
    consumer: Consumer,
    samples: dict[tuple[str, str], Sample],
    runners: dict[tuple[str, str], Callable[[list[bytes]], Result]],
    rounds: int,
    schedule: Schedule,
) -> None:
    sample = samples[case.key, consumer.name]
    if sample.error is not None or len(sample.cpu) >= sample.runs:
        return
    run = runners[consumer.name, case.workload.provider]
    try:
        result, cpu, wall = _timed(run, case.pieces, consumer.threads)
    except Exception as exc:
        sample.error = f"{type(exc).__name__}: {exc}"[:200]
        return
    if not sample.cpu:
        sample.error = check(case.workload, result)
        sample.runs = _runs(cpu, rounds, schedule)
        if sample.error is not None:
            return
    sample.cpu.append(cpu)
    sample.wall.append(wall)


def memory_pass(
    workloads: list[Workload], consumers: list[Consumer], progress: Callable[[str], None]
) -> dict[tuple[str, str], int]:
    """Peak traced bytes of one run per (workload, consumer), fed in network pieces."""
    out: dict[tuple[str, str], int] = {}
    jobs = [
        (w, c, pieces(w.body, "net"))
        for w in workloads
        for c in consumers
        if w.provider in c.providers
    ]
    runs = {(c.name, w.provider): runner(c, w.provider) for w, c, _ in jobs}
    gc.collect()
    gc.freeze()
    started = time.perf_counter()
    tracemalloc.start()
    try:
        for workload, consumer, chunks in jobs:
            run = runs[consumer.name, workload.provider]
            gc.collect()
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            try:
                result = run(chunks)
            except Exception:
                continue
            peak = tracemalloc.get_traced_memory()[1] - base
            del result
            out[workload.key, consumer.name] = peak
    finally:
        tracemalloc.stop()
    progress(f"memory pass done in {time.perf_counter() - started:.1f} s")
    return out


def consumers_for(provider: str, names: set[str]) -> list[Consumer]:
    """The consumers named in ``names`` that read ``provider``'s streams, in registry order."""
    return [c for c in CONSUMERS if provider in c.providers and c.name in names]
