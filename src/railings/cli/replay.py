"""``railings replay FILE``: judge a captured response body, offline."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.markup import escape

from railings.agent.view import clip, visible
from railings.cli._common import InputError, chosen_profile, console, positive, say
from railings.providers import NAMES
from railings.replay import Replay, replay, to_json
from railings.turn.usage import describe, usage_fields
from railings.turn.verdict import CallVerdict, RejectReason, cut_at_limit

__all__ = ["register", "run"]

HELP = """\
Read a captured streamed response body (the raw bytes: text/event-stream,
Bedrock's application/vnd.amazon.eventstream frames, Ollama's NDJSON lines, or
Gemini's whole JSON array) and report what railings makes of it: did the
provider prove the turn finished, what is the stop reason (from the wire or
derived), was the turn truncated, and which tool calls may execute.

The report is the same whatever --chunk-size is: the decoder is incremental.
FILE may be - to read the body from standard input:

  curl -sN https://... -d @request.json | railings replay -

exit codes: 0 the file was replayed (whatever the verdict); 2 usage error
(missing file, unknown provider, bad option).
"""


def register(commands: Any) -> None:
    """Add ``railings replay FILE`` to the subcommands."""
    parser = commands.add_parser(
        "replay",
        help="judge a captured stream body offline",
        description=HELP,
    )
    parser.add_argument(
        "file", metavar="FILE", help="raw response body (as it came); - reads standard input"
    )
    parser.add_argument(
        "--provider",
        choices=(*NAMES, "auto"),
        default="auto",
        metavar="NAME",
        help=f"wire format: {', '.join(NAMES)} or auto (default: detected from the "
        "first bytes, then the first event)",
    )
    parser.add_argument(
        "--max-tokens",
        type=positive,
        metavar="N",
        help=(
            "the max_tokens the request was sent with: billed output that reaches it is"
            " truncation, whatever the stop reason (and a missing stop reason is derived)"
        ),
    )
    parser.add_argument(
        "--chunk-size",
        type=positive,
        metavar="N",
        help="feed the body N bytes at a time (default: whole)",
    )
    parser.add_argument(
        "--choice",
        type=_choice,
        default=None,
        metavar="N",
        help="for a Chat Completions stream with n > 1: the choice to judge (default 0)",
    )
    parser.add_argument(
        "--profile",
        metavar="NAME|FILE",
        help="judge by an endpoint profile: a built-in's name (openai, anthropic, ...), or a"
        " file (default: none, the wire's own proof)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def _choice(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a choice index (0, 1, ...), got {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    """Replay one captured body (``-``: standard input) and print the report; 0 whatever the
    verdict. A file that cannot be read is a usage error. Warns on stderr when the body looks
    like a JSON answer, or when no stop reason and no ``--max-tokens`` hide a truncation."""
    path = Path(args.file)
    try:
        body = sys.stdin.buffer.read() if args.file == "-" else path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a directory, not a file") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    result = replay(
        body,
        provider=args.provider,
        max_tokens=args.max_tokens,
        chunk_size=args.chunk_size,
        choice=args.choice or 0,
        profile=chosen_profile(args.profile),
    )
    json_like = (
        result.framing == "sse" and b"data:" not in body and body.lstrip()[:1] in (b"{", b"[")
    )
    # An error answer saved or piped instead of a stream: say so, not only "EMPTY".
    # Escaped: a binary file's control bytes must not reach the terminal.
    start = visible(body.strip()[:160].decode("utf-8", "replace"))
    looks = f"it looks like a JSON response (an HTTP error?): {start}" if json_like else ""
    if result.sse_events == 0 and args.provider == "auto":
        # Nothing to detect a format from: naming one would be a guess.
        raise InputError(
            f"{args.file} holds no server-sent event ({len(body)} bytes); "
            + (looks or "not a captured stream body (--provider NAME judges it as empty)")
        )
    _check_choice(args.choice, result.choices)
    if json_like:
        say("replay", f"warning: the body holds no SSE event; {looks}")
    if result.turn.stop_reason_source == "derived" and args.max_tokens is None:
        say(
            "replay",
            "warning: the stream carried no stop reason and --max-tokens was not given, "
            "so a truncation cannot be recognized",
        )
    if args.json:
        sys.stdout.write(json.dumps(to_json(result), ensure_ascii=False) + "\n")
    else:
        _summary(result)
    return 0


def _check_choice(asked: int | None, carried: frozenset[int]) -> None:
    """``--choice`` must name a choice the stream carried; several choices and no
    ``--choice`` get a note, so choice 0 is not taken for the whole answer."""
    listed = ", ".join(map(str, sorted(carried)))
    if asked is not None and carried and asked not in carried:
        raise InputError(f"--choice {asked}: the stream carried choices {listed}")
    if asked is None and len(carried) > 1:
        say(
            "replay",
            f"note: the stream carried {len(carried)} choices ({listed}); this is "
            "choice 0 (--choice N for another)",
        )


def _summary(result: Replay) -> None:
    """The report. Everything that came from the body is shown with its control
    characters escaped (:func:`_shown`). On a terminal, long lines wrap at word
    boundaries; to a pipe, each fact stays one line, for grep."""
    out = console(wrap=True)
    turn = result.turn
    if turn.complete:
        head = "[green]finished[/]: the provider's termination proof arrived"
    else:
        why = turn.error.message if turn.error else ""
        head = f"[red]NOT finished[/]: {turn.outcome.value.upper()} ({_shown(why)})"
    out.print(f"[bold]{turn.provider}[/] stream {head}")
    line = f"stop reason: [bold]{_shown(turn.stop_reason or '-')}[/]"
    if turn.stop_reason_source == "wire":
        line += _shown(f" (from the wire: {turn.stop_reason_wire})")
    elif turn.stop_reason_source == "derived":
        line += " (derived: the stream carried none)"
    if turn.truncated:
        line += "  [red]TRUNCATED by the output limit[/]"
        limit = cut_at_limit(turn)
        if limit is not None:  # the stop reason said otherwise: say why
            line += f" (billed output reached the limit of {limit} tokens)"
    out.print(line)
    out.print(f"usage: {describe(usage_fields(turn.usage))}")
    if turn.unknown_events:
        out.print(
            f"[yellow]{turn.unknown_events} event(s) of a kind this {turn.provider} decoder does "
            "not know[/] (is --provider right?)"
        )
    if turn.error and turn.error.provider_type:
        out.print(
            f"provider error: {_shown(turn.error.provider_type)}: {_shown(turn.error.message)}"
        )
    for label, value in (
        ("thinking", turn.thinking),
        ("text", turn.text),
        ("refusal", turn.refusal),
    ):
        if value:
            out.print(f"[dim]{label}:[/] {_shown(clip(value, 400), prose=True)}")
    for v in result.verdicts:
        out.print(_call_line(v))
    for c in turn.server_tool_calls:
        missing = "" if c.result_arrived else " - no result block"
        out.print(f"server tool {_shown(c.name)} ({c.kind}, run by the provider){missing}")


def _call_line(v: CallVerdict) -> str:
    """One tool call and the whole story of its verdict, as one line."""
    call = v.call
    if v.execute and call.type == "mcp_approval":
        tag = "[yellow]pending approval[/]: the client must approve or deny it"
    elif v.execute and v.repaired:
        # The whole story: a tool that takes exact arguments only refuses this call.
        tag = (
            "[yellow]execute (repaired)[/]: only by a tool that accepts repaired arguments;"
            " repair=False tools (the built-in shell and write_file) refuse it"
        )
    elif v.execute:
        tag = "[green]execute[/]"
    else:
        tag = f"[red]NOT executed[/]: {v.reason.value if v.reason else ''}"
        if v.reason is RejectReason.TRUNCATED and not call.provable:
            tag += " (its completeness cannot be checked)"
    raw = _shown(clip(call.raw_arguments, 200))
    what = "tool call" if call.type == "function" else f"{call.type} call"
    origin = " (arguments arrived parsed)" if call.origin == "parsed" else ""
    return f"{what} #{call.index} [bold]{_shown(call.name)}[/] {raw}{origin} -> {tag}"


def _shown(text: str, *, prose: bool = False) -> str:
    """``text`` from the body, for the report: control characters as their escapes
    (ESC as ``\\x1b``; newlines too unless ``prose``), rich markup escaped."""
    return escape(visible(text, prose=prose))
