"""Speculative start: run a read-only call while the rest of the turn is still streaming.

Theory of operation. The runner is fed the same normalized events the turn
assembler is fed. It accumulates each call's argument fragments (joined once,
never re-parsed per fragment) and, when the provider closes the call's argument
block -- Anthropic ``content_block_stop``; OpenAI when a later call starts or
the finish reason arrives, both a :class:`~railings.events.ToolCallEnd` -- it
starts the tool at once, if and only if:

* the tool is registered with ``speculative=True`` (only read-only tools may be);
* the joined arguments parse **strictly** (``STRICT_ONLY``: a fragment is never
  closed or repaired into arguments) and match the tool's schema;
* the tool's ``approval`` rule gives no reason for these arguments (and does not
  fail): a call the user must approve waits for the answer, at the end of the
  turn, like any other call that is asked about.

Nothing the runner starts is a result yet. When the turn ends,
:meth:`~railings.dispatch.dispatcher.Dispatcher.dispatch_turn` judges it like
any other and then:

* the call's verdict is *execute* with exactly the arguments the task started
  with -> the task's result is used (:meth:`claim`);
* anything else -- truncated, interrupted, malformed, different arguments, a
  gate refusing it -- -> the task is cancelled and its result discarded.

A fragment that arrives for a call after its block was closed means the task
started on arguments that are no longer the call's: it is cancelled then and
there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from railings.dispatch.schema import schema_problems
from railings.dispatch.tools import Execution, Tool, ToolRegistry, execute
from railings.errors import ConfigurationError
from railings.events import StreamEvent, ToolArgumentsDelta, ToolCallEnd, ToolCallStart
from railings.turn.model import ToolCall
from railings.turn.repair import RepairPolicy, Rung, parse_arguments
from railings.turn.verdict import CallVerdict

__all__ = ["SpeculativeRunner"]


@dataclass(slots=True)
class _Speculation:
    position: int  # among the turn's local calls: ToolCall.index
    id: str
    name: str
    tool: Tool
    initial: str
    fragments: list[str] = field(default_factory=list)
    arguments: dict[str, Any] | None = None
    started_raw: str | None = None  # the exact argument text the task started from
    task: asyncio.Task[Execution] | None = None

    def raw(self) -> str:
        # The assembler's rule: the joined fragments, else the start block's own input.
        return "".join(self.fragments) or self.initial


def _asks(tool: Tool, arguments: dict[str, Any]) -> bool:
    """True when ``tool``'s approval rule gives a reason for ``arguments``, or fails (the
    approval gate asks then too)."""
    if tool.approval is None:
        return False
    try:
        return tool.approval(arguments) is not None
    except Exception:  # the gate treats a failing rule as a reason: so does this
        return True


class SpeculativeRunner:
    """Starts speculative tools of ``registry`` from a live event stream.

    One runner per turn: it is fed that turn's events and handed to
    :meth:`~railings.dispatch.dispatcher.Dispatcher.dispatch_turn` with that turn.
    Feed it inside the running event loop; use it as an async context manager
    (or call :meth:`cancel_all`) so that no task outlives the turn when the
    stream fails before the turn is dispatched.
    """

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        self._by_index: dict[int, _Speculation] = {}  # event index -> call
        self._by_position: dict[int, _Speculation] = {}  # ToolCall.index -> call
        self._local = 0  # local (function) calls seen so far
        self._cancelled: list[str] = []

    def feed(self, event: StreamEvent) -> None:
        """Apply one normalized event; may start a task (see the module docstring)."""
        match event:
            case ToolCallStart(index=index, id=ident, name=name, kind=kind, initial_arguments=init):
                if kind != "function":
                    return
                position, self._local = self._local, self._local + 1
                found = self._registry.get(name)
                if found is not None and found.speculative:
                    new = _Speculation(position, ident, name, found, init)
                    self._by_index[index] = self._by_position[position] = new
            case ToolArgumentsDelta(index=index, fragment=fragment):
                spec = self._by_index.get(index)
                if spec is not None:
                    spec.fragments.append(fragment)
                    if spec.task is not None and fragment:
                        self._cancel(spec)  # the arguments it started with are stale
            case ToolCallEnd(index=index):
                spec = self._by_index.get(index)
                if spec is not None and spec.task is None and spec.arguments is None:
                    self._start(spec)

    def feed_all(self, events: Iterable[StreamEvent]) -> None:
        """Apply each event in order, as :meth:`feed` does."""
        for event in events:
            self.feed(event)

    @property
    def started(self) -> tuple[str, ...]:
        """Ids of the calls a task was started for, in order."""
        return tuple(s.id for s in self._by_index.values() if s.arguments is not None)

    @property
    def cancelled(self) -> tuple[str, ...]:
        """Ids of the calls whose task was cancelled, in order."""
        return tuple(self._cancelled)

    def claim(self, verdict: CallVerdict) -> asyncio.Task[Execution] | None:
        """The task started for this call, if it may stand in for running it now.

        Only for an *execute* verdict, strictly parsed, of exactly the argument text
        the task started from; otherwise the task (if any) is cancelled.
        """
        spec = self._find(verdict.call)
        if spec is None or spec.task is None:
            return None
        exact = verdict.rung is Rung.STRICT and verdict.call.raw_arguments == spec.started_raw
        if verdict.execute and exact:
            return spec.task
        self._cancel(spec)
        return None

    async def cancel(self, *calls: ToolCall) -> None:
        """Cancel the tasks of ``calls`` at once and wait until they have stopped."""
        await self._stop(s for s in map(self._find, calls) if s is not None)

    async def cancel_all(self) -> None:
        """Cancel every task still running and wait until they have stopped."""
        await self._stop(self._by_index.values())

    async def __aenter__(self) -> SpeculativeRunner:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.cancel_all()

    def _start(self, spec: _Speculation) -> None:
        raw = spec.raw()
        parsed = parse_arguments(raw, RepairPolicy.STRICT_ONLY)
        if parsed is None or schema_problems(spec.tool.parameters, parsed.value):
            return  # left to the verdict and the schema gate at the end of the turn
        if _asks(spec.tool, parsed.value):
            return  # left to the approval gate: nothing runs before the user answers
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError as exc:
            raise ConfigurationError(
                "SpeculativeRunner.feed must be called inside a running event loop"
            ) from exc
        spec.arguments, spec.started_raw = parsed.value, raw
        spec.task = loop.create_task(
            execute(spec.tool, parsed.value), name=f"speculative {spec.name} {spec.id}"
        )

    def _find(self, call: ToolCall) -> _Speculation | None:
        spec = self._by_position.get(call.index)
        if spec is not None and spec.id == call.id and spec.name == call.name:
            return spec
        return None

    async def _stop(self, specs: Iterable[_Speculation]) -> None:
        """Cancel the tasks of ``specs`` still running, and wait until they have stopped."""
        tasks = [t for t in map(self._cancel, specs) if t is not None]
        if tasks:
            await asyncio.wait(tasks)

    def _cancel(self, spec: _Speculation) -> asyncio.Task[Execution] | None:
        """Cancel a task still running; returns it so the caller can wait for it to stop."""
        task = spec.task
        if task is None or task.done():
            return None
        task.cancel()
        self._cancelled.append(spec.id)
        return task
