"""The agent loop: stream a turn, judge it, dispatch its calls, send the results back.

Theory of operation. ``Agent.run(task)`` appends the task to the conversation and
loops until one of five things ends the run (its :class:`RunStatus`):

* ``COMPLETED``: the model ended its turn (no local tool call left to run);
* ``INTERRUPTED``: a turn ended without the provider's proof after content had
  arrived (**Partial**). What arrived is kept as-is and marked; nothing in it
  is executed; the caller decides what next. (**Empty** interruptions never get
  here: the transport resends them transparently.)
* ``TURN_LIMIT``: ``max_turns`` turns were streamed and the model still wanted
  tools;
* ``CIRCUIT_OPEN``: the circuit breaker tripped on consecutive tool failures;
* ``ERROR``: a typed error ended the run (authentication, bad request, retries
  exhausted); ``error`` holds it.

A run stopped from outside -- its task cancelled (``asyncio.CancelledError``: what
``asyncio.run`` turns Ctrl-C into, and what ``railings run`` turns SIGTERM into), or
a ``KeyboardInterrupt`` -- returns nothing: the exception propagates, after the
journal got its ``run_end`` (status ``interrupted``) and the session was ended
``interrupted``, so no session is left ``running`` by a stop.

A tool call the output limit cut goes back to the model with the truncation
notice instead of a result, so the model resends it complete; an Anthropic
``pause_turn`` is continued by sending the conversation back as-is.

Everything is journaled as it happens (see :mod:`railings.journal`), and
every step is also published to ``on_event`` for a view or an embedding program.
Streamed text goes to both through :class:`~railings.agent.release.StreamRelease`:
a registered secret the model streams in pieces is journaled and shown as the
redaction marker, never whole; each released piece is journaled before it is
published. (The turn itself, which goes back to the provider, keeps the text
as it came.)
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from railings.agent.release import StreamRelease
from railings.dispatch import (
    Approver,
    BatchResult,
    CircuitBreaker,
    Dispatcher,
    SpeculativeRunner,
    Tool,
    ToolRegistry,
    default_chain,
    needs_approval_unless_read_only,
)
from railings.errors import CircuitOpen, ConfigurationError, RailingsError
from railings.events import (
    RefusalDelta,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallStart,
)
from railings.journal import DeltaKind, EntryKind, Journal, turn_entry
from railings.messages import Assistant, Message, System, ToolResult, ToolSpec, User
from railings.telemetry import agent_span
from railings.transport import AsyncProviderClient, ProviderClient
from railings.turn.model import Outcome, Turn

__all__ = [
    "Agent",
    "AgentEvent",
    "RunEnded",
    "RunResult",
    "RunStatus",
    "StreamDelta",
    "ToolsDispatched",
    "TurnEnded",
    "TurnStarted",
]

DEFAULT_SYSTEM = (
    "You are a careful coding agent working in a sandboxed directory. Use the tools to "
    "inspect and change files; keep each tool call's arguments short. Tool calls cut off "
    "by the output limit are NOT executed and must be resent complete."
)


class RunStatus(enum.Enum):
    """How a run ended (the module docstring says when each one happens)."""

    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    TURN_LIMIT = "turn_limit"
    CIRCUIT_OPEN = "circuit_open"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """Turn ``number`` (1, 2, ...) is about to be streamed."""

    number: int


@dataclass(frozen=True, slots=True)
class StreamDelta:
    """One normalized stream event of the current turn, with registered secrets redacted:
    a text event may be held back a few characters and released with the next one
    (see :mod:`railings.agent.release`)."""

    number: int
    event: StreamEvent


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """Turn ``number`` ended: ``turn`` is what arrived, proven COMPLETE or interrupted."""

    number: int
    turn: Turn


@dataclass(frozen=True, slots=True)
class ToolsDispatched:
    """The calls of turn ``number`` went through the dispatcher: one outcome each."""

    number: int
    batch: BatchResult


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The run is over; ``result`` says how."""

    result: RunResult


AgentEvent = TurnStarted | StreamDelta | TurnEnded | ToolsDispatched | RunEnded


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a run ended. ``turns`` are all the turns streamed, the last one included."""

    status: RunStatus
    turns: tuple[Turn, ...]
    session_id: str | None = None
    error: RailingsError | None = None

    @property
    def last(self) -> Turn | None:
        """The last turn streamed, or None when none was."""
        return self.turns[-1] if self.turns else None

    @property
    def text(self) -> str:
        """The last turn's text (partial, when the run was interrupted)."""
        return self.last.text if self.last else ""


