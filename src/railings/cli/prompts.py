"""The terminal side of ``railings run`` and ``chat``: reading a line, and asking the user
before a call runs.

Shell commands are asked about, and so are writes that configure later commands
(the tool's own rule, :mod:`railings.dispatch.configuring`, which the approval gate
applies whatever :func:`needs_approval` says). Without a terminal nobody can be
asked: the call is refused, and the model is told why, not that the user declined.
Everything the model wrote is shown with its control characters escaped, so it
cannot rewrite the prompt that asks about it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

from railings.agent.view import visible
from railings.dispatch import Denied, Invocation, Tool

__all__ = ["NO_TERMINAL", "approver", "needs_approval", "read_line"]

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


async def read_line(prompt: str = "") -> str:
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
PREVIEW_WIDTH = 200  # characters on one row: a longer line goes on over more rows
PREVIEW_ROWS = 40  # rows shown in all: what does not fit is counted, never dropped silently

# A run of blanks this long is shown by its length: spaces pushing the rest of a line
# (git reads "[core] <250 spaces> fsmonitor = ..." as one line) far out of sight.
_BLANK_RUN = re.compile(r"[ \t]{16,}")


def _blank_run(match: re.Match[str]) -> str:
    run = match.group()
    kind = "spaces" if " " * len(run) == run else "tabs" if "\t" * len(run) == run else "blanks"
    return f"\u27e8{len(run)} {kind}\u27e9"


def _shown(text: str) -> str:
    """What the model wrote, for the prompt: control characters escaped, long runs of
    blanks shown by their length (``[core]⟨250 spaces⟩fsmonitor = ...``)."""
    return visible(_BLANK_RUN.sub(_blank_run, text))


def _preview(content: str) -> str:
    """What a write would put in the file, for the approval prompt. Every line is shown
    whole: a long one goes on over more rows (marked ``+``). Only ``\\n`` ends a line
    (what git and most tools read); any other line break shows as its escape. Past
    ``PREVIEW_LINES`` lines or ``PREVIEW_ROWS`` rows, what is left is counted, never
    cut silently."""
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    rows: list[str] = []
    for number, line in enumerate(lines[:PREVIEW_LINES]):
        shown = _shown(line)
        parts = [shown[i : i + PREVIEW_WIDTH] for i in range(0, len(shown), PREVIEW_WIDTH)]
        parts = parts or [""]
        room = PREVIEW_ROWS - len(rows)
        rows += [f"  {'|' if i == 0 else '+'} {part}" for i, part in enumerate(parts[:room])]
        if len(parts) > room:
            left = sum(len(part) for part in parts[room:])
            rows.append(
                f"  | [... not shown: {left} characters of line {number + 1} and the "
                f"{len(lines) - number - 1} lines after it, of {len(content)} characters]"
            )
            return "\n".join(rows)
    if len(lines) > PREVIEW_LINES:
        rows.append(f"  | [... {len(lines) - PREVIEW_LINES} more lines, {len(content)} characters]")
    return "\n".join(rows)


def _question(invocation: Invocation) -> str:
    """The approval prompt for one call, as rich markup (everything the model wrote escaped)."""
    reason = invocation.approval_reason
    arguments = invocation.arguments
    if reason is None:
        command = arguments.get("command", "")
        return f"[bold]run shell command?[/] {escape(_shown(str(command)))} [dim]\\[y/N][/] "
    path = _shown(str(arguments.get("path", "")))
    how = "append to" if arguments.get("append") else "write"
    content = arguments.get("content", "")
    preview = escape(_preview(content if isinstance(content, str) else str(content)))
    return (
        f"[bold]{how} {escape(path)}?[/] it configures commands run later: {escape(reason)}\n"
        f"{preview}\n[bold]allow this write?[/] [dim]\\[y/N][/] "
    )


def _discard_typed_ahead() -> None:
    """Drop what was typed before the question was shown, as sudo and ssh do: a "y"
    typed at the model's imitation of a prompt must not answer the real one."""
    if sys.platform == "win32":
        import msvcrt

        while msvcrt.kbhit():
            msvcrt.getwch()
        return
    import termios

    # stdin closed, or no longer a terminal: nothing is waiting to be dropped
    with contextlib.suppress(termios.error, OSError, ValueError):
        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)


def approver(
    *, yes: bool, view_console: Console, read: Callable[[], Awaitable[str]] = read_line
) -> Any:
    """The approval hook: everything with ``yes``; refuse, saying why, without a terminal;
    else ask on the terminal, reading the answer with ``read``."""
    if yes:
        return lambda invocation: True
    if not sys.stdin.isatty():
        return _no_terminal

    async def approve(invocation: Invocation) -> bool:
        # Before the question, not after it: what is typed once it shows is the answer.
        _discard_typed_ahead()
        view_console.print(_question(invocation), end="")
        try:
            return (await read()).strip().lower() in ("y", "yes")
        except EOFError:
            return False

    return approve


def needs_approval(tool: Tool) -> bool:
    """Shell commands are asked about; a write is asked about when it configures later
    commands (the tool's own rule, :mod:`railings.dispatch.configuring`, which the
    approval gate applies whatever this says)."""
    return tool.name == "shell"
