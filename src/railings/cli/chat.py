"""``railings chat``: the prompt, its keys, its history, and a reply cancelled by Ctrl-C.

Theory of operation. Without a terminal (stdin a pipe or a file) chat reads lines as
``railings run`` reads its approvals, in a daemon thread, and a signal ends the
whole chat (SIGINT 130, SIGTERM 143). On a terminal it behaves like the shells
people use:

* Lines are read with the standard library's ``readline`` where Python has it (line
  editing, Up and Down through earlier prompts; else plain ``input()``), on the
  event loop's own thread, the main thread, while no reply is running. readline
  restores the terminal itself when Ctrl-C arrives there, which it cannot do for
  a read left running in another thread.
* While a line is read, SIGINT is ``KeyboardInterrupt`` and SIGTERM stops the read
  (:mod:`railings.cli.line_reader`); SIGTERM is then handed on to the handler
  ``run_until_stopped`` installed. Ctrl-C on a line that has text drops the text,
  as bash does; on an empty line it ends the chat as SIGINT always has (exit 130,
  the journal session ``interrupted``). Ctrl-D on an empty line ends it with the
  last reply's status, as a shell's exit code is its last command's. Either
  writes a newline first, so the shell's prompt starts on a line of its own.
* While a reply runs, SIGINT cancels that reply only: the agent journals the run
  ``interrupted`` (stop ``cancelled``) and the conversation goes back to where it
  was before the line was sent, so the next request never carries a tool call
  without its result. A newline ends the half-drawn line, one status line goes to
  stderr, and the prompt comes back. SIGTERM still ends the whole chat (143).
* An approval question during a reply is read the same way, on the main thread:
  Ctrl-C there declines the call and cancels the reply.

``/continue`` after a reply that ended Partial asks the model for the rest of it
(:meth:`railings.agent.Agent.acontinue_reply`): it streams like any reply, and the
joined turn takes the partial one's place in the conversation. With nothing to continue
it says so in one line, and the exit status stays the last reply's.

The history file (:func:`history_path`) holds the prompts sent to the model, never
chat's own ``/`` commands, redacted as the journal is, at most
``HISTORY_LINES`` lines, in a file only the user can read.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import FrameType, ModuleType

from railings.agent.loop import Agent, RunResult
from railings.agent.view import TerminalView
from railings.cli._common import prefix, run_until_stopped, say
from railings.cli.line_reader import Stop, read_here
from railings.cli.prompts import read_line
from railings.journal.private import create_private
from railings.redact import redact

__all__ = [
    "CHAT_COMMANDS",
    "CHAT_EPILOG",
    "CONTINUE",
    "HINT",
    "HISTORY_LINES",
    "ChatTerminal",
    "history_path",
    "run_chat",
]

HISTORY_LINES = 1000
PROMPT = "you> "
HINT = "Type /help for commands, Ctrl-D to leave."
CANCELLED = prefix("chat") + "reply cancelled"

CONTINUE = "/continue"

CHAT_COMMANDS = """\
/help         this list
/continue     ask for the rest of a reply that was interrupted (Partial):
              a new request, its input billed again
/exit, /quit  end the chat (so does Ctrl-D on an empty line)
anything else is sent to the model"""

CHAT_EPILOG = (
    "commands:\n"
    + "".join(f"  {line}\n" for line in CHAT_COMMANDS.splitlines())
    + """
