"""``railings run``, ``railings chat``, ``railings sessions``, ``railings show``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from railings.agent.loop import Agent, RunResult, RunStatus
from railings.agent.view import TerminalView
from railings.cli import chat as chat_cli
from railings.cli._common import UsageError, console, positive, run_until_stopped, say
from railings.cli.endpoint import (
    DEFAULT_MODELS,
    DEMO_MAX_TOKENS,
    PROVIDER_CHOICE,
    Endpoint,
    endpoint_for,
)
from railings.cli.journal import journal_option, open_journal
from railings.cli.prompts import approver, needs_approval, read_line
from railings.dispatch import ToolRegistry, builtin_tools
from railings.dispatch.shell import protect_process
from railings.errors import CannotContinue
from railings.providers import SPECS
from railings.redact import redact_json
from railings.replay import Replay, to_json
from railings.transport import AsyncProviderClient
from railings.turn.verdict import judge

# DEFAULT_MODELS and DEMO_MAX_TOKENS live in railings.cli.endpoint, importable here too.
__all__ = ["DEFAULT_MODELS", "DEMO_MAX_TOKENS", "register"]

EXIT_CODES = """\
exit codes:
  0  the model ended its turn
  1  any other error (authentication, bad request, retries exhausted): one
     line on stderr
  2  usage error (bad flag, bad value, unreadable workdir)
  3  the run ended on an interrupted (Partial) turn: what arrived is shown,
     nothing ran
  4  stopped by the turn limit or the circuit breaker
  130, 143  stopped by Ctrl-C (SIGINT) or SIGTERM: the journal session ends
     interrupted
