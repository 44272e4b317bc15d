"""``railings probe URL``: what one endpoint sends, and the profile the evidence supports."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from railings.cli._common import UsageError, prefix, say
from railings.cli.endpoint import endpoint_for
from railings.probe import (
    DEMO_SCRIPT,
    WIRES,
    ProbeFailed,
    battery,
    budget,
    plan_lines,
    probe,
    profile_name,
    table,
    to_json,
    to_toml,
)
from railings.providers import spec
from railings.redact import redact
from railings.transport import ClientConfig

__all__ = ["register", "run"]

_BATTERIES = [battery(name) for name in WIRES]
_MOST, _BUDGET = max(map(len, _BATTERIES)), max(map(budget, _BATTERIES))
HELP = f"""\
Send a small battery of real requests to one endpoint of any wire `railings
run` speaks, each with a tiny output limit (at most {_MOST} requests and {_BUDGET}
output tokens), read every answer with railings' own reader, and say what the
endpoint sends: its termination proof, a stop reason before it (Responses,
Gemini and Bedrock carry it in the proof), what it says when the output limit
cuts text and a tool call, usage (on Chat Completions with and without
stream_options), keep-alives before and during content (SSE comments,
Anthropic pings, NDJSON blank lines; Bedrock's event-stream has none), HTTP/2
and content codings, and times (reported only). Then write the endpoint
profile the evidence supports, and nothing more: `structural = true` only if
every complete answer sent its stop reason before the proof, `first_content`
only if keep-alives came before the first event. Load it with
RAILINGS_PROFILES=DIR or profile=FILE.

What will be sent is printed first, and asked about on a terminal; --yes sends
without asking, and without a terminal nothing is sent unless --yes is given.
The key is read from the environment as `railings run` reads it, sent only to
URL, and never printed.

exit codes: 0 the battery ran (its findings are in the report); 1 a request got
no answer to read (unreachable after retries, an error status); 2 a usage error
(bad URL, missing key, no --yes without a terminal).
"""


def register(commands: Any) -> None:
    """Add ``railings probe`` to the command line."""
    parser = commands.add_parser(
        "probe",
        help="find out what an endpoint sends, and write its profile",
        description=HELP,
    )
    parser.add_argument("url", nargs="?", metavar="URL", help="the endpoint's base URL")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="probe the embedded scripted model (no key, no network) on --provider's wire",
    )
    parser.add_argument(
        "--provider",
        choices=WIRES,
        metavar="NAME",
        help="wire format of the endpoint ("
        + "; ".join(f"{name}: {spec(name).title}" for name in WIRES)
        + "; default openai)",
    )
    parser.add_argument("--model", help="model name (default per provider, as `railings run`)")
    parser.add_argument("--yes", action="store_true", help="send without asking")
    parser.add_argument(
        "--out", metavar="FILE", help="where to write the profile (default: HOST.toml, here)"
    )
    parser.add_argument("--json", action="store_true", help="the report as one JSON object")
    parser.set_defaults(run=run)


def _say(line: str) -> None:
    # Every line redacted: some carry what the endpoint sent (a content type, a status's
    # words), which may echo the key.
    say("probe", redact(line))


def run(args: argparse.Namespace) -> int:
    """Probe the endpoint; the exit code (see HELP). A usage mistake raises
    :class:`UsageError`, which the command line reports."""
    with _endpoint(args) as (config, note):
        return _probe(args, config, note)


@contextlib.contextmanager
def _endpoint(args: argparse.Namespace) -> Iterator[tuple[ClientConfig, str]]:
    """The endpoint to probe: the embedded scripted server, or URL as `railings run`
    would reach it (its key from the environment)."""
    if args.demo:
        if args.url or args.model:
            raise UsageError("--demo probes the embedded scripted model: drop URL/--model")
        from railings.testing import ScriptedServer

        wire = spec(args.provider or "openai")
        with ScriptedServer(DEMO_SCRIPT) as server:
            # The server answers each wire where its SDK looks: the path of the wire's
            # public base URL (OpenAI's ``/v1``) on the server's origin.
            base_url = server.url + wire.base_path
            config = ClientConfig(
                provider=wire.name,
                model=DEMO_SCRIPT["model"],
                base_url=base_url,
                api_key="demo",
            )
            yield config, f"--demo: the embedded scripted model at {base_url}"
        return
    if not args.url:
        raise UsageError("give the endpoint's URL (or --demo)")
    parts = urlsplit(args.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{redact(args.url)}: expected an http:// or https:// URL")
    namespace = argparse.Namespace(
        demo=False,
        provider=args.provider or "openai",
        base_url=args.url.rstrip("/"),
        model=args.model,
        idle_timeout=None,
        content_idle=None,
        total_timeout=None,
        max_tokens=None,
        workdir=None,
    )
    with endpoint_for(namespace) as endpoint:
        yield endpoint.config, endpoint.note or ""


def _probe(args: argparse.Namespace, config: ClientConfig, note: str) -> int:
    asks = battery(config.provider)
    base_url = config.base_url or ""
    if not args.yes and not sys.stdin.isatty():
        _say(
            f"{len(asks)} requests to {redact(base_url)} (at most {budget(asks)} output "
            "tokens) not sent: no terminal to confirm on; --yes sends them"
        )
        return 2
    _say(redact(note))
    for line in plan_lines(asks, redact(base_url)):
        _say(line)
    if not args.yes:
        print(prefix("probe") + "send them? [y/N] ", end="", file=sys.stderr, flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            _say("nothing sent")
            return 0
    try:
        found = asyncio.run(probe(config))
    except ProbeFailed as exc:
        _say(str(exc))
        return 1
    out = Path(args.out) if args.out else Path(f"{profile_name(base_url)}.toml")
    try:
        # What the endpoint sent (a stop reason) is shown and written: a server may have
        # echoed the key into it, and the key is never shown nor written.
        out.write_text(redact(to_toml(found.profile)), encoding="utf-8")
    except OSError as exc:
        _say(f"cannot write the profile to {out}: {exc.strerror or exc}")
        return 1
    if args.json:
        report = to_json(found, url=redact(base_url), model=config.model, out=str(out))
        print(redact(json.dumps(report, indent=2)))
        return 0
    print(f"endpoint    {redact(base_url)} ({config.provider}, model {config.model})")
    print(redact("\n".join(table(found))))
    print(f"written     {out}")
    return 0
