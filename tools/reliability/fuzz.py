"""Fuzz campaigns over the core, from bytes to the shell: ``make fuzz``.

::

    python -m tools.reliability.fuzz [--examples N] [--seconds S] [--corpus DIR]
                                        [--json PATH] [--skip-exhaustive] [--workers W]

Campaigns (each checks the properties of :mod:`tools.reliability.properties`):

``random_bytes``       arbitrary bytes, any provider, split anywhere
``protocol_noise``     real SSE blocks of every capture mixed with hostile fragments
                       (BOM, lone CR, NUL, invalid UTF-8, 5,000-digit numbers,
                       deep nesting, absurd indexes), in random order
``random_splits``      a real capture split at random offsets gives the verdict of
                       the whole capture (split invariance)
``truncations``        a real capture cut at a random offset before its proof,
                       then split at random
``mutations``          a real capture's events reordered, duplicated and dropped
                       (and sometimes then cut)
``agent_e2e``          mutated or cut captures served through the real transport
                       to a real :class:`~railings.agent.Agent` whose tools are
                       the spied ``shell``
``http_chunks``        a real capture framed as a chunked HTTP body (random chunk
                       sizes, malformed framing, cuts) reads the same through h11's
                       chunked reader and railings' bulk one
``faults_after_content`` a capture of any of the six wires (SSE, Bedrock's frames,
                       Ollama's lines) with one fault after its first content (bad
                       UTF-8, broken JSON, a bad byte, a cut, a bad CRC, a unit over
                       the bound) reads the same whole, byte by byte and in random
                       pieces: report and events (chunking invariance)
``every_offset``       deterministic: every capture cut at **every** byte offset

The campaigns live in :mod:`tools.reliability.campaigns`, what they feed in
:mod:`tools.reliability.inputs`. ``--examples`` is the example budget of each
random campaign, ``--seconds`` the time budget of all of them together (split
evenly); ``every_offset`` always runs to the end unless ``--skip-exhaustive``.
Exit status 0 when every property held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tools.reliability.campaigns import CAMPAIGNS, WEIGHTS, Fuzzer
from tools.reliability.corpus import Capture, load_captures
from tools.reliability.faulted import PROPERTY as FAULTED_PROPERTY
from tools.reliability.properties import PROPERTIES, PropertyViolation, ShellSpy, Tally

__all__ = ["CAMPAIGNS", "CampaignResult", "main", "run_campaign", "run_exhaustive"]

# Beside the four every campaign checks, those one campaign checks (random_splits and
# every_offset; http_chunks; faults_after_content).
PROPERTY_NAMES = (*PROPERTIES, "split_invariance", "chunks_as_h11", FAULTED_PROPERTY)


# -- running ---------------------------------------------------------------------------------


@dataclass
class CampaignResult:
    name: str
    examples: int = 0
    seconds: float = 0.0
    failure: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def run_campaign(
    fuzzer: Fuzzer, name: str, *, examples: int, seconds: float | None, round_size: int = 100
) -> CampaignResult:
    """Run campaign ``name`` in rounds of fresh random examples until ``examples`` ran
    or ``seconds`` passed; stop at the first violation (shrunk by hypothesis)."""
    campaign = CAMPAIGNS[name]
    result = CampaignResult(name)
    started = time.monotonic()
    counter = [0]

    def body(data: st.DataObject) -> None:
        counter[0] += 1
        campaign(fuzzer, data)

    while result.examples < examples:
        if seconds is not None and time.monotonic() - started >= seconds:
            break
        size = min(round_size, examples - result.examples)
        test = settings(
            max_examples=size,
            deadline=None,
            database=None,
            phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
        )(given(st.data())(body))
        counter[0] = 0
        try:
            test()
        except PropertyViolation as exc:
            result.failure = str(exc)
        except Exception as exc:  # hypothesis' own errors (flaky, unsatisfiable...)
            result.failure = f"{type(exc).__name__}: {exc}"
        result.examples += min(counter[0], size) if result.failure is None else counter[0]
        if result.failure is not None:
            break
    result.seconds = time.monotonic() - started
    return result


def _exhaustive_worker(
    corpus: str | None, names: list[str]
) -> tuple[dict[str, int], int, int, str | None]:
    captures = load_captures(corpus, names=names)
    with ShellSpy() as spy:
        fuzzer = Fuzzer(captures, spy)
        offsets = 0
        try:
            for capture in captures:
                offsets += fuzzer.every_offset(capture)
        except PropertyViolation as exc:
            return dict(fuzzer.tally.checked), fuzzer.tally.shell_runs, offsets, str(exc)
    return dict(fuzzer.tally.checked), fuzzer.tally.shell_runs, offsets, None


def run_exhaustive(
    captures: Sequence[Capture], corpus: str | None, workers: int, tally: Tally
) -> CampaignResult:
    """``every_offset`` over every capture, spread over ``workers`` processes."""
    result = CampaignResult("every_offset")
    started = time.monotonic()
    # Largest first, each to the least loaded worker: the workers finish together.
    shares: list[list[str]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for capture in sorted(captures, key=lambda c: len(c.body), reverse=True):
        least = loads.index(min(loads))
        shares[least].append(capture.name)
        loads[least] += len(capture.body)
    if workers <= 1:
        outcomes = [_exhaustive_worker(corpus, shares[0])]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_exhaustive_worker, corpus, share) for share in shares if share]
            outcomes = [f.result() for f in futures]
    for checked, shell_runs, offsets, failure in outcomes:
        tally.checked.update(checked)
        tally.shell_runs += shell_runs
        result.examples += offsets
        if failure and result.failure is None:
            result.failure = failure
    result.extra = {"captures": len(captures), "bytes": sum(len(c.body) for c in captures)}
    result.seconds = time.monotonic() - started
    return result


def _report(results: list[CampaignResult], tally: Tally, elapsed: float) -> dict[str, Any]:
    failed = {r.name: r.failure for r in results if r.failure}
    violated = {
        prop
        for r in results
        if r.failure
        for prop in PROPERTY_NAMES
        if r.failure.startswith(prop + ":")
    }
    return {
        "ok": not failed,
        "seconds": round(elapsed, 1),
        "campaigns": [
            {
                "name": r.name,
                "examples": r.examples,
                "seconds": round(r.seconds, 1),
                "status": "fail" if r.failure else "pass",
                "failure": r.failure,
                **r.extra,
            }
            for r in results
        ],
        "properties": [
            {
                "name": prop,
                "examples": tally.checked.get(prop, 0),
                "status": "fail" if prop in violated else "pass",
            }
            for prop in PROPERTY_NAMES
        ],
        "typed_errors_seen": dict(tally.typed_errors),
        "shell_runs_of_executable_calls": tally.shell_runs,
    }


def _print(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, no_color=bool(os.environ.get("NO_COLOR")))
    campaigns = Table(title="fuzz campaigns")
    for column in ("campaign", "examples", "seconds", "status"):
        numeric = column in ("examples", "seconds")
        campaigns.add_column(column, justify="right" if numeric else "left")
    for c in report["campaigns"]:
        campaigns.add_row(
            c["name"],
            f"{c['examples']:,}",
            f"{c['seconds']:.1f}",
            "[green]pass[/]" if c["status"] == "pass" else "[red]FAIL[/]",
        )
    console.print(campaigns)
    properties = Table(title="properties (examples that checked each)")
    properties.add_column("property")
    properties.add_column("examples", justify="right")
    properties.add_column("status")
    for p in report["properties"]:
        properties.add_row(
            p["name"],
            f"{p['examples']:,}",
            "[green]pass[/]" if p["status"] == "pass" else "[red]FAIL[/]",
        )
    console.print(properties)
    for c in report["campaigns"]:
        if c["failure"]:
            console.print(f"[red]{c['name']}[/]: {c['failure']}", markup=True, soft_wrap=True)
    console.print(
        f"positive control: {report['shell_runs_of_executable_calls']:,} spied shell runs, "
        "every one for a call with an execute verdict"
    )
    verdict = "[green]PASS[/]" if report["ok"] else "[red]FAIL[/]"
    console.print(f"fuzz: {verdict} in {report['seconds']:.1f} s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.reliability.fuzz",
        description="Fuzz the railings core (see the module docstring).",
    )
    parser.add_argument(
        "--examples", type=int, default=5000, help="examples per random campaign (default 5000)"
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="time budget for all the random campaigns together",
    )
    parser.add_argument("--corpus", help="the corpus directory (default: tests/corpus)")
    parser.add_argument(
        "--campaign",
        action="append",
        choices=sorted(CAMPAIGNS),
        help="run only this random campaign (repeatable)",
    )
    parser.add_argument(
        "--skip-exhaustive",
        action="store_true",
        help="do not cut every capture at every byte offset",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="processes for the exhaustive campaign (default: CPU count)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    args = parser.parse_args(argv)
    if args.examples < 1:
        parser.error("--examples must be at least 1")

    captures = load_captures(args.corpus)
    started = time.monotonic()
    names = args.campaign or list(CAMPAIGNS)
    total_weight = sum(WEIGHTS.get(n, 1.0) for n in names)
    results: list[CampaignResult] = []
    tally = Tally()
    with ShellSpy() as spy:
        fuzzer = Fuzzer(captures, spy)
        for name in names:
            weight = WEIGHTS.get(name, 1.0)
            budget = None if args.seconds is None else args.seconds * weight / total_weight
            count = max(1, int(args.examples * weight))
            print(
                f"fuzz: {name} ({count} examples"
                + (f", at most {budget:.0f} s)" if budget is not None else ")"),
                flush=True,
            )
            results.append(run_campaign(fuzzer, name, examples=count, seconds=budget))
        tally += fuzzer.tally
    if not args.skip_exhaustive:
        print(
            f"fuzz: every_offset ({sum(len(c.body) for c in captures):,} offsets "
            f"of {len(captures)} captures, {args.workers} worker(s))",
            flush=True,
        )
        results.append(run_exhaustive(captures, args.corpus, max(1, args.workers), tally))
    report = _report(results, tally, time.monotonic() - started)
    _print(report)
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
