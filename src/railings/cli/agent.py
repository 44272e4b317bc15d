"""``railings run``, ``railings chat``, ``railings sessions``, ``railings show``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from railings.agent.journal import default_path
from railings.agent.loop import Agent, RunResult, RunStatus
from railings.agent.view import TerminalView
from railings.cli._common import UsageError, console, positive
from railings.cli.endpoint import (
    DEFAULT_MODELS,
    DEMO_MAX_TOKENS,
    PROVIDER_CHOICE,
    Endpoint,
    endpoint_for,
)
from railings.cli.journal import open_journal
from railings.dispatch import Denied, Invocation, Tool, ToolRegistry, builtin_tools
from railings.dispatch.shell import protect_process
from railings.providers import NAMES
from railings.redact import redact_json
from railings.replay import Replay, to_json
from railings.transport import AsyncProviderClient
from railings.turn.verdict import judge

# DEFAULT_MODELS and DEMO_MAX_TOKENS live in railings.cli.endpoint, importable here too.
__all__ = ["DEFAULT_MODELS", "DEMO_MAX_TOKENS", "register"]

EXIT_CODES = """\
exit codes:
  0  the model ended its turn
  1  any other error (authentication, bad request, retries exhausted): one line on stderr
  2  usage error (bad flag, bad value, unreadable workdir)
  3  the run ended on an interrupted (Partial) turn: what arrived is shown, nothing ran
  4  stopped by the turn limit or the circuit breaker
"""

RUN_HELP = (
    "Run one task with a tool-using agent, then exit.\n\n" + PROVIDER_CHOICE + "\n" + EXIT_CODES
)
CHAT_HELP = (
    "Talk to a tool-using agent; the conversation is kept across lines. /exit or Ctrl-D ends.\n\n"
    + PROVIDER_CHOICE
    + "\n"
    + EXIT_CODES
)
CHAT_COMMANDS = """\
/help         this list
/exit, /quit  end the chat (so do Ctrl-D and Ctrl-C)
anything else is sent to the model"""

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
        choices=tuple(n for n in NAMES if n in DEFAULT_MODELS),  # the wires it runs on
        help="wire format of the endpoint (openai: Chat Completions; openai-responses: the "
        "Responses API; gemini, bedrock: ConverseStream; ollama: /api/chat)",
    )
    parser.add_argument(
        "--base-url", metavar="URL", help="endpoint base URL, as the official SDK takes it"
    )
    parser.add_argument(
        "--model",
        help="model name (default per provider: "
        + ", ".join(f"{name} {model}" for name, model in DEFAULT_MODELS.items())
        + ")",
    )
    parser.add_argument(
        "--max-tokens",
        type=positive,
        metavar="N",
        help="output limit per turn (default 4096; 1024 on the embedded demo)",
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
    parser.add_argument(
        "--journal", metavar="PATH", help=f"journal file (default: {default_path()})"
    )
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
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("task", metavar="TASK", help="what the agent should do")
    _agent_options(run)
    run.set_defaults(run=run_task)

    chat = commands.add_parser(
        "chat",
        help="talk to the agent interactively",
        description=CHAT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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


def _registry(names: tuple[str, ...], workdir: Path, pass_env: tuple[str, ...]) -> ToolRegistry:
    tools = builtin_tools(workdir, pass_env=pass_env)
    return ToolRegistry(t for t in tools if t.name in names)


NO_TERMINAL = Denied(
    "shell commands need the user's approval, and this run has no terminal to ask on "
    "(the user can allow them with --yes)"
)


def _no_terminal(invocation: Invocation) -> Denied:
    """The refusal when nobody can be asked: it says why, not that the user declined."""
    reason = invocation.approval_reason
    if reason is None:
        return NO_TERMINAL
    path = invocation.arguments.get("path", "")
    return Denied(
        f"writing {path!r} configures commands run later ({reason}), so it needs the "
        "user's approval, and this run has no terminal to ask on (the user can allow it "
        "with --yes)"
    )


async def _read_line(prompt: str = "") -> str:
    """One line of standard input, read in a daemon thread: Ctrl-C ends the process at
    once instead of waiting for a thread stuck in ``input()`` (``asyncio.to_thread``
    would: its executor is joined at exit). EOF raises :class:`EOFError`."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def settle(line: str | None, error: BaseException | None) -> None:
        if answer.done():
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(line or "")

    def read() -> None:
        try:
            line = input(prompt)
        except BaseException as exc:  # EOFError, or the interpreter going away
            loop.call_soon_threadsafe(settle, None, exc)
        else:
            loop.call_soon_threadsafe(settle, line, None)

    threading.Thread(target=read, name="railings-stdin", daemon=True).start()
    return await answer


PREVIEW_LINES = 12  # lines of a configuring write shown before its question
PREVIEW_CHARS = 200  # characters of each line shown


def _visible(text: str) -> str:
    """``text`` with every control character shown as its escape: what the model wrote
    cannot move the cursor or erase a line of the prompt that asks about it."""
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in text)


