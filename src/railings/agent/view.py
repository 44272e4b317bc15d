"""The live terminal view of an agent run (rich).

Streamed text as it arrives, thinking dimmed, each tool call with its arguments
and its verdict (executed / NOT executed and why), a clear marker for
interrupted and truncated turns, and the retry banner (attempt n of N, a
countdown, the reason) while a transparent retry waits. Only foreground work
reaches the banner: the transport never publishes background retries.

Colours are off when the output is not a terminal or ``NO_COLOR`` is set.
Streamed text arrives held back and redacted by the agent
(:mod:`railings.agent.release`); what the view joins itself -- a call's
arguments, a tool's result -- it redacts before it prints. Everything the model
or a tool wrote is shown through :func:`visible`: its control characters are
printed as escapes, never sent to the terminal to act on (the journal keeps the
text as received).
"""

from __future__ import annotations

import json
import re
import threading

from rich.console import Console
from rich.markup import escape

from railings.agent.loop import (
    AgentEvent,
    RunEnded,
    RunStatus,
    StreamDelta,
    ToolsDispatched,
    TurnEnded,
    TurnStarted,
)
from railings.dispatch import OutcomeStatus
from railings.events import RefusalDelta, TextDelta, ThinkingDelta
from railings.redact import redact
from railings.transport import BANNER, BannerState
from railings.turn.model import Outcome, Turn
from railings.turn.verdict import judge

__all__ = ["TerminalView", "clip", "visible"]

_STATUS_STYLE = {
    OutcomeStatus.EXECUTED: ("green", "executed"),
    OutcomeStatus.ERROR: ("red", "failed"),
    OutcomeStatus.REJECTED: ("red", "NOT executed"),
    OutcomeStatus.INTERCEPTED: ("yellow", "NOT executed (loop guard)"),
    OutcomeStatus.DENIED: ("yellow", "NOT executed (denied)"),
}


OUTPUT_LINES = 12  # lines of a tool's output shown after its first

# What a terminal acts on in prose: the C0 controls but newline and tab (ESC starts
# cursor moves, erasures, titles, colours; CR and BS rewrite the line; BEL rings), DEL,
# the C1 controls (U+009B is CSI on terminals that take 8-bit controls), and the
# bidirectional overrides and isolates that reorder what is shown.
_PROSE_CONTROLS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def visible(text: str, *, prose: bool = False) -> str:
    """``text`` with its control characters shown as their escapes (ESC as ``\\x1b``):
    what the model or a tool wrote cannot move the cursor, erase a line, retitle the
    terminal, hide or reorder what is printed after it.

    Tabs stay. In ``prose`` (the model's streamed text) newlines stay too, and so
    do the invisible characters that only shape text (no-break and ideographic spaces,
    the joiners of emoji). Otherwise -- what the user is asked to approve -- every
    character that is not printable is escaped, newlines included, so nothing in it is
    invisible."""
    if prose:
        return _PROSE_CONTROLS.sub(_escaped, text)
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in text)


