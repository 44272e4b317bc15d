"""The soak under faults: many concurrent agent turns through the fault proxy: ``make soak``.

::

    python -m tools.reliability.soak [--turns 200] [--concurrency 16] [--seconds 120]
                                        [--seed N] [--json PATH]

One :class:`~railings.testing.ScriptedServer`, one
:class:`~railings.testing.FaultProxy` in front of it, and ``--turns`` agent
runs of one turn each (:class:`~railings.agent.Agent` with ``max_turns=1``),
``--concurrency`` at a time, alternating OpenAI and Anthropic at random. Every
*request* -- retries included -- draws its own fault and its own scripted turn,
set by the client's transport in the ``x-railings-fault`` and ``x-railings-turn``
headers. The agent's only tool is the built-in ``shell``, with
:func:`~railings.dispatch.builtins.spawn` replaced by the spy: nothing runs,
every command that would have is recorded.

The oracle is independent of the decoder: the transport keeps the bytes of
each response, and :func:`~tools.reliability.faulting.wire_truth` reads them
with the corpus module's block splitter -- did a whole termination proof arrive, and did anything
before it spoil the stream (bytes that are not UTF-8, data that is not JSON, an
error event)? Then, per attempt:

* a turn reported clean must have a proof and nothing spoiled before it
  (else: **faults missed**, must be 0);
* an attempt the client retried or reported broken must have had no proof or
  a spoiled stream (else: **clean turns misreported**, must be 0);
* every command the spy saw must be one the script sends whole (a piece of the
  call the output limit cuts is a **truncated call executed**, must be 0).

Also reported: faults injected per class and how many disrupted a stream and
were detected, open file descriptors and RSS before and after (after a warm-up;
allowed growth: :data:`FD_SLACK` descriptors and :data:`RSS_SLACK` bytes), and
p50/p99 run latency. Retry waits are zeroed (:func:`~railings.transport.no_waits`):
the soak measures railings, not the backoff. Exit status 1 when an invariant fails.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from railings.agent.loop import Agent, AgentEvent, RunResult, ToolsDispatched
from railings.dispatch import OutcomeStatus, ToolRegistry, builtin_tools
from railings.errors import RailingsError
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.transport import AsyncProviderClient, ClientConfig, RetryPolicy, Timeouts, no_waits
from railings.turn.model import Outcome
from tools.reliability.faulting import IDLE, Attempt, FaultingTransport
from tools.reliability.properties import ShellSpy

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"

__all__ = ["FD_SLACK", "RSS_SLACK", "SCRIPT", "WHOLE_COMMANDS", "main", "soak"]

FD_SLACK = 8
RSS_SLACK = 64 * 1024 * 1024
MAX_TOKENS = 256  # 1,024 characters a turn: the "cut" turn's call never fits

# The scripted turns, picked per request by index. Only the commands listed in
# WHOLE_COMMANDS are ever sent complete; turn 3's is always cut by the output limit.
SCRIPT: dict[str, Any] = {
    "seed": 9,
    "turns": [
        {"text": {"$filler": 300}},
        {
            "text": "Running it.",
            "tool_calls": [{"name": "shell", "arguments": {"command": "echo soak-ok"}}],
        },
        {
            "text": "Two at once.",
            "tool_calls": [
                {"name": "shell", "arguments": {"command": "echo soak-a"}},
                {"name": "shell", "arguments": {"command": "echo soak-b"}},
            ],
        },
        {
            "text": "A long one.",
            "tool_calls": [
                {"name": "shell", "arguments": {"command": "echo soak-cut " + "x" * 3000}}
            ],
        },
        {"thinking": "Let me think about it.", "text": {"$filler": 200}},
    ],
}
WHOLE_COMMANDS = frozenset({"echo soak-ok", "echo soak-a", "echo soak-b"})


# -- one run -------------------------------------------------------------------------------------


@dataclass
class Run:
    provider: str
    seed: int
    seconds: float = 0.0
    status: str = ""
    error: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    executed: list[str] = field(default_factory=list)  # commands of EXECUTED outcomes
    executed_from_unfinished: int = 0
    hung: bool = False


class _Worker:
    """One slot of the soak: a long-lived client per provider, as an agent process has.

    Each run is a fresh conversation (a new :class:`Agent`) on the same clients, so
    a resource a turn fails to release accumulates over the soak and shows.
    """

    def __init__(self, proxy_url: str, workdir: Path) -> None:
        self.workdir = workdir
        self.transports: dict[str, FaultingTransport] = {}
        self.clients: dict[str, AsyncProviderClient] = {}
        for provider in ("openai", "anthropic"):
            transport = FaultingTransport(random.Random(0), len(SCRIPT["turns"]))
            config = ClientConfig(
                provider=provider,
                model="soak",
                base_url=proxy_url + ("/v1" if provider == "openai" else ""),
                api_key="sk-soak-not-a-real-key",
                max_tokens=MAX_TOKENS,
                http2=False,
                retry=RetryPolicy(attempts=3),
                timeouts=Timeouts(connect=5, first_byte=5, idle=IDLE, total=20),
            )
            self.transports[provider] = transport
            self.clients[provider] = AsyncProviderClient(config, transport=transport)

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.aclose()

    async def run(self, provider: str, seed: int) -> Run:
        run = Run(provider, seed)
        transport = self.transports[provider]
        transport.rng = random.Random(seed)  # the run's faults depend on its seed alone
        first = len(transport.attempts)
        events: list[AgentEvent] = []
        started = time.monotonic()
        try:
            agent = Agent(
                self.clients[provider],
                ToolRegistry(builtin_tools(self.workdir)),
                max_turns=1,
                approve=None,
                on_event=events.append,
            )
            async with asyncio.timeout(60):
                result: RunResult = await agent.arun("soak")
            run.status = result.status.value
            if result.error is not None:
                run.error = type(result.error).__name__
            elif result.last is not None:
                run.status = result.last.outcome.value
            for event in events:
                if not isinstance(event, ToolsDispatched):
                    continue
                for outcome in event.batch.outcomes:
                    if outcome.status is OutcomeStatus.EXECUTED:
                        run.executed.append(str((outcome.verdict.arguments or {}).get("command")))
                        if event.batch.turn.outcome is not Outcome.COMPLETE:
                            run.executed_from_unfinished += 1
        except TimeoutError:
            run.hung, run.status = True, "hung"
        except RailingsError as exc:
            run.status, run.error = "error", type(exc).__name__
        run.seconds = time.monotonic() - started
        run.attempts = transport.attempts[first:]
        del transport.attempts[:]  # kept by the run now
        return run


# -- resources -------------------------------------------------------------------------------


def _fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return -1


def _rss() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# -- the soak --------------------------------------------------------------------------------


async def _runs(
    proxy_url: str,
    count: int,
    concurrency: int,
    seconds: float | None,
    rng: random.Random,
    workdir: Path,
) -> list[Run]:
    plan = [(rng.choice(("openai", "anthropic")), rng.randrange(1 << 30)) for _ in range(count)]
    queue = iter(plan)
    deadline = None if seconds is None else time.monotonic() + seconds
    runs: list[Run] = []

    async def worker() -> None:
        slot = _Worker(proxy_url, workdir)
        try:
            for provider, seed in queue:
                if deadline is not None and time.monotonic() >= deadline:
                    return
                runs.append(await slot.run(provider, seed))
        finally:
            await slot.aclose()

    await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))
    return runs


def soak(
    turns: int = 200,
    concurrency: int = 16,
    seconds: float | None = None,
    seed: int | None = None,
    warmup: int | None = None,
) -> dict[str, Any]:
    """Run the soak; return the report (see the module docstring).

    ``warmup`` turns (default: four per slot, at least 50) run first, unmeasured, so that
    "before" is taken once every pool, cache and allocator arena has reached its size.
    """
    warmup = max(50, 4 * concurrency) if warmup is None else warmup
    seed = random.SystemRandom().randrange(1 << 30) if seed is None else seed
    rng = random.Random(seed)
    with (
        no_waits(),
        ScriptedServer(Script.from_dict(SCRIPT)) as server,
        FaultProxy(server.url) as proxy,
        ShellSpy() as spy,
    ):
        workdir = Path(spy.workdir)
        spy.run(_runs(proxy.url, warmup, concurrency, None, rng, workdir))
        server.clear()
        spy.commands.clear()
        gc.collect()
        fds_before, rss_before, objects_before = _fds(), _rss(), len(gc.get_objects())
        started = time.monotonic()
        runs = spy.run(_runs(proxy.url, turns, concurrency, seconds, rng, workdir))
        elapsed = time.monotonic() - started
        server.clear()
        commands = list(spy.commands)
        gc.collect()
        fds_after, rss_after = _fds(), _rss()
        objects_after = len(gc.get_objects()) - sum(_objects_of(run) for run in runs)
    report = _report(
        runs,
        commands,
        elapsed,
        seed,
        turns,
        concurrency,
        (fds_before, fds_after),
        (rss_before, rss_after),
    )
    report["python_objects"] = {"before": objects_before, "after": objects_after}
    report["warmup_turns"] = warmup
    return report


def _objects_of(run: Run) -> int:
    """Objects the soak itself keeps per run (its records), not counted as growth."""
    return 2 + len(run.attempts) * 2 + len(run.executed)


def _report(
    runs: list[Run],
    commands: list[str],
    elapsed: float,
    seed: int,
    turns: int,
    concurrency: int,
    fds: tuple[int, int],
    rss: tuple[int, int],
) -> dict[str, Any]:
    injected: Counter[str] = Counter()
    disrupted: Counter[str] = Counter()
    detected: Counter[str] = Counter()
    missed: list[str] = []
    misreported: list[str] = []
    for run in runs:
        for i, attempt in enumerate(run.attempts):
            injected[attempt.fault_class] += 1
            truth = attempt.truth()
            last = i == len(run.attempts) - 1
            reported_clean = last and run.status == "complete"
            where = f"{run.provider} {attempt.fault} turn {attempt.turn}"
            if not truth.clean:
                disrupted[attempt.fault_class] += 1
                if reported_clean:
                    missed.append(f"{where}: reported clean, wire says {truth.spoiled}")
                else:
                    detected[attempt.fault_class] += 1
            elif not reported_clean:  # retried, or reported broken, though it was whole
                misreported.append(
                    f"{where}: clean on the wire, reported {run.status}"
                    + (f" ({run.error})" if run.error else "")
                )
    truncated = [c for c in commands if c not in WHOLE_COMMANDS]
    truncated_executed = len(truncated) + sum(r.executed_from_unfinished for r in runs)
    culprits = [
        f"{r.provider} seed {r.seed}: ran {[c for c in r.executed if c not in WHOLE_COMMANDS]} "
        f"after {[a.fault for a in r.attempts]} (turns {[a.turn for a in r.attempts]})"
        for r in runs
        if r.executed_from_unfinished or any(c not in WHOLE_COMMANDS for c in r.executed)
    ]
    latencies = [r.seconds for r in runs]
    statuses = Counter(r.status for r in runs)
    failures = []
    if truncated_executed:
        failures.append(f"{truncated_executed} truncated call(s) executed: {culprits[:3]}")
    if missed:
        failures.append(f"{len(missed)} broken turn(s) reported clean: {missed[:3]}")
    if misreported:
        failures.append(f"{len(misreported)} clean turn(s) misreported: {misreported[:3]}")
    if any(r.hung for r in runs):
        failures.append(f"{sum(r.hung for r in runs)} run(s) hung past 60 s")
    if fds[0] >= 0 and fds[1] - fds[0] > FD_SLACK:
        failures.append(f"open file descriptors grew from {fds[0]} to {fds[1]}")
    if rss[0] >= 0 and rss[1] - rss[0] > RSS_SLACK:
        failures.append(f"RSS grew by {(rss[1] - rss[0]) / 2**20:.1f} MiB")
    return {
        "ok": not failures,
        "failures": failures,
        "seed": seed,
        "turns_requested": turns,
        "turns_run": len(runs),
        "concurrency": concurrency,
        "seconds": round(elapsed, 2),
        "requests": sum(len(r.attempts) for r in runs),
        "outcomes": dict(statuses),
        "faults": {
            name: {
                "injected": injected[name],
                "disrupted": disrupted[name],
                "detected": detected[name],
            }
            for name in sorted(injected)
        },
        "faults_injected": sum(v for k, v in injected.items() if k != "none"),
        "faults_detected": sum(detected.values()),
        "faults_missed": len(missed),
        "truncated_calls_executed": truncated_executed,
        "clean_turns_misreported": len(misreported),
        "shell_runs": len(commands),
        "latency_seconds": {
            "p50": round(_percentile(latencies, 0.5), 4),
            "p99": round(_percentile(latencies, 0.99), 4),
            "max": round(max(latencies, default=0.0), 4),
        },
        "open_fds": {"before": fds[0], "after": fds[1], "slack": FD_SLACK},
        "rss_bytes": {"before": rss[0], "after": rss[1], "slack": RSS_SLACK},
        "examples": {
            "missed": missed[:10],
            "misreported": misreported[:10],
            "truncated": culprits[:10],
        },
    }


def _print(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, no_color=bool(os.environ.get("NO_COLOR")))
    faults = Table(
        title=f"soak: {report['turns_run']} turns, {report['requests']} requests, "
        f"concurrency {report['concurrency']}, {report['seconds']:.1f} s"
    )
    for column in ("fault", "injected", "disrupted a stream", "detected"):
        faults.add_column(column, justify="left" if column == "fault" else "right")
    for name, row in report["faults"].items():
        faults.add_row(name, str(row["injected"]), str(row["disrupted"]), str(row["detected"]))
    console.print(faults)
    summary = Table(title="invariants and resources")
    summary.add_column("measure")
    summary.add_column("value", justify="right")
    summary.add_column("bound")
    mib = 2**20
    fd, rss, lat = report["open_fds"], report["rss_bytes"], report["latency_seconds"]
    rows = [
        ("truncated calls executed", str(report["truncated_calls_executed"]), "0"),
        ("broken turns reported clean", str(report["faults_missed"]), "0"),
        ("clean turns misreported", str(report["clean_turns_misreported"]), "0"),
        (
            "faults injected / detected",
            f"{report['faults_injected']} / {report['faults_detected']}",
            "",
        ),
        ("shell runs (whole calls)", str(report["shell_runs"]), ""),
        ("outcomes", ", ".join(f"{k} {v}" for k, v in sorted(report["outcomes"].items())), ""),
        ("open fds before -> after", f"{fd['before']} -> {fd['after']}", f"+{fd['slack']}"),
        (
            "RSS before -> after",
            f"{rss['before'] / mib:.1f} -> {rss['after'] / mib:.1f} MiB",
            f"+{rss['slack'] / mib:.0f} MiB",
        ),
        (
            "python objects before -> after",
            f"{report['python_objects']['before']:,} -> {report['python_objects']['after']:,}",
            "",
        ),
        ("run latency p50 / p99", f"{lat['p50'] * 1000:.0f} / {lat['p99'] * 1000:.0f} ms", ""),
    ]
    for row in rows:
        summary.add_row(*row)
    console.print(summary)
    for failure in report["failures"]:
        console.print(f"[red]FAIL[/] {failure}", soft_wrap=True)
    verdict = "[green]PASS[/]" if report["ok"] else "[red]FAIL[/]"
    console.print(f"soak: {verdict} (seed {report['seed']})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.reliability.soak",
        description="Soak railings under faults (see the module docstring).",
    )
    parser.add_argument("--turns", type=int, default=200, help="agent turns (default 200)")
    parser.add_argument(
        "--concurrency", type=int, default=16, help="turns in flight at once (default 16)"
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="stop starting turns after S seconds (default: no limit)",
    )
    parser.add_argument("--seed", type=int, default=None, help="replay a soak")
    parser.add_argument(
        "--json",
        metavar="PATH",
        default=str(RESULTS / "soak.json"),
        help="where to write the report (default: bench/results/soak.json in the repository)",
    )
    args = parser.parse_args(argv)
    if args.turns < 1 or args.concurrency < 1:
        parser.error("--turns and --concurrency must be at least 1")
    report = soak(args.turns, args.concurrency, args.seconds, args.seed)
    _print(report)
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"soak: report written to {path}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
