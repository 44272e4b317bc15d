"""``railings matrix``: the fault matrix, on the embedded scripted server or a real endpoint."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from railings._extras import require
from railings.cli._common import InputError, UsageError, console, positive, upstream_origin

__all__ = ["register", "run"]

HELP = """\
Run the fault matrix: fault classes x payload sizes (small 1 KB, medium 64 KB,
large 1 MB of text or tool arguments) x providers (openai, anthropic,
openai-responses, gemini, bedrock, ollama) x with and without a tool call cut by
max_tokens. Every cell
streams a scripted answer from the embedded scripted server through the fault
proxy (both on 127.0.0.1, free ports) into a client, and holds the result to
one rule: every faulted stream is detected (a typed error or an interrupted
verdict; Empty resent, Partial returned as-is), every clean stream returns the
full text exactly, a tool call cut by max_tokens is never executed (a spy tool,
through a real dispatch), and the proven-then-broken case -- the proof arrived,
then the connection broke -- is reported as complete. Reorder and duplicate are
beyond what Chat Completions and Messages can show (no sequence numbers): "~",
never a failure. No API key, no network.

--client railings+resume runs railings asking the provider to keep each response
(OpenAI Responses, background: true) on the openai-responses cells: a broken
stream is read again from after its last whole event, generated once ("↻"),
and the proxy breaks each stream read again as it broke the first.

--client compares: openai-sdk (Chat Completions and Responses), anthropic-sdk,
google-genai (Gemini), boto3 (Bedrock converse_stream), ollama (the official
packages, streamed as their docs show) and the first two over railings.guard.
Their columns say what they did (returned the full text; UNDETECTED: returned
less, or no proof, without a word; raised which exception) and never change the
exit code.

--upstream URL runs the same faults against a real endpoint (its origin, e.g.
https://api.openai.com; the key from OPENAI_API_KEY / ANTHROPIC_API_KEY; --model
required). The answer is then whatever the endpoint says: the proxy keeps a copy
of each upstream body, and that copy is the reference. A mid-stream fault lands
on a guessed event there, so a fault that hits before any content may also end
as Empty, resent, then a typed error. It costs real tokens: sizes default to
small. An upstream that cannot be reached stops the run before any cell.

exit codes: 0 every railings cell as expected; 1 a railings cell failed (listed)
or the run itself failed; 2 usage error, or an unreachable --upstream.
"""


def _names(kind: str, known: Sequence[str]) -> Any:
    def parse(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if unknown or not names:
            raise argparse.ArgumentTypeError(
                f"unknown {kind} {', '.join(unknown) or repr(text)}: expected {', '.join(known)}"
            )
        return list(dict.fromkeys(names))

    return parse


def register(commands: Any) -> None:
    """Add ``railings matrix`` to the subcommands; its choices come from :mod:`railings.matrix`."""
    from railings.matrix import CLIENTS, FAULT_CASES, PROVIDERS, SIZES

    parser = commands.add_parser(
        "matrix",
        help="run the fault matrix (faults x sizes x providers x cut tool call)",
        description=HELP,
    )
    parser.add_argument(
        "--client",
        type=_names("client", [*CLIENTS, "all"]),
        default=["railings"],
        metavar="NAME[,NAME]",
        help=f"client(s) to run: {', '.join(CLIENTS)} or all (default: railings)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a subset: the main fault classes, small payloads (a few seconds)",
    )
    parser.add_argument(
        "--faults",
        type=_names("fault", [f.name for f in FAULT_CASES]),
        metavar="F[,F]",
        help="fault classes (default: all)",
    )
    parser.add_argument(
        "--sizes",
        type=_names("size", list(SIZES)),
        metavar="S[,S]",
        help=f"payload sizes: {', '.join(SIZES)} (default: all)",
    )
    parser.add_argument(
        "--providers",
        type=_names("provider", list(PROVIDERS)),
        metavar="P[,P]",
        help=f"{', '.join(PROVIDERS)} (default: all)",
    )
    parser.add_argument(
        "--jobs", type=positive, default=None, metavar="N", help="cells run at once (default 16)"
    )
    parser.add_argument(
        "--upstream", metavar="URL", help="a real endpoint's origin instead of the embedded server"
    )
    parser.add_argument("--model", help="the model to ask (with --upstream)")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the selected cells and print the table (or ``--json``); the exit code.

    0 when every railings cell held to the rule, 1 when one failed; the SDK columns never
    change it. Filters that leave no cell, or a bad ``--upstream`` / ``--model``, are a
    usage error.
    """
    from railings.matrix import CLIENTS, QUICK_FAULTS, grid, run_matrix
    from railings.matrix.report import progress, render, to_json
    from railings.matrix.run import DEFAULT_JOBS, count

    upstream = _upstream(args)
    names = list(CLIENTS) if "all" in args.client else args.client
    clients = [CLIENTS[n]() for n in names]
    for client in clients:  # before any cell runs: one line and exit 2, not a traceback per cell
        require(f"--client {client.name}", *client.requires)
    if upstream is not None:  # before any cell runs, too: one line, not a FAIL per cell
        problem = asyncio.run(upstream.unreachable())
        if problem is not None:
            raise InputError(f"--upstream {upstream.url}: unreachable ({problem})")
    faults = args.faults or (list(QUICK_FAULTS) if args.quick else None)
    sizes = args.sizes or (["small"] if args.quick or upstream else None)
    cells = grid(faults, sizes, args.providers)
    total = count(cells, clients)
    if total == 0:
        speaks = "; ".join(f"{c.name} speaks {', '.join(sorted(c.providers))}" for c in clients)
        raise UsageError(f"no cells to run with these filters ({speaks})")

    err = console(stderr=True)
    with progress(err, total, enabled=err.is_terminal and not args.json) as advance:
        result = asyncio.run(
            run_matrix(
                cells, clients, upstream=upstream, jobs=args.jobs or DEFAULT_JOBS, on_result=advance
            )
        )
    if args.json:
        options = {
            "clients": names,
            "faults": faults,
            "sizes": sizes,
            "providers": args.providers,
            "quick": args.quick,
            "model": args.model,
        }
        sys.stdout.write(to_json(result, options=options) + "\n")
    else:
        render(console(wrap=True), result)
    return result.exit_code


def _upstream(args: argparse.Namespace) -> Any:
    from railings.matrix.run import Upstream

    if args.upstream is None:
        if args.model is not None:
            raise UsageError(
                "--model goes with --upstream (the embedded server has one scripted model)"
            )
        return None
    parts = urlsplit(args.upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--upstream must be an http(s) URL, got {args.upstream!r}")
    args.upstream = upstream_origin(args.upstream, "matrix")
    if not args.model:
        raise UsageError("--upstream needs --model (the model to ask)")
    return Upstream(args.upstream.rstrip("/"), args.model)