def clip(text: str, limit: int = 80) -> str:
    """``text``, or its first ``limit`` characters and its length when it is longer."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


def _clip(text: str, limit: int) -> str:
    # A newline shows as \n: one line per call or output line.
    return clip(visible(redact(text)), limit)


def _arguments(raw: str, limit: int = 160) -> str:
    """Arguments for display: long string values shortened, the shape kept."""
    raw = redact(raw)  # before the cut: a cut through a key would hide it from redact
    try:
        value = json.loads(raw)
    except ValueError:
        return _clip(raw, limit)
    if isinstance(value, dict):
        shown = {k: (_clip(v, 60) if isinstance(v, str) else v) for k, v in value.items()}
        return _clip(json.dumps(shown, ensure_ascii=False), limit)
    return _clip(raw, limit)


class TerminalView:
    """Renders :class:`~railings.agent.loop.AgentEvent` values; pass ``view.on_event``
    to the agent. Use as a context manager so the banner subscription is released."""

    def __init__(self, console: Console, *, status: Console | None = None) -> None:
        self.console = console
        # The retry banner and the line saying how the run ended: status, not the
        # transcript (the command line puts them on stderr).
        self.status = console if status is None else status
        self._lock = threading.Lock()
        self._mode = ""  # "text" | "thinking" | "": what the current line is streaming
        self._banner_shown = False
        self._unsubscribe = BANNER.subscribe(self._banner)

    def __enter__(self) -> TerminalView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop drawing the retry banner (the view unsubscribes from it)."""
        self._unsubscribe()

    def break_line(self) -> None:
        """End the line being drawn, whatever it holds (a reply cut short, the
        terminal's ``^C``): what is drawn next starts on a fresh line."""
        with self._lock:
            self.console.print()
            self._mode = ""

    # -- events --------------------------------------------------------------------------

    def on_event(self, event: AgentEvent) -> None:
        """Draw one agent event: streamed text as it comes, then verdicts and outcomes."""
        with self._lock:
            match event:
                case TurnStarted(number=number, continues=continues):
                    self._rule(
                        f"turn {number}"
                        + (": the rest of the interrupted reply" if continues else "")
                    )
                case StreamDelta(event=TextDelta(text=text)):
                    self._stream("text", text, "")
                case StreamDelta(event=ThinkingDelta(text=text)) if text:
                    self._stream("thinking", text, "dim italic")
                case StreamDelta(event=RefusalDelta(text=text)):
                    self._stream("refusal", text, "bold red")
                case TurnEnded(turn=turn):
                    self._end_line()
                    self._turn(turn)
                case ToolsDispatched(batch=batch):
                    for outcome in batch.outcomes:
                        if outcome.status is OutcomeStatus.REJECTED:
                            name = escape(visible(outcome.name))
                            if outcome.verdict.execute:
                                # The verdict allowed a repair; the tool takes none.
                                self.console.print(
                                    f"  [bold red]NOT executed[/]: {name} runs only on "
                                    "arguments exactly as the model wrote them"
                                )
                            self.console.print(f"  [dim]notice sent: resend {name} complete[/]")
                            continue
                        style, label = _STATUS_STYLE[outcome.status]
                        lines = redact(outcome.content).strip().splitlines() or [""]
                        self.console.print(
                            f"  [{style}]{label}[/]: {escape(visible(outcome.name))}"
                            f" [dim]{escape(_clip(lines[0], 120))}[/]"
                        )
                        self._output(lines[1:])
                case RunEnded(result=result):
                    self._end_line()
                    self._run_end(result.status, result.error)

    def _output(self, lines: list[str]) -> None:
        """What a tool returned after its first line (a command's output), up to
        ``OUTPUT_LINES`` lines, each clipped."""
        for line in lines[:OUTPUT_LINES]:
            self.console.print(f"    [dim]{escape(_clip(line, 160))}[/]")
        if len(lines) > OUTPUT_LINES:
            self.console.print(f"    [dim]... {len(lines) - OUTPUT_LINES} more lines[/]")

    def _stream(self, mode: str, text: str, style: str) -> None:
        if self._mode != mode:
            self._end_line()
            if mode != "text":
                self.console.print(f"[{style}]{mode}:[/] ", end="")
            self._mode = mode
        shown = escape(visible(text, prose=True))
        self.console.print(f"[{style}]{shown}[/]" if style else shown, end="")

    def _end_line(self) -> None:
        if self._mode:
            self.console.print()
            self._mode = ""

    def _rule(self, title: str) -> None:
        self.console.print(f"[dim]── {title} ──[/]")

    def _turn(self, turn: Turn) -> None:
        if turn.outcome is not Outcome.COMPLETE:
            why = visible(turn.error.message) if turn.error else "no termination proof"
            self.console.print(
                f"[bold red]INCOMPLETE[/]: the stream was interrupted ({escape(why)}). "
                "What arrived is shown as-is; nothing from this turn was executed."
            )
        for verdict in judge(turn):
            call = verdict.call
            name = escape(visible(call.name))
            head = f"  tool [bold]{name}[/] {escape(_arguments(call.raw_arguments))}"
            if verdict.repaired:  # whether it runs is the tool's choice (repair=False)
                self.console.print(f"{head} -> [yellow]repaired[/]")
            elif verdict.execute:
                self.console.print(f"{head} -> [green]run[/]")
            else:
                reason = verdict.reason.value if verdict.reason else ""
                self.console.print(f"{head} -> [bold red]NOT executed: {reason}[/]")
        if turn.truncated:
            self.console.print(
                f"[yellow]cut by the output limit[/] (stop_reason: {turn.stop_reason}"
                f"{', derived' if turn.stop_reason_source == 'derived' else ''})"
            )
        if turn.refusal:
            self.console.print("[bold red]the model refused[/]")

    def _run_end(self, status: RunStatus, error: BaseException | None) -> None:
        messages = {
            RunStatus.COMPLETED: "[green]done[/]: the model ended its turn",
            RunStatus.INTERRUPTED: "[bold red]stopped[/]: the last turn was interrupted (Partial)",
            RunStatus.TURN_LIMIT: "[yellow]stopped[/]: turn limit reached",
            RunStatus.CIRCUIT_OPEN: "[yellow]stopped[/]: circuit breaker (too many tool failures)",
            RunStatus.ERROR: "[red]error[/]",
        }
        line = messages[status]
        if error is not None:
            # Its class only: the command line prints the message, once, on stderr.
            line += f": {escape(type(error).__name__)}"
        self.status.print(line)

    # -- the retry banner ----------------------------------------------------------------

    def _banner(self, state: BannerState | None) -> None:
        with self._lock:
            if state is None:
                if self._banner_shown and self.status.is_terminal:
                    self.status.print("\r\x1b[2K", end="")
                self._banner_shown = False
                return
            text = (
                f"{state.doing}: attempt {state.attempt} of {state.attempts} in {state.seconds} s"
                f" ({state.reason})"
            )
            if self.status.is_terminal:
                self._end_line()
                self.status.print(f"\r\x1b[2K[yellow]{escape(text)}[/]", end="")
            elif not self._banner_shown:
                self.status.print(f"[yellow]{escape(text)}[/]")
            self._banner_shown = True