keys (on a terminal):
  Left, Right, ...  edit the line (readline's keys, where Python has readline)
  Up, Down          earlier prompts, kept across chats in the history file
  Ctrl-C            during a reply: cancel it, and back to the prompt
                    at the prompt: drop the line; on an empty line, leave
  Ctrl-D            on an empty line: leave

history: the prompts sent to the model (not /commands), at most 1000, in
  $RAILINGS_CHAT_HISTORY, else $XDG_STATE_HOME/railings/chat_history
  (~/.local/state when XDG_STATE_HOME is unset); readable by the user alone.
  RAILINGS_CHAT_HISTORY set to nothing keeps no history file.

exit codes:
  0    the model ended its turn (or nothing was sent)
  1    an error (authentication, bad request, retries exhausted)
  2    usage error (bad flag, bad value, unreadable workdir)
  3    an interrupted (Partial) turn: what arrived is shown, nothing ran
  4    the turn limit or the circuit breaker
  130  Ctrl-C on an empty line (SIGINT, without a terminal)
  143  SIGTERM; with 130, the journal session ends interrupted
  (0, 1, 3 and 4 are the last reply's, as a shell's is its last command's)
"""
)

Session = Callable[..., Awaitable[int]]  # cli.agent._session(args, tasks, ...)


def history_path() -> Path | None:
    """``$RAILINGS_CHAT_HISTORY`` (set to nothing: no history file), else
    ``$XDG_STATE_HOME/railings/chat_history``, ``~/.local/state`` when XDG_STATE_HOME is
    unset: the XDG Base Directory specification's place for a program's history."""
    explicit = os.environ.get("RAILINGS_CHAT_HISTORY")
    if explicit is not None:
        return Path(explicit).expanduser() if explicit else None
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "railings" / "chat_history"


def _readline() -> ModuleType | None:
    """The standard library's readline, or None where Python has none (Windows)."""
    try:
        import readline
    except ImportError:
        return None
    return readline


class _History:
    """The prompts kept by readline, and appended to the history file one at a time, so
    a chat stopped by a signal keeps what was sent."""

    def __init__(self, readline: ModuleType | None, path: Path | None) -> None:
        self._readline = readline
        self._path = path
        if readline is None:
            return
        readline.set_auto_history(False)  # chat decides which lines are kept
        readline.set_history_length(HISTORY_LINES)
        if path is not None and path.is_file():
            try:
                readline.read_history_file(str(path))
            except OSError as exc:
                self._give_up(exc)

    def add(self, line: str) -> None:
        rl = self._readline
        if rl is None:
            return
        kept = redact(line)  # as the journal keeps it: a pasted key is not written down
        count = rl.get_current_history_length()
        if count and rl.get_history_item(count) == kept:
            return  # a line repeated at once is kept once (bash's ignoredups)
        rl.add_history(kept)
        if self._path is None:
            return
        try:
            create_private(self._path)  # 0600 in directories made 0700
            append = getattr(rl, "append_history_file", None)
            if append is not None:  # appended, then cut to HISTORY_LINES
                append(1, str(self._path))
            else:
                rl.write_history_file(str(self._path))
        except OSError as exc:
            self._give_up(exc)

    def _give_up(self, exc: OSError) -> None:
        say("chat", f"history not kept: {exc}")
        self._path = None


async def _terminated() -> None:
    """End the prompt's line, hand a SIGTERM the read caught to the handler
    ``run_until_stopped`` installed, and wait for the cancellation it brings."""
    _newline()
    signal.raise_signal(signal.SIGTERM)
    await asyncio.Event().wait()


class ChatTerminal:
    """Chat on a terminal: the prompt's lines, replies Ctrl-C cancels, approvals."""

    def __init__(self, readline: ModuleType | None, history: Path | None) -> None:
        self._readline = readline
        self._history = _History(readline, history)
        self._reply: asyncio.Task[RunResult] | None = None
        self._cancelled = False

    def _buffer(self) -> str:
        return self._readline.get_line_buffer() if self._readline is not None else ""

    async def lines(self) -> AsyncIterator[str]:
        """The lines to send, until /exit, /quit, Ctrl-D or Ctrl-C on an empty line."""
        print(HINT, file=sys.stderr)
        while True:
            try:
                line = read_here(PROMPT).strip()
            except EOFError:
                _newline()
                return
            except KeyboardInterrupt:
                _newline()
                if self._buffer().strip():
                    continue  # the line is dropped; a new prompt, as in bash
                raise
            except Stop:
                await _terminated()
                return
            command = _command(line)
            if command == "exit":
                return
            if command == "continue":
                yield CONTINUE  # not a prompt: not kept in the history
            if command is not None:
                continue
            if line:
                self._history.add(line)
                yield line

    async def answer(self) -> str:
        """An approval's answer; Ctrl-C declines the call and cancels the reply (Ctrl-D,
        an EOFError, declines it, as without a terminal)."""
        try:
            return read_here("", interrupted=lambda: self._cancelled)
        except KeyboardInterrupt:
            # Cancelled here, not at the reply's next await: the call is declined and
            # nothing after it (the next turn's request) starts.
            self._cancel_reply()
            raise asyncio.CancelledError from None
        except Stop:
            await _terminated()
            return ""

    def _cancel_reply(self) -> None:
        if self._reply is not None and not self._reply.done():
            self._cancelled = True
            self._reply.cancel()

    async def reply(
        self, agent: Agent, run: Callable[[], Awaitable[RunResult]], view: TerminalView
    ) -> RunResult | None:
        """``run()`` (``agent.arun(task)``, ``agent.acontinue_reply()``), which Ctrl-C
        cancels: then None, the conversation as it was before, and the prompt again."""
        loop = asyncio.get_running_loop()
        before = len(agent.messages)
        self._reply = asyncio.ensure_future(run())
        self._cancelled = False

        def on_sigint(signum: int, frame: FrameType | None) -> None:
            # A Python handler, as asyncio.Runner's own: it runs on this thread, between
            # two steps of the loop, and also before an approval's read begins.
            self._cancel_reply()
            loop.call_soon_threadsafe(_awake)

        previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            return await self._reply
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not self._cancelled or (current is not None and current.cancelling()):
                raise  # SIGTERM, or the chat itself was cancelled: it ends
            del agent.messages[before:]  # the model never saw a reply to it
            view.break_line()
            print(CANCELLED, file=sys.stderr)
            return None
        finally:
            self._reply = None
            signal.signal(signal.SIGINT, previous)


def _awake() -> None:
    """Nothing: scheduled only to wake the loop."""


def _newline() -> None:
    """End the line the prompt (and ``^C``) are on."""
    sys.stdout.write("\n")
    sys.stdout.flush()


def _command(line: str) -> str | None:
    """A line for chat itself, never sent to the model: ``"exit"`` for /exit and
    /quit, ``"continue"`` for /continue, ``"done"`` once /help or an unknown command
    was answered, None otherwise."""
    if not line.startswith("/"):
        return None
    if line in ("/exit", "/quit"):
        return "exit"
    if line == CONTINUE:
        return "continue"
    print(
        CHAT_COMMANDS
        if line == "/help"
        else f"unknown command {line.split()[0]} (/help lists them)",
        file=sys.stderr,
    )
    return "done"


async def _threaded_lines(prompt: str) -> AsyncIterator[str]:
    """Lines read in a daemon thread, without line editing or history: from a pipe or
    a file, or from a terminal whose loop takes no signal handlers (Windows)."""
    while True:
        try:
            line = (await read_line(prompt)).strip()
        except EOFError:
            return
        command = _command(line)
        if command == "exit":
            return
        if command == "continue":
            yield CONTINUE
        elif command is None and line:
            yield line


def _on_terminal() -> bool:
    """A person at a terminal, on a system whose loop takes signal handlers."""
    return sys.stdin.isatty() and os.name == "posix"


def run_chat(args: argparse.Namespace, session: Session) -> int:
    """``railings chat``: ``session(args, lines, ...)`` over the prompt's lines."""
    if not _on_terminal():
        prompt = PROMPT if sys.stdin.isatty() else ""
        if prompt:
            print(HINT, file=sys.stderr)
        lines = _threaded_lines(prompt)
        return run_until_stopped(lambda: session(args, lines, interactive_session=True))
    terminal = ChatTerminal(_readline(), history_path())
    return run_until_stopped(
        lambda: session(args, terminal.lines(), interactive_session=True, terminal=terminal)
    )