"""

RUN_HELP = (
    "Run one task with a tool-using agent, then exit.\n\n" + PROVIDER_CHOICE + "\n" + EXIT_CODES
)
CHAT_HELP = (
    "Talk to a tool-using agent; the conversation is kept across lines.\n"
    "/exit or Ctrl-D ends it.\n\n" + PROVIDER_CHOICE
)

BUILTIN_NAMES = ("shell", "read_file", "write_file", "list_dir")


# A turn of `railings run` never hangs forever, whatever the server does: 30 minutes is
# twice what 32k tokens take at a slow 40 tokens a second.
DEFAULT_TURN_DEADLINE = 1800.0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--demo",
        action="store_true",
        help="use the embedded scripted model (no key, no network), whatever the environment holds",
    )
    parser.add_argument(
        "--provider",
        choices=tuple(s.name for s in SPECS),
        metavar="NAME",
        help="wire format of the endpoint: " + ", ".join(f"{s.name} ({s.title})" for s in SPECS),
    )
    parser.add_argument(
        "--base-url", metavar="URL", help="endpoint base URL, as the official SDK takes it"
    )
    parser.add_argument(
        "--profile",
        metavar="NAME|FILE",
        help="the endpoint's profile: a built-in's name or a file (default: the one"
        " matching --base-url, from RAILINGS_PROFILES or the built-ins)",
    )
    parser.add_argument(
        "--model",
        help="model name (default per provider: "
        + ", ".join(f"{s.name} {s.default_model}" for s in SPECS)
        + ")",
    )
    parser.add_argument(
        "--max-tokens",
        type=positive,
        metavar="N",
        help="output limit per turn (default 4096; 1024 on the embedded demo)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="ask the provider to keep each response (openai-responses: background), "
        "and read a broken stream again instead of ending the turn Partial",
    )
    parser.add_argument(
        "--max-turns",
        type=positive,
        default=20,
        metavar="N",
        help="stop after N turns (default 20)",
    )
    parser.add_argument(
        "--workdir",
        metavar="DIR",
        help="the tools' working directory; they never act outside it (default: .)",
    )
    parser.add_argument(
        "--tools",
        metavar="LIST",
        help=f"comma-separated tools to offer (default: {','.join(BUILTIN_NAMES)}; or 'none')",
    )
    parser.add_argument(
        "--system", metavar="TEXT", help="system prompt (default: a short coding-agent prompt)"
    )
    parser.add_argument(
        "--yes",
        action="store_true",
        help="allow every shell command, and every write that configures later commands "
        "(.git/, Makefile, .envrc, ...), without asking",
    )
    parser.add_argument(
        "--pass-env",
        action="append",
        default=[],
        metavar="NAMES",
        help="let shell commands see these environment variables too (comma-separated, "
        "repeatable; NAME* matches a prefix). Without it a command sees only PATH, HOME, "
        "LANG, LC_*, TERM, TMPDIR, USER, LOGNAME, SHELL and TZ: never an API key",
    )
    parser.add_argument(
        "--idle-timeout",
        type=_seconds,
        default=30.0,
        metavar="S",
        help="fail a stream silent for S seconds (default 30)",
    )
    parser.add_argument(
        "--content-idle",
        type=_seconds,
        default=300.0,
        metavar="S",
        help="fail a stream that sends only keep-alives (comments, pings) for S seconds "
        "once content has begun (default 300)",
    )
    parser.add_argument(
        "--total-timeout",
        type=_seconds,
        default=DEFAULT_TURN_DEADLINE,
        metavar="S",
        help="fail a turn's request that takes longer than S seconds in all "
        f"(default {DEFAULT_TURN_DEADLINE:g}, per attempt)",
    )
    journal_option(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a machine-readable transcript on stdout (the live view goes to stderr)",
    )


def register(commands: Any) -> None:
    """Add ``railings run`` and ``railings chat`` to the command line."""
    run = commands.add_parser(
        "run",
        help="run one task with the agent",
        description=RUN_HELP,
    )
    run.add_argument("task", metavar="TASK", help="what the agent should do")
    _agent_options(run)
    run.set_defaults(run=run_task)

    chat = commands.add_parser(
        "chat",
        help="talk to the agent interactively",
        description=CHAT_HELP,
        epilog=chat_cli.CHAT_EPILOG,
    )
    _agent_options(chat)
    chat.set_defaults(run=run_chat)


def _tool_names(args: argparse.Namespace) -> tuple[str, ...]:
    """The tools ``--tools`` asks for, checked before anything starts."""
    if args.tools is None:
        return BUILTIN_NAMES
    if args.tools.strip() == "none":
        return ()
    wanted = tuple(t.strip() for t in args.tools.split(",") if t.strip())
    unknown = [name for name in wanted if name not in BUILTIN_NAMES]
    if unknown:
        raise UsageError(
            f"--tools: unknown tool {unknown[0]!r} (known: {', '.join(BUILTIN_NAMES)})"
        )
    return wanted


def _pass_env(args: argparse.Namespace) -> tuple[str, ...]:
    """The variables ``--pass-env`` names, checked before anything starts."""
    names = tuple(n.strip() for given in args.pass_env for n in given.split(",") if n.strip())
    for name in names:
        bare = name.removesuffix("*")
        if not bare or not all(c.isalnum() or c == "_" for c in bare):
            raise UsageError(f"--pass-env: {name!r} is not a variable name (or NAME*)")
    return names


# -- run and chat ---------------------------------------------------------------------------


def _exit_code(result: RunResult) -> int:
    return {
        RunStatus.COMPLETED: 0,
        RunStatus.INTERRUPTED: 3,
        RunStatus.TURN_LIMIT: 4,
        RunStatus.CIRCUIT_OPEN: 4,
        RunStatus.ERROR: 1,
    }[result.status]


def _transcript(results: list[tuple[str, RunResult]], endpoint: Endpoint) -> dict[str, Any]:
    runs = [
        {
            "task": task,
            "status": result.status.value,
            "exit_code": _exit_code(result),
            "error": None
            if result.error is None
            else {"type": type(result.error).__name__, "message": str(result.error)},
            "turns": [to_json(Replay(turn, judge(turn))) for turn in result.turns],
        }
        for task, result in results
    ]
    cfg = endpoint.config
    return {
        "session_id": results[-1][1].session_id if results else None,
        "provider": cfg.provider,
        "model": cfg.model,
        "base_url": cfg.base_url,
        "workdir": str(endpoint.workdir),
        "runs": runs,
    }


async def _session(
    args: argparse.Namespace,
    tasks: Any,
    *,
    interactive_session: bool,
    terminal: chat_cli.ChatTerminal | None = None,
) -> int:
    out = console(stderr=args.json)
    # The keys are in this process's environment: closed to the commands it runs (see
    # railings.dispatch.shell).
    protect_process()
    names = _tool_names(args)
    pass_env = _pass_env(args)
    with (
        endpoint_for(args) as endpoint,
        open_journal(args.journal, create=True) as journal,
        # The transcript on stdout; the retry banner and how the run ended, status
        # lines, on stderr with the errors.
        TerminalView(out, status=console(stderr=True)) as view,
    ):
        if endpoint.note:
            say(args.command, endpoint.note)
        tools = builtin_tools(endpoint.workdir, pass_env=pass_env)
        registry = ToolRegistry(t for t in tools if t.name in names)
        results: list[tuple[str, RunResult]] = []
        code = 0
        async with AsyncProviderClient(endpoint.config) as client:
            agent = Agent(
                client,
                registry,
                max_turns=args.max_turns,
                journal=journal,
                approve=approver(
                    yes=args.yes,
                    view_console=out,
                    read=read_line if terminal is None else terminal.answer,
                ),
                needs_approval=needs_approval,
                on_event=view.on_event,
                **({"system": args.system} if args.system else {}),
            )
            try:
                async for task in tasks:
                    run = _runner(agent, task, chat=interactive_session)
                    try:
                        if terminal is None:
                            result = await run()
                        else:
                            answered = await terminal.reply(agent, run, view)
                            if answered is None:
                                continue  # Ctrl-C cancelled the reply: back to the prompt
                            result = answered
                    except CannotContinue as exc:
                        # Before any request: one line, and the exit status stays the last
                        # reply's.
                        say(args.command, f"nothing to continue: {_NOTHING[exc.reason]}")
                        continue
                    if result.continued is not None and result.continued.fell_back:
                        say(args.command, PREFILL_REFUSED)
                    results.append((task, result))
                    code = _exit_code(result)
                    if result.status is RunStatus.ERROR and result.error is not None:
                        # The one place the error's message is printed (the view names its
                        # class).
                        say(args.command, str(result.error))
            except (asyncio.CancelledError, KeyboardInterrupt):
                # Ctrl-C or SIGTERM, mid-turn (arun ended the session already) or at the
                # chat prompt: the session ends interrupted, never left running.
                agent.close_session(RunStatus.INTERRUPTED.value)
                raise
            single = len(results) == 1 and not interactive_session
            agent.close_session(results[0][1].status.value if single else "closed")
        if args.json:
            # Redacted whole: the turns' text is joined there, and the base URL may hold a
            # password.
            transcript = redact_json(_transcript(results, endpoint))
            sys.stdout.write(json.dumps(transcript, ensure_ascii=False) + "\n")
        if results and results[-1][1].session_id:
            say(args.command, f"journal session {results[-1][1].session_id} in {journal.path}")
        return code


# Why /continue had nothing to continue, by CannotContinue.reason.
_NOTHING = {
    "no_reply": "the last line got no reply",
    "complete": "the last reply is complete",
    "tool_call": "the last reply holds a tool call, never continued (a cut one is resent whole)",
    "no_text": "the last reply has no text",
}
PREFILL_REFUSED = "the model refused a prefill; the rest was asked for by user message"


def _runner(agent: Agent, task: str, *, chat: bool) -> Callable[[], Awaitable[RunResult]]:
    """What a line runs: the task, or in chat for /continue the rest of the last reply."""
    if chat and task == chat_cli.CONTINUE:
        return agent.acontinue_reply
    return lambda: agent.arun(task)


def run_task(args: argparse.Namespace) -> int:
    if not args.task.strip():
        raise UsageError("run: TASK is empty")

    async def one() -> Any:
        yield args.task

    return run_until_stopped(lambda: _session(args, one(), interactive_session=False))


def run_chat(args: argparse.Namespace) -> int:
    return chat_cli.run_chat(args, _session)
