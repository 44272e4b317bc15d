"""``make sdk-suites``: the official SDKs' own tests, plain and with the guard under every client.

The guard promises to change nothing an SDK does but raise on an unproven stream.
This campaign holds it to that with the strongest tests there are, the SDKs' own:

1. reads the ``openai`` and ``anthropic`` versions installed in the dev venv, and
   fetches their sdists from the package index (``pip download --no-binary``;
   the sdists ship ``tests/``) into ``build/sdk-suites/``;
2. builds a venv of its own there with those versions, their test dependencies
   and railings (editable): nothing of it reaches the dev extras;
3. picks each suite's streaming-related test files (a ``test_*.py`` that
   mentions ``text/event-stream``, ``stream=True`` or ``.stream(``; not
   ``api_resources/``, which needs the SDK vendor's mock server) and runs them
   twice with the suite's own pytest configuration: plain, then with
   ``-p railings_guard_everywhere`` (this folder), which calls
   :func:`railings.guard.install` on every client the SDK builds;
4. compares the two outcomes test by test and writes the report
   (``docs/sdk-suites.md`` by default): every test whose outcome changed, each
   either in :data:`ALLOWED` (a test that asserts the class of the client's
   transport: the guard wraps it, by design) or not. A changed test is run
   again, plain and guarded, before it counts: one that changes between two
   plain runs is reported as unstable, not as the guard's.

Exit status 1 when a test changed that is not allowed. Not part of ``make test``:
it downloads, installs and runs a few thousand tests (about 10 min on 2 cores).
``python -m tools.sdk_suites --help`` for the options.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import platform
import re
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BUILD = ROOT / "build" / "sdk-suites"
SDKS = ("openai", "anthropic")
# What the two suites import, beyond the SDKs themselves (their dev groups, less the
# linters and type checkers): installed into the campaign's venv only.
TEST_DEPS = (
    "pytest",
    "pytest-asyncio",
    "pytest-xdist",
    "pytest-timeout",
    "respx",
    "inline-snapshot",
    "dirty-equals",
    "time-machine",
    "hypothesis",
    "trio",
    "websockets",
    "rich",
    "packaging",
    "nest_asyncio",
    "http-snapshot[httpx]==0.1.9",
    "opentelemetry-sdk",
)
SELECT = re.compile(rb"text/event-stream|stream=True|\.stream\(")

REASONS = {
    "transport-class": "asserts the class of the client's transport, which the guard wraps",
    "unproven": "its stream has no termination proof railings accepts: the guard raises",
    "bound": "streams more text than its max_tokens allows: the guard's turn bound ends it",
}


def allowed() -> dict[str, str]:
    """The tests whose outcome may change, by name (``allowed.tsv``), and why."""
    found = {}
    for line in (HERE / "allowed.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            _sdk, reason, key = line.split("\t")
            found[key] = REASONS[reason]
    return found


ALLOWED = allowed()


@dataclass
class Run:
    """One pytest run: outcome per test (``passed``, ``failed``, ``error``, ``skipped``)."""

    outcomes: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, list[str]] = field(default_factory=dict)  # test file::name -> said
    seconds: float = 0.0


def sh(*argv: str | Path, cwd: Path | None = None) -> None:
    """Run a command, its output to ours; raise on failure."""
    subprocess.run([str(a) for a in argv], cwd=cwd, check=True)


def venv(versions: dict[str, str]) -> Path:
    """The campaign's own venv, built once per set of versions."""
    where = BUILD / "venv"
    python = where / "bin" / "python"
    stamp = where / ".installed.json"
    want = {"sdks": versions, "deps": list(TEST_DEPS), "railings": "with its dependencies"}
    if stamp.exists() and json.loads(stamp.read_text()) == want:
        return python
    if not python.exists():
        sh(sys.executable, "-m", "venv", where)
    pins = [f"{sdk}[aiohttp]=={version}" for sdk, version in versions.items()]
    sh(python, "-m", "pip", "install", "--quiet", *pins, *TEST_DEPS)
    # railings with its own dependencies (h2 among them): the pins above stay as they are.
    sh(python, "-m", "pip", "install", "--quiet", "-e", ROOT)
    stamp.write_text(json.dumps(want))
    return python


def sdist(python: Path, sdk: str, version: str) -> Path:
    """The unpacked sdist of ``sdk==version``, fetched from the package index once."""
    folder = BUILD / "sdists"
    tree = folder / f"{sdk}-{version}"
    if (tree / "tests").is_dir():
        return tree
    folder.mkdir(parents=True, exist_ok=True)
    sh(
        python,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--no-binary",
        ":all:",
        f"{sdk}=={version}",
        "-d",
        folder,
    )
    with tarfile.open(folder / f"{sdk}-{version}.tar.gz") as archive:
        archive.extractall(folder, filter="data")
    return tree


