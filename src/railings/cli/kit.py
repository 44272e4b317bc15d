"""``railings serve`` and ``railings proxy``: the test kit on the command line."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from typing import Any

from railings.cli._common import UsageError, upstream_origin
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
  boto3:          client("bedrock-runtime", endpoint_url="http://127.0.0.1:PORT")
  ollama:         Client(host="http://127.0.0.1:PORT")

Without --script it plays the bundled demonstration (a short coding-agent run
whose second tool call is cut by max_tokens=1024). Binds to 127.0.0.1 unless
--host says otherwise. Runs until Ctrl-C.

exit codes: 0 stopped with Ctrl-C; 2 usage error (bad script, port in use).
"""

PROXY_HELP = """\
Run the fault-injection proxy in front of an upstream model endpoint. It speaks
HTTP and each stream's framing (SSE events, Bedrock event-stream frames, Ollama
NDJSON lines), so faults act on events, not just bytes. Every request gets the
--fault given here; a request header `x-railings-fault: SPEC` overrides it.

fault SPEC is NAME or NAME:key=value,key=value. Names: truncate, drop_terminator,
cut_mid_event, idle, reorder, duplicate, reset, close_after_terminator, drip,
status, error_event, corrupt (docs/test-kit.md lists their parameters). Examples:
  truncate:events=5      status:code=429,retry_after=2      idle:events=3,seconds=30

Binds to 127.0.0.1 unless --host says otherwise. Runs until Ctrl-C.

exit codes: 0 stopped with Ctrl-C; 2 usage error (bad fault spec, bad URL).
"""


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {text!r}")
    return value


def register(commands: Any) -> None:
    """Add ``railings serve`` (the scripted model server) and ``railings proxy`` (the fault
    proxy) to the subcommands; both bind to 127.0.0.1 unless ``--host`` says otherwise."""
    serve = commands.add_parser(
        "serve",
        help="run the scripted model server",
        description=SERVE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--script", metavar="FILE", help="a JSON script (default: the demo)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=0, help="port (default: a free one)")
    serve.add_argument("--quiet", action="store_true", help="no line per request on stderr")
    serve.set_defaults(run=run_serve)

    proxy = commands.add_parser(
        "proxy",
        help="run the fault-injection proxy",
        description=PROXY_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    proxy.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the upstream's origin, e.g. http://127.0.0.1:8000; paths are appended as they came",
    )
    proxy.add_argument("--fault", metavar="SPEC", help="fault for every request (default: none)")
    proxy.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    proxy.add_argument("--port", type=_port, default=0, help="port (default: a free one)")
    proxy.add_argument("--quiet", action="store_true", help="no line per request on stderr")
    proxy.set_defaults(run=run_proxy)


def _access_log(logger: str, command: str, quiet: bool) -> None:
    """One line per request on stderr, ``railings: serve: POST /v1/... -> 200 (...)``."""
    if quiet:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"railings: {command}: %(message)s"))
    log = logging.getLogger(logger)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def _warn_if_exposed(host: str) -> None:
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        print(
            f"railings: warning: listening on {host}, beyond loopback: other machines can reach it",
            file=sys.stderr,
        )


def run_serve(args: argparse.Namespace) -> int:
    from railings.testing import Script, ScriptedServer

    try:
        script = Script.load(args.script) if args.script else Script.demo()
        server = ScriptedServer(script, host=args.host, port=args.port)
    except (ConfigurationError, OSError) as exc:
        raise UsageError(f"serve: {exc}") from None
    _warn_if_exposed(args.host)
    _access_log("railings.testing.server", "serve", args.quiet)

    def ready(s: Any) -> None:
        print(f"railings: scripted model server on {s.url}", flush=True)
        print(f"  OpenAI base_url:    {s.openai_base_url}", flush=True)
        print(f"  Anthropic base_url: {s.anthropic_base_url}", flush=True)

    try:
        server.serve_forever(ready=ready)
    except OSError as exc:
        raise UsageError(
            f"serve: cannot listen on {args.host}:{args.port}: {exc.strerror}"
        ) from None
    return 0


def run_proxy(args: argparse.Namespace) -> int:
    """``railings proxy``: the fault proxy in front of ``--upstream`` until Ctrl-C."""
    from railings.testing import FaultProxy

    args.upstream = upstream_origin(args.upstream, "proxy")
    try:
        proxy = FaultProxy(args.upstream, fault=args.fault, host=args.host, port=args.port)
    except (ConfigurationError, ValueError) as exc:
        raise UsageError(f"proxy: {exc}") from None
    _warn_if_exposed(args.host)
    _access_log("railings.testing.proxy", "proxy", args.quiet)

    def ready(p: Any) -> None:
        print(
            f"railings: fault proxy on {p.url} -> {args.upstream} (fault: {args.fault or 'none'})",
            flush=True,
        )

    try:
        proxy.serve_forever(ready=ready)
    except OSError as exc:
        raise UsageError(
            f"proxy: cannot listen on {args.host}:{args.port}: {exc.strerror}"
        ) from None
    return 0