@dataclass
class Agent:
    """A tool-using agent whose every turn goes through the railings.

    ``client`` streams turns; ``tools`` are what the model may call; ``approve``
    is asked before a tool for which ``needs_approval(tool)`` is true runs (default:
    every tool that is not read-only; ``approve=None``: nothing is asked). Keep one
    agent per conversation: :meth:`run` appends to ``messages``, so a second
    call continues the same conversation (what ``railings chat`` does).
    """

    client: AsyncProviderClient | ProviderClient
    tools: ToolRegistry
    system: str | None = DEFAULT_SYSTEM
    max_turns: int = 20
    journal: Journal | None = None
    approve: Approver | None = None
    needs_approval: Callable[[Tool], bool] = needs_approval_unless_read_only
    on_event: Callable[[AgentEvent], None] | None = None
    max_failures: int = 5
    messages: list[Message] = field(default_factory=list)
    session_id: str | None = None
    tracer: Any = None  # OpenTelemetry (railings.telemetry); None: the global provider's

    def __post_init__(self) -> None:
        self._ended = False  # the journal session was ended (close_session, or a stop)
        self._dispatcher = Dispatcher(
            self.tools,
            chain=default_chain(approve=self.approve, needs_approval=self.needs_approval),
            breaker=CircuitBreaker(max_failures=self.max_failures),
        )
        self._specs = tuple(ToolSpec(t.name, t.description, t.parameters) for t in self.tools)
        if self.system and not any(isinstance(m, System) for m in self.messages):
            self.messages.insert(0, System(self.system))

    # -- public API --------------------------------------------------------------------

    def run(self, task: str) -> RunResult:
        """Run ``task`` to the end (blocking), with either client: a blocking
        :class:`~railings.transport.ProviderClient` runs it on its own event loop."""
        if isinstance(self.client, ProviderClient):
            return self.client.block_on(self.arun(task))
        return asyncio.run(self.arun(task))

    @property
    def _streaming(self) -> AsyncProviderClient:
        """The async client the turns stream through (a blocking client's own one)."""
        if isinstance(self.client, ProviderClient):
            if not self.client.on_own_loop():
                raise ConfigurationError(
                    "an Agent with a blocking ProviderClient runs with agent.run(task); "
                    "await agent.arun(task) needs an AsyncProviderClient"
                )
            return self.client.async_client
        return self.client

    async def arun(self, task: str) -> RunResult:
        """Run ``task`` to the end (with an :class:`~railings.transport.AsyncProviderClient`;
        a blocking client runs through :meth:`run`)."""
        self._streaming  # noqa: B018 -- refuse a blocking client here, before anything runs
        self._start_session(task)
        self._journal(EntryKind.USER, {"text": task})
        self.messages.append(User(task))
        turns: list[Turn] = []
        try:
            # One invoke_agent span (with the otel extra); each turn's span is its child.
            with agent_span(self._streaming.config.model, self.tracer):
                result = await self._loop(turns)
        except CircuitOpen as exc:
            result = RunResult(RunStatus.CIRCUIT_OPEN, tuple(turns), self.session_id, exc)
        except RailingsError as exc:
            self._journal(EntryKind.ERROR, {"type": type(exc).__name__, "message": str(exc)})
            result = RunResult(RunStatus.ERROR, tuple(turns), self.session_id, exc)
        except (asyncio.CancelledError, KeyboardInterrupt) as exc:
            # Stopped from outside (Ctrl-C, SIGTERM, a cancelled task): the run and the
            # session end here, as interrupted; the stop itself goes on to the caller.
            stop = "cancelled" if isinstance(exc, asyncio.CancelledError) else "keyboard_interrupt"
            self._journal(EntryKind.RUN_END, {"status": RunStatus.INTERRUPTED.value, "stop": stop})
            self.close_session(RunStatus.INTERRUPTED.value)
            raise
        self._journal(EntryKind.RUN_END, {"status": result.status.value})
        self._emit(RunEnded(result))
        return result

    def close_session(self, status: str = "closed") -> None:
        """Mark the journal session ended, with ``status`` (a run's status, "closed", or
        "interrupted"); once: a session a stop already ended is left as it ended."""
        if self.journal is not None and self.session_id is not None and not self._ended:
            self._ended = True
            self.journal.end_session(self.session_id, status)

    # -- the loop ----------------------------------------------------------------------

    async def _loop(self, turns: list[Turn]) -> RunResult:
        for number in range(1, self.max_turns + 1):
            turn, runner = await self._stream_turn(number)
            turns.append(turn)
            self._emit(TurnEnded(number, turn))
            if turn.outcome is not Outcome.COMPLETE:
                await runner.cancel_all()
                return RunResult(RunStatus.INTERRUPTED, tuple(turns), self.session_id)
            self.messages.append(Assistant.from_turn(turn))
            if turn.stop_reason == "pause_turn" and not turn.tool_calls:
                continue  # the server paused a long turn: send the conversation back as-is
            if not turn.tool_calls:
                await runner.cancel_all()
                return RunResult(RunStatus.COMPLETED, tuple(turns), self.session_id)
            batch = await self._dispatcher.dispatch_turn(turn, speculative=runner)
            for outcome in batch.outcomes:
                self._journal(
                    EntryKind.TOOL_RESULT,
                    {
                        "call_id": outcome.call_id,
                        "name": outcome.name,
                        "status": outcome.status.value,
                        "content": outcome.content,
                        "is_error": outcome.is_error,
                    },
                    turn=number,
                )
                self.messages.append(ToolResult(outcome.call_id, outcome.content, outcome.is_error))
            self._emit(ToolsDispatched(number, batch))
        return RunResult(RunStatus.TURN_LIMIT, tuple(turns), self.session_id)

    async def _stream_turn(self, number: int) -> tuple[Turn, SpeculativeRunner]:
        self._journal(EntryKind.TURN_START, {}, turn=number)
        self._emit(TurnStarted(number))
        runner = SpeculativeRunner(self.tools)
        release = StreamRelease()
        stream = self._streaming.stream_turn(self.messages, self._specs)
        try:
            async for event in stream:
                runner.feed(event)
                self._publish(number, release.feed(event))
        except BaseException:
            self._publish(number, release.flush())
            await runner.cancel_all()
            raise
        self._publish(number, release.flush())
        turn = stream.turn
        self._journal(EntryKind.TURN_END, turn_entry(turn, stream.attempts), turn=number)
        return turn, runner

    # -- journal and events --------------------------------------------------------------

    def _start_session(self, task: str) -> None:
        if self.journal is None:
            return
        if self.session_id is not None:
            if self._ended:  # a run after a stop: the conversation, and its session, go on
                self._ended = False
                self.journal.reopen_session(self.session_id)
            return
        cfg = self.client.config
        self.session_id = self.journal.start_session(
            task,
            provider=cfg.provider,
            model=cfg.model,
            details={
                "base_url": cfg.base_url,
                "max_tokens": cfg.max_tokens,
                "tools": [s.name for s in self._specs],
            },
        )

    def _journal(self, kind: EntryKind, data: dict[str, Any], *, turn: int | None = None) -> None:
        if self.journal is not None and self.session_id is not None:
            self.journal.write(self.session_id, kind, data, turn=turn)

    def _publish(self, number: int, events: list[StreamEvent]) -> None:
        for event in events:  # journaled first: nothing is shown that the journal lacks
            self._journal_delta(number, event)
            self._emit(StreamDelta(number, event))

    def _journal_delta(self, number: int, event: StreamEvent) -> None:
        match event:
            case TextDelta(text=text):
                self._delta(number, {"kind": DeltaKind.TEXT, "text": text})
            case ThinkingDelta(text=text) if text:
                self._delta(number, {"kind": DeltaKind.THINKING, "text": text})
            case RefusalDelta(text=text):
                self._delta(number, {"kind": DeltaKind.REFUSAL, "text": text})
            case ToolCallStart(index=index, id=ident, name=name, kind=kind):
                self._delta(
                    number,
                    {
                        "kind": DeltaKind.TOOL_START,
                        "index": index,
                        "id": ident,
                        "name": name,
                        "tool_kind": kind,
                    },
                )
            case ToolArgumentsDelta(index=index, fragment=fragment):
                self._delta(number, {"kind": DeltaKind.TOOL_ARGS, "index": index, "text": fragment})

    def _delta(self, number: int, data: dict[str, Any]) -> None:
        self._journal(EntryKind.DELTA, data, turn=number)

    def _emit(self, event: AgentEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)