def streaming_tests(tree: Path) -> list[str]:
    """The suite's streaming-related test files, relative to its root."""
    found = []
    for path in sorted((tree / "tests").rglob("test_*.py")):
        if "api_resources" in path.parts:
            continue
        if SELECT.search(path.read_bytes()):
            found.append(str(path.relative_to(tree)))
    return found


def run(python: Path, tree: Path, tests: list[str], guarded: bool, jobs: int, tag: str) -> Run:
    """One pytest run of ``tests`` in the suite's own configuration."""
    out = BUILD / "runs" / tag
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.json"):
        old.unlink()
    junit = out / "junit.xml"
    argv = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(jobs)]
    argv += ["--timeout", "300", "--junitxml", junit, "--durations=0"]
    if guarded:
        argv += ["-p", "railings_guard_everywhere"]
    env = {
        **_env(),
        "PYTHONPATH": str(HERE),
        "RAILINGS_SUITE_COUNTS": str(out),
    }
    started = time.monotonic()
    with (out / "pytest.log").open("w") as log:
        subprocess.run([str(a) for a in [*argv, *tests]], cwd=tree, env=env, stdout=log, stderr=log)
    (out / "seconds").write_text(f"{time.monotonic() - started:.1f}")
    return load(tag)


def load(tag: str) -> Run:
    """A run's result, from what it left in ``build/sdk-suites/runs/TAG``."""
    out = BUILD / "runs" / tag
    seconds = out / "seconds"
    result = Run(seconds=float(seconds.read_text()) if seconds.exists() else 0.0)
    result.outcomes = outcomes(out / "junit.xml")
    for part in out.glob("*.json"):
        for key, value in json.loads(part.read_text()).items():
            if key == "verdicts":
                result.verdicts.update(value)
            else:
                result.counts[key] = result.counts.get(key, 0) + value
    return result


def _env() -> dict[str, str]:
    import os

    # The suites' own switches stay at their defaults; no proxy from this shell.
    drop = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def outcomes(junit: Path) -> dict[str, str]:
    """``classname::name`` -> outcome, from pytest's JUnit XML."""
    if not junit.exists():
        return {}
    found: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        key = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        if "error" in kinds:
            outcome = "error"
        elif "failure" in kinds:
            outcome = "failed"
        elif "skipped" in kinds:
            outcome = "skipped"
        else:
            outcome = "passed"
        # A test can appear twice (a setup error after a pass): the worse one stands.
        if found.get(key) in (None, "passed", "skipped"):
            found[key] = outcome
    return found


def node_files(keys: list[str]) -> list[str]:
    """The test files of ``classname::name`` keys (``tests.lib.test_x.TestY`` -> path)."""
    files = set()
    for key in keys:
        parts = key.split("::")[0].split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()
        if parts:
            files.add("/".join(parts) + ".py")
    return sorted(files)


def test_id(key: str) -> str:
    """``tests.test_x.TestY::name`` -> ``tests/test_x.py::TestY::name`` (pytest's id)."""
    dotted, name = key.split("::", 1)
    parts = dotted.split(".")
    cut = max(i for i, part in enumerate(parts) if part.startswith("test_")) + 1
    return "::".join(["/".join(parts[:cut]) + ".py", *parts[cut:], name])


@dataclass
class Suite:
    sdk: str
    version: str
    files: int
    plain: Run
    guarded: Run
    changed: dict[str, tuple[str, str]]
    unstable: dict[str, tuple[str, str]]


def campaign(sdk: str, version: str, python: Path, jobs: int, again: bool = True) -> Suite:
    """Run one SDK's suite plain and guarded (``again=False``: only compare the runs
    already in ``build/sdk-suites/runs``)."""
    tree = sdist(python, sdk, version) if again else BUILD / "sdists" / f"{sdk}-{version}"
    tests = streaming_tests(tree)
    if again:
        run(python, tree, tests, False, jobs, f"{sdk}-plain")
        run(python, tree, tests, True, jobs, f"{sdk}-guarded")
    plain, guarded = load(f"{sdk}-plain"), load(f"{sdk}-guarded")
    changed = {
        key: (plain.outcomes.get(key, "absent"), guarded.outcomes.get(key, "absent"))
        for key in sorted(set(plain.outcomes) | set(guarded.outcomes))
        if plain.outcomes.get(key) != guarded.outcomes.get(key)
    }
    unstable: dict[str, tuple[str, str]] = {}
    if changed:
        # Run the files of the changed tests again, both ways: a change that does not
        # repeat, or a test that changes between two plain runs, is not the guard's.
        if again:
            files = node_files(list(changed))
            run(python, tree, files, False, jobs, f"{sdk}-plain-again")
            run(python, tree, files, True, jobs, f"{sdk}-guarded-again")
        plain2, guarded2 = load(f"{sdk}-plain-again"), load(f"{sdk}-guarded-again")
        for key, (before, after) in list(changed.items()):
            if plain2.outcomes.get(key) != before or guarded2.outcomes.get(key) != after:
                unstable[key] = changed.pop(key)
    return Suite(sdk, version, len(tests), plain, guarded, changed, unstable)