def _preview(content: str) -> str:
    """The start of what a write would put in the file, for the approval prompt."""
    lines = content.splitlines()
    shown = [_visible(line[:PREVIEW_CHARS]) for line in lines[:PREVIEW_LINES]]
    text = "\n".join(f"  | {line}" for line in shown)
    if len(lines) > len(shown):
        text += f"\n  | [... {len(lines) - len(shown)} more lines, {len(content)} characters]"
    return text


def _question(invocation: Invocation) -> str:
    """The approval prompt for one call, as rich markup (everything the model wrote escaped)."""
    reason = invocation.approval_reason
    arguments = invocation.arguments
    if reason is None:
        command = arguments.get("command", "")
        return f"[bold]run shell command?[/] {escape(_visible(str(command)))} [dim]\\[y/N][/] "
    path = _visible(str(arguments.get("path", "")))
    how = "append to" if arguments.get("append") else "write"
    content = arguments.get("content", "")
    preview = escape(_preview(content if isinstance(content, str) else str(content)))
    return (
        f"[bold]{how} {escape(path)}?[/] it configures commands run later: {escape(reason)}\n"
        f"{preview}\n[bold]allow this write?[/] [dim]\\[y/N][/] "
    )


def _approver(args: argparse.Namespace, view_console: Console) -> Any:
    if args.yes:
        return lambda invocation: True
    if not sys.stdin.isatty():
        return _no_terminal

    async def approve(invocation: Invocation) -> bool:
        view_console.print(_question(invocation), end="")
        try:
            return (await _read_line()).strip().lower() in ("y", "yes")
        except EOFError:
            return False

    return approve


def _needs_approval(tool: Tool) -> bool:
    """Shell commands are asked about; a write is asked about when it configures later
    commands (the tool's own rule, :mod:`railings.dispatch.configuring`, which the
    approval gate applies whatever this says)."""
    return tool.name == "shell"


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
    runs = []
    for task, result in results:
        runs.append(
            {
                "task": task,
                "status": result.status.value,
                "exit_code": _exit_code(result),
                "error": None
                if result.error is None
                else {"type": type(result.error).__name__, "message": str(result.error)},
                "turns": [to_json(Replay(turn, judge(turn))) for turn in result.turns],
            }
        )
    cfg = endpoint.config
    return {
        "session_id": results[-1][1].session_id if results else None,
        "provider": cfg.provider,
        "model": cfg.model,
        "base_url": cfg.base_url,
        "workdir": str(endpoint.workdir),
        "runs": runs,
    }


async def _session(args: argparse.Namespace, tasks: Any, *, interactive_session: bool) -> int:
    out = console(stderr=args.json)
    # The keys are in this process's environment: closed to the commands it runs (see
    # railings.dispatch.shell).
    protect_process()
    names = _tool_names(args)
    pass_env = _pass_env(args)
    with (
        endpoint_for(args) as endpoint,
        open_journal(args.journal, create=True) as journal,
        TerminalView(out) as view,
    ):
        if endpoint.note:
            print(f"railings: {endpoint.note}", file=sys.stderr)
        registry = _registry(names, endpoint.workdir, pass_env)
        results: list[tuple[str, RunResult]] = []
        code = 0
        async with AsyncProviderClient(endpoint.config) as client:
            agent = Agent(
                client,
                registry,
                max_turns=args.max_turns,
                journal=journal,
                approve=_approver(args, out),
                needs_approval=_needs_approval,
                on_event=view.on_event,
                **({"system": args.system} if args.system else {}),
            )
            async for task in tasks:
                result = await agent.arun(task)
                results.append((task, result))
                code = _exit_code(result)
                if result.status is RunStatus.ERROR and result.error is not None:
                    # The one place the error's message is printed (the view names its class).
                    print(f"railings: {result.error}", file=sys.stderr)
            single = len(results) == 1 and not interactive_session
            agent.close_session(results[0][1].status.value if single else "closed")
        if args.json:
            # Redacted whole: the turns' text is joined there, and the base URL may hold a
            # password.
            transcript = redact_json(_transcript(results, endpoint))
            sys.stdout.write(json.dumps(transcript, ensure_ascii=False) + "\n")
        if results and results[-1][1].session_id:
            print(
                f"railings: journal session {results[-1][1].session_id} in {journal.path}",
                file=sys.stderr,
            )
        return code


def run_task(args: argparse.Namespace) -> int:
    if not args.task.strip():
        raise UsageError("run: TASK is empty")

    async def one() -> Any:
        yield args.task

    return asyncio.run(_session(args, one(), interactive_session=False))


def run_chat(args: argparse.Namespace) -> int:
    interactive = sys.stdin.isatty()

    async def lines() -> Any:
        while True:
            try:
                line = (await _read_line("you> " if interactive else "")).strip()
            except EOFError:
                return
            if line in ("/exit", "/quit"):
                return
            if line.startswith("/"):  # a command for chat itself: never sent to the model
                print(
                    CHAT_COMMANDS
                    if line == "/help"
                    else f"unknown command {line.split()[0]} (/help lists them)",
                    file=sys.stderr,
                )
                continue
            if line:
                yield line

    return asyncio.run(_session(args, lines(), interactive_session=True))
