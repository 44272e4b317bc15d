"""``railings serve`` and ``railings proxy``: the test kit on the command line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from railings.cli._common import (
    InputError,
    UsageError,
    log_requests,
    port,
    say,
    stop_on_sigterm,
    upstream_origin,
)
from railings.errors import ConfigurationError

__all__ = ["register"]

SERVE_HELP = """\
Run the scripted model server: OpenAI-compatible POST /v1/chat/completions and
POST /v1/responses, an Anthropic-compatible POST /v1/messages, Gemini's
POST /v1beta/models/{model}:streamGenerateContent (and :generateContent),
Bedrock's POST /model/{modelId}/converse-stream (and /converse) and Ollama's
POST /api/chat and /api/generate (streaming and not), driven by a deterministic
script. Point any client at it:

  OpenAI SDK:     base_url = http://127.0.0.1:PORT/v1
  Anthropic SDK:  base_url = http://127.0.0.1:PORT
  google-genai:   http_options = {"base_url": "http://127.0.0.1:PORT"}
  boto3:          client("bedrock-runtime",
                         endpoint_url="http://127.0.0.1:PORT")
  ollama:         Client(host="http://127.0.0.1:PORT")

Without --script it plays the bundled demonstration (a short coding-agent run
whose second tool call is cut by max_tokens=1024). Binds to 127.0.0.1 unless
--host says otherwise. Its URLs go to stderr once it listens. Runs until Ctrl-C
or SIGTERM.

exit codes: 0 stopped (Ctrl-C, SIGTERM); 2 usage error (bad script, port in
use).
"""

PROXY_HELP = """\
Run the fault-injection proxy in front of an upstream model endpoint. It speaks
HTTP and each stream's framing (SSE events, Bedrock event-stream frames, Ollama
NDJSON lines), so faults act on events, not just bytes. Every request gets the
--fault given here; a request header `x-railings-fault: SPEC` overrides it.

fault SPEC is NAME or NAME:key=value,key=value. Names: truncate,
drop_terminator, cut_mid_event, idle, reorder, duplicate, reset,
close_after_terminator, drip, status, error_event, corrupt (their parameters:
python -m pydoc railings.testing.faults). Examples:
  truncate:events=5    status:code=429,retry_after=2    idle:events=3,seconds=30

Binds to 127.0.0.1 unless --host says otherwise. Its URL goes to stderr once it
listens. Runs until Ctrl-C or SIGTERM.

exit codes: 0 stopped (Ctrl-C, SIGTERM); 2 usage error (bad fault spec, bad
URL).
"""


def register(commands: Any) -> None:
    """Add ``railings serve`` (the scripted model server) and ``railings proxy`` (the fault
    proxy) to the subcommands; both bind to 127.0.0.1 unless ``--host`` says otherwise."""
    serve = commands.add_parser(
        "serve",
        help="run the scripted model server",
        description=SERVE_HELP,
    )
    serve.add_argument("--script", metavar="FILE", help="a JSON script (default: the demo)")

    proxy = commands.add_parser(
        "proxy",
        help="run the fault-injection proxy",
        description=PROXY_HELP,
    )
    proxy.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the upstream's origin, e.g. http://127.0.0.1:8000; paths are appended as they came",
    )
    proxy.add_argument("--fault", metavar="SPEC", help="fault for every request (default: none)")
    for parser, run in ((serve, run_serve), (proxy, run_proxy)):
        parser.add_argument(
            "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)"
        )
        parser.add_argument(
            "--port", type=port, default=0, metavar="PORT", help="port (default: a free one)"
        )
        parser.add_argument("--quiet", action="store_true", help="no line per request on stderr")
        parser.set_defaults(run=run)


def _warn_if_exposed(host: str, command: str) -> None:
    from railings.gateway.serve import is_loopback  # the gateway's warning asks it too

    if not is_loopback(host):
        say(command, f"warning: listening on {host}, beyond loopback: other machines can reach it")


def run_serve(args: argparse.Namespace) -> int:
    from railings.testing import Script, ScriptedServer

    try:
        script = Script.load(args.script) if args.script else Script.demo()
        server = ScriptedServer(script, host=args.host, port=args.port)
    except ConfigurationError as exc:
        unreadable = exc.__cause__
        if isinstance(unreadable, OSError):  # the path once, then why
            raise InputError(f"--script {args.script}: {unreadable.strerror}") from None
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(str(exc)) from None

    def ready(s: Any) -> None:
        say("serve", f"listening on {s.url} (the scripted model server)")
        say("serve", f"  OpenAI base_url:    {s.openai_base_url}")
        say("serve", f"  Anthropic base_url: {s.anthropic_base_url}")

    return _serve(server, ready, args, "serve", "railings.testing.server")


def run_proxy(args: argparse.Namespace) -> int:
    """``railings proxy``: the fault proxy in front of ``--upstream`` until Ctrl-C."""
    from railings.testing import FaultProxy

    args.upstream = upstream_origin(args.upstream, "proxy")
    try:
        proxy = FaultProxy(args.upstream, fault=args.fault, host=args.host, port=args.port)
    except (ConfigurationError, ValueError) as exc:
        raise UsageError(str(exc)) from None

    def ready(p: Any) -> None:
        say("proxy", f"listening on {p.url} -> {args.upstream} (fault: {args.fault or 'none'})")

    return _serve(proxy, ready, args, "proxy", "railings.testing.proxy")


def _serve(
    server: Any, ready: Callable[[Any], None], args: argparse.Namespace, command: str, logger: str
) -> int:
    """Run ``server`` until Ctrl-C or SIGTERM: a warning first when other machines can
    reach it, and ``logger``'s line per request on stderr unless ``--quiet``
    (``railings serve: POST /v1/... -> 200 (...)``)."""
    _warn_if_exposed(args.host, command)
    if not args.quiet:
        log_requests(command, logger)
    stop_on_sigterm()
    try:
        server.serve_forever(ready=ready)
    except OSError as exc:
        raise InputError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    return 0