def tally(run_: Run) -> str:
    counts: dict[str, int] = {}
    for outcome in run_.outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return ", ".join(f"{counts.get(k, 0)} {k}" for k in ("passed", "failed", "error", "skipped"))


def report(suites: list[Suite], started: datetime.datetime) -> str:
    """The campaign's result as Markdown."""
    lines = [
        "# The SDKs' own test suites, plain and with the guard",
        "",
        "Written by `make sdk-suites` (`tools/sdk_suites/`): each SDK's streaming-related "
        "tests, from its sdist, run plain and then with `railings.guard.install` called on "
        "every client the SDK builds; every test whose outcome changed is listed. "
        "A change is allowed only for a test named in `tools/sdk_suites/allowed.tsv`, "
        "for one of three reasons: it asserts the class of the client's transport (the "
        "guard wraps it); its stream has no termination proof railings accepts (raising "
        "there is the guard's job); it streams more text than its `max_tokens` allows "
        "(the guard's turn bound ends it). What the guard said is shown under each.",
        "",
        f"- run: {started:%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}, "
        f"httpx2 {importlib.metadata.version('httpx2')}, "
        f"railings {importlib.metadata.version('railings')}",
    ]
    for suite in suites:
        lines.append(
            f"- {suite.sdk} {suite.version}: {suite.files} test files, "
            f"{len(suite.plain.outcomes)} tests"
        )
    lines += ["", "| suite | run | outcomes | clients guarded | streams watched | time |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for suite in suites:
        for name, run_ in (("plain", suite.plain), ("guarded", suite.guarded)):
            clients = run_.counts.get("clients", "-") if name == "guarded" else "-"
            streams = run_.counts.get("streams", "-") if name == "guarded" else "-"
            lines.append(
                f"| {suite.sdk} {suite.version} | {name} | {tally(run_)} | {clients} | "
                f"{streams} | {run_.seconds:.0f} s |"
            )
    reasons: dict[str, int] = {}
    for suite in suites:
        for key in suite.changed:
            why = ALLOWED.get(key, "not allowed")
            reasons[why] = reasons.get(why, 0) + 1
    lines += ["", "## Tests whose outcome changed with the guard", ""]
    lines += [f"- {count}: {why}" for why, count in sorted(reasons.items())]
    lines.append("")
    any_change = False
    for suite in suites:
        for key, (before, after) in suite.changed.items():
            any_change = True
            why = ALLOWED.get(key)
            verdict = f"allowed: {why}" if why else "**not allowed**"
            lines.append(f"- {suite.sdk}: `{key}`: {before} -> {after} ({verdict})")
            said = suite.guarded.verdicts.get(test_id(key), [])
            lines.extend(f"  - the guard: {message}" for message in said[:2])
    if not any_change:
        lines.append("None: every test has the same outcome plain and guarded.")
    unstable = [(s.sdk, k, v) for s in suites for k, v in s.unstable.items()]
    if unstable:
        lines += ["", "## Unstable (changed once, not again on a second run of both)", ""]
        for sdk, key, (before, after) in unstable:
            lines.append(f"- {sdk}: `{key}`: {before} -> {after}")
    legacy = sum(s.guarded.counts.get("not_httpx2", 0) for s in suites)
    lines += [
        "",
        f"Clients left unguarded because they hold a legacy `httpx` client (not httpx2): {legacy}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.sdk_suites", description=__doc__)
    parser.add_argument("--sdk", choices=SDKS, action="append", help="one SDK (default: both)")
    parser.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers (default 2)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "sdk-suites.md")
    parser.add_argument(
        "--report-only", action="store_true", help="write the report of the last runs"
    )
    args = parser.parse_args(argv)
    stamp = BUILD / "runs" / "started"
    if args.report_only and stamp.exists():
        started = datetime.datetime.fromisoformat(stamp.read_text())
    else:
        started = datetime.datetime.now(datetime.UTC)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(started.isoformat())
    versions = {sdk: importlib.metadata.version(sdk) for sdk in SDKS}
    python = BUILD / "venv" / "bin" / "python" if args.report_only else venv(versions)
    suites = [
        campaign(sdk, versions[sdk], python, args.jobs, again=not args.report_only)
        for sdk in (args.sdk or list(SDKS))
    ]
    text = report(suites, started)
    args.out.write_text(text)
    print(text)
    empty = [
        (s.sdk, name)
        for s in suites
        for name, r in (("plain", s.plain), ("guarded", s.guarded))
        if not r.outcomes
    ]
    for sdk, name in empty:
        log = BUILD / "runs" / f"{sdk}-{name}" / "pytest.log"
        print(f"sdk-suites: the {sdk} {name} run ran no test: see {log}")
    bad = [k for s in suites for k in s.changed if k not in ALLOWED]
    return 1 if bad or empty else 0


if __name__ == "__main__":
    sys.exit(main())
