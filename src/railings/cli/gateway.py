"""``railings gateway`` (run the gateway) and ``railings gateway-log`` (read its journal)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import signal
import sys
from typing import Any

from rich.markup import escape

from railings._extras import require
from railings.cli._common import (
    InputError,
    UsageError,
    chosen_profile,
    console,
    log_requests,
    port,
    positive,
    say,
    stop_on_sigterm,
)
from railings.cli.journal import journal_option, open_journal
from railings.errors import ConfigurationError
from railings.journal import default_path
from railings.turn.usage import describe

__all__ = ["register"]

GATEWAY_HELP = """\
Run railings' proof rule in front of a model API, for any client in any
language: point its base URL at the gateway (OpenAI SDKs:
http://127.0.0.1:PORT/v1; Anthropic SDKs: http://127.0.0.1:PORT). Streams pass
byte for byte; one that ends without its provider's proof is resent when
nothing had arrived (Empty), or ended with a provider-shaped error event
(Partial); a tool call cut by the output limit is refused (--cut-calls refuse).
Keys are forwarded upstream and never logged. GET /_railings/health,
GET /_railings/metrics (Prometheus). Its URL goes to stderr once it listens.

exit codes: 0 stopped (Ctrl-C, SIGTERM); 2 a usage error, or no gateway extra.
"""


def register(commands: Any) -> None:
    """Add ``railings gateway`` and ``railings gateway-log`` to the command line."""
    parser = commands.add_parser(
        "gateway",
        help="the proof rule as an HTTP gateway for any client",
        description=GATEWAY_HELP,
    )
    parser.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="origin (and optional path prefix) requests go to, e.g. https://api.openai.com",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=port, default=8787, metavar="PORT", help="port (default 8787; 0: a free one)"
    )
    parser.add_argument(
        "--cut-calls",
        choices=("refuse", "pass"),
        default="refuse",
        help="a tool call cut by the output limit: refuse the answer (default) or pass it",
    )
    parser.add_argument(
        "--network",
        choices=("stock", "asyncio"),
        default="stock",
        help="the upstream connections' backend: httpx2's own on anyio (default), or "
        "railings' asyncio backend, less CPU per event",
    )
    parser.add_argument(
        "--profile",
        metavar="NAME|FILE",
        help="the upstream's endpoint profile: a built-in's name or a file (default: the"
        " one matching the upstream URL, from RAILINGS_PROFILES or the built-ins)",
    )
    where = parser.add_mutually_exclusive_group()
    journal_option(where)
    where.add_argument("--no-journal", action="store_true", help="keep no journal")
    parser.set_defaults(run=run_gateway)

    view = commands.add_parser(
        "gateway-log",
        help="the turns a gateway proxied, from its journal",
        description="List the turns the gateway journaled: time, provider, model, status,\n"
        "outcome, attempts, timings, usage and refused calls.\n\n"
        "exit codes: 0 listed; 2 usage error, or a journal that is not a usable\n"
        "database.",
    )
    journal_option(view)
    view.add_argument("--limit", type=positive, default=50, metavar="N", help="last N turns")
    view.add_argument("--json", action="store_true", help="one JSON object per line")
    view.set_defaults(run=run_gateway_log)


def run_gateway(args: argparse.Namespace) -> int:
    require("the gateway", "uvicorn")
    from railings.gateway import app
    from railings.gateway.serve import bind, is_loopback, serve, url_of
    from railings.gateway.upstream import upstream_shown

    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        raise InputError(f"cannot bind {args.host}:{args.port}: {exc}") from None
    try:
        gateway = app(
            args.upstream,
            cut_calls=args.cut_calls,
            network=args.network,
            journal=False if args.no_journal else (args.journal or True),
            profile=None if args.profile is None else chosen_profile(args.profile),
        )
    except ConfigurationError as exc:
        sock.close()
        raise UsageError(str(exc)) from None
    host = sock.getsockname()[0]
    if not is_loopback(host):
        say(
            "gateway",
            f"warning: the gateway listens on {host}, beyond loopback: anyone who "
            "can reach it can use the upstream through it",
        )
    log_requests("gateway", "railings.gateway")
    journal = "no journal" if gateway.journal is None else f"journal {gateway.journal.journal.path}"
    # uvicorn shuts down gracefully on SIGINT / SIGTERM, then raises the signal again;
    # both are how a server is meant to stop, so both end with exit code 0, also when
    # the signal comes before uvicorn has taken the handlers over.
    stop_on_sigterm()
    with contextlib.suppress(KeyboardInterrupt):
        say(
            "gateway",
            f"listening on {url_of(sock)} -> {upstream_shown(gateway.upstream)} "
            f"(cut calls: {args.cut_calls}; network: {args.network}; {journal})",
        )
        serve(gateway, sock)
    if not gateway.closed:  # stopped before the server ran its shutdown (or forced)
        # Another Ctrl-C now must not cut the close short: the journal's session would be
        # left running. Closing takes as long as writing what is queued.
        held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            asyncio.run(gateway.aclose())
        finally:
            for sig, previous in held.items():
                signal.signal(sig, previous)
    return 0


def run_gateway_log(args: argparse.Namespace) -> int:
    """``railings gateway-log``: the turns the gateways journaled, oldest first."""
    from railings.gateway.record import log_field  # the per-call log line's escaping

    rows: list[dict[str, Any]] = []
    with open_journal(args.journal, create=False) as journal:  # reading never creates one
        try:
            for info in journal.sessions(limit=1_000_000):
                if not info.title.startswith("gateway "):
                    continue
                for entry in journal.entries(info.id):
                    if entry.kind == "gateway_turn" and not entry.damaged:
                        rows.append({"session": info.id, "at": entry.at, **entry.data})
        except ConfigurationError as exc:  # a damaged journal: one line, exit 2
            raise InputError(str(exc)) from None
    rows.sort(key=lambda r: float(r["at"]))
    rows = rows[-args.limit :]
    if args.json:
        for row in rows:
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        return 0
    out = console()
    if not rows:
        out.print(f"no gateway turns in {args.journal or default_path()}")
    for r in rows:
        when = datetime.datetime.fromtimestamp(float(r["at"])).strftime("%Y-%m-%d %H:%M:%S")
        usage = r.get("usage")
        tokens = escape(describe(usage)) if isinstance(usage, dict) else "-"
        took = r.get("duration_s")
        line = (
            f"{when}  {r.get('provider')}  {escape(log_field(str(r.get('model') or '-')))}  "
            f"{r.get('status')}  {r.get('outcome')}  attempts={r.get('attempts')}  "
            f"{'-' if took is None else f'{took:.3f}s'}  {tokens}"
        )
        if r.get("rejected"):
            # Chosen by a client or the model: escaped as the log line escapes them, so
            # no newline forges a row and no escape sequence reaches the terminal.
            line += "  refused: " + escape(", ".join(log_field(str(n)) for n in r["rejected"]))
        out.print(line)
    return 0
