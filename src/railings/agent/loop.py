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

A run that ended ``INTERRUPTED`` on a text answer can be continued when the caller
asks (``continue_reply``, chat's ``/continue``; :mod:`railings.continuation`): the
rest is asked for, the two are joined into one turn, and the run goes on from that
turn as from any other (appended to the conversation, its calls dispatched).

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
import dataclasses
from collections.abc import AsyncIterable, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from railings.agent.events import (
    AgentEvent,
    RunEnded,
    RunResult,
    RunStatus,
    StreamDelta,
    ToolsDispatched,
    TurnEnded,
    TurnStarted,
)
from railings.agent.release import StreamRelease
from railings.continuation import ContinuationStream, Continued, Strategy, continue_turn
from railings.dispatch import (
    Approver,
    CircuitBreaker,
    Dispatcher,
    SpeculativeRunner,
    Tool,
    ToolRegistry,
    default_chain,
    needs_approval_unless_read_only,
)
from railings.errors import CannotContinue, CircuitOpen, ConfigurationError, RailingsError
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
        self._last: Turn | Continued | None = None  # the last reply, continued on request
        self._continued: Continued | None = None  # the turn continue_reply made, this run
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
        return self._block(self.arun(task))

    def _block(self, run: Coroutine[Any, Any, RunResult]) -> RunResult:
        if isinstance(self.client, ProviderClient):
            return self.client.block_on(run)
        return asyncio.run(run)

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
        self._last = None
        return await self._run(self._stream_turn)

    def continue_reply(self, *, strategy: Strategy | None = None) -> RunResult:
        """:meth:`acontinue_reply`, blocking (as :meth:`run`)."""
        return self._block(self.acontinue_reply(strategy=strategy))

    async def acontinue_reply(self, *, strategy: Strategy | None = None) -> RunResult:
        """Ask for the rest of the last reply, which ended Partial with text and no tool
        call, and go on from the joined turn as from any turn: a new request, billed
        again for its input (:mod:`railings.continuation`; ``strategy`` as there).

        Raises :class:`~railings.errors.CannotContinue`, before any request, when there is
        no such reply: the last task brought none, or it is complete, holds a tool call or
        has no text. A continuation that is cut too can be continued again."""
        client = self._streaming
        if self._last is None:
            raise CannotContinue("no reply to continue", reason="no_reply")
        stream = continue_turn(client, self.messages, self._last, self._specs, strategy=strategy)
        self._start_session("continue")
        return await self._run(lambda number: self._continue_turn(number, stream))

    async def _run(
        self, first: Callable[[int], Awaitable[tuple[Turn, SpeculativeRunner]]]
    ) -> RunResult:
        """The loop from its first turn (``first``), with how the run ends journaled."""
        turns: list[Turn] = []
        self._continued = None
        try:
            # One invoke_agent span (with the otel extra); each turn's span is its child.
            with agent_span(self._streaming.config.model, self.tracer):
                result = await self._loop(turns, first)
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
        if self._continued is not None:
            result = dataclasses.replace(result, continued=self._continued)
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

    async def _loop(
        self,
        turns: list[Turn],
        first: Callable[[int], Awaitable[tuple[Turn, SpeculativeRunner]]],
    ) -> RunResult:
        for number in range(1, self.max_turns + 1):
            turn, runner = await (first if number == 1 else self._stream_turn)(number)
            turns.append(turn)
            continued = self._continued
            self._last = continued if continued and continued.turn is turn else turn
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
        stream = self._streaming.stream_turn(self.messages, self._specs)
        runner = await self._read(number, stream)
        turn = stream.turn
        self._journal(EntryKind.TURN_END, turn_entry(turn, stream.attempts), turn=number)
        return turn, runner

    async def _continue_turn(
        self, number: int, stream: ContinuationStream
    ) -> tuple[Turn, SpeculativeRunner]:
        """The first turn of a continuing run: the rest of the interrupted reply, joined."""
        self._journal(EntryKind.TURN_START, {"continues": True}, turn=number)
        self._emit(TurnStarted(number, continues=True))
        runner = await self._read(number, stream)
        continued = self._continued = stream.continued
        how = {
            "strategy": continued.strategy,
            "fell_back": continued.fell_back,
            "repeated": continued.repeated,
            "attempts": len(continued.attempts),
        }
        entry = turn_entry(continued.turn, stream.attempts) | {"continuation": how}
        self._journal(EntryKind.TURN_END, entry, turn=number)
        return continued.turn, runner

    async def _read(self, number: int, stream: AsyncIterable[StreamEvent]) -> SpeculativeRunner:
        """Read one turn's events: journaled and published as released, and fed to the
        runner that starts read-only calls early (returned)."""
        runner = SpeculativeRunner(self.tools)
        release = StreamRelease()
        try:
            async for event in stream:
                runner.feed(event)
                self._publish(number, release.feed(event))
        except BaseException:
            self._publish(number, release.flush())
            await runner.cancel_all()
            raise
        self._publish(number, release.flush())
        return runner

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
        data: dict[str, Any]
        match event:
            case TextDelta(text=text):
                data = {"kind": DeltaKind.TEXT, "text": text}
            case ThinkingDelta(text=text) if text:
                data = {"kind": DeltaKind.THINKING, "text": text}
            case RefusalDelta(text=text):
                data = {"kind": DeltaKind.REFUSAL, "text": text}
            case ToolCallStart(index=index, id=ident, name=name, kind=kind):
                data = {
                    "kind": DeltaKind.TOOL_START,
                    "index": index,
                    "id": ident,
                    "name": name,
                    "tool_kind": kind,
                }
            case ToolArgumentsDelta(index=index, fragment=fragment):
                data = {"kind": DeltaKind.TOOL_ARGS, "index": index, "text": fragment}
            case _:
                return
        self._journal(EntryKind.DELTA, data, turn=number)

    def _emit(self, event: AgentEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)
