"""Gates: composable wrappers around one ``dispatch(call) -> outcome`` interface.

Every layer of the chain has the same shape, :class:`Dispatch`. The innermost,
:class:`ToolExecutor`, runs the tool. Each :class:`Gate` wraps another layer,
decides -- with a typed :data:`Decision`, never a string -- and either passes
the call inward or answers it itself (cf. pydantic-ai's ``ApprovalRequiredToolset``
wrapping a toolset). A chain reads from the outside in::

    SchemaGate(LoopGuard(ApprovalGate(ToolExecutor(), approve)))

which is what :func:`default_chain` builds: a call must first be well formed
(schema), then not be a repetition (loop guard), then be allowed (approval),
and only then runs. The truncation gate is not a link of this chain: the
:class:`~railings.dispatch.dispatcher.Dispatcher` applies it before the chain,
so a rejected call is never seen by any gate -- it is not an attempt.
"""

from __future__ import annotations

import abc
import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from railings.dispatch.notices import DENIED_NOTICE, SCHEMA_NOTICE, TOOL_ERROR_NOTICE
from railings.dispatch.outcome import Invocation, OutcomeStatus, ToolOutcome
from railings.dispatch.schema import schema_problems
from railings.dispatch.tools import Execution, Tool, execute
from railings.errors import ConfigurationError

__all__ = [
    "ALLOW",
    "Allow",
    "ApprovalGate",
    "Approver",
    "Decision",
    "Denied",
    "Dispatch",
    "Gate",
    "Refuse",
    "SchemaGate",
    "ToolExecutor",
    "needs_approval_unless_read_only",
]


class Dispatch(Protocol):
    """One layer of the chain: a call in, its outcome out."""

    async def dispatch(self, call: Invocation) -> ToolOutcome:
        """The outcome of ``call``: run by this layer or one it wraps, or answered unrun."""


@dataclass(frozen=True, slots=True)
class Allow:
    """The gate lets the call through to the layer it wraps."""


@dataclass(frozen=True, slots=True)
class Refuse:
    """The gate answers the call itself: ``notice`` goes to the model, the tool never runs."""

    status: OutcomeStatus
    notice: str

    def __post_init__(self) -> None:
        if self.status is OutcomeStatus.EXECUTED:
            raise ConfigurationError("a gate cannot refuse a call with status EXECUTED")


Decision = Allow | Refuse
ALLOW = Allow()


class Gate(abc.ABC):
    """A wrapper that decides before the layer it wraps sees the call."""

    def __init__(self, inner: Dispatch) -> None:
        self.inner = inner

    @abc.abstractmethod
    async def decide(self, call: Invocation) -> Decision:
        """Allow the call through, or refuse it with a status and a notice."""

    async def dispatch(self, call: Invocation) -> ToolOutcome:
        """Decide, then pass the call to the wrapped layer (:class:`Allow`) or answer it with the
        refusal's status and notice (:class:`Refuse`). Anything else raises
        :class:`~railings.errors.ConfigurationError`: the gate fails closed."""
        decision = await self.decide(call)
        match decision:
            case Refuse(status=status, notice=notice):
                return call.outcome(status, notice)
            case Allow():
                return await self.inner.dispatch(call)
            case _:  # fail closed: a truthy non-decision must not let a call through
                raise ConfigurationError(
                    f"gate {type(self).__name__} decided {decision!r}, not Allow or Refuse"
                )


class ToolExecutor:
    """The innermost layer: runs the tool, or collects the task started for it mid-stream."""

    async def dispatch(self, call: Invocation) -> ToolOutcome:
        """The outcome of running the tool: ``EXECUTED`` with its result, or ``ERROR`` with the
        tool-error notice. A task started while streaming is awaited, not run again; if it was
        cancelled, the tool runs afresh."""
        run: Execution | None = None
        task = call.prestarted
        if task is not None:
            # wait() does not raise when the task itself was cancelled; then run afresh.
            await asyncio.wait({task})
            if not task.cancelled():
                run = task.result()
        speculative = run is not None
        if run is None:
            run = await execute(call.tool, call.arguments)
        if run.ok:
            return call.outcome(OutcomeStatus.EXECUTED, run.content, speculative=speculative)
        notice = TOOL_ERROR_NOTICE.format(name=call.name, id=call.id or "-", error=run.content)
        return call.outcome(OutcomeStatus.ERROR, notice, speculative=speculative)


class SchemaGate(Gate):
    """Validates the arguments against the tool's JSON Schema (with ``jsonschema``).

    A mismatch is not executed; the model gets each problem with its JSON path.
    It is an ``ERROR`` -- the model completed the call and got it wrong -- so the
    circuit breaker counts it.
    """

    async def decide(self, call: Invocation) -> Decision:
        """Allow when the arguments match the schema; otherwise refuse as ``ERROR``, listing
        every problem."""
        problems = schema_problems(call.tool.parameters, call.arguments)
        if not problems:
            return ALLOW
        text = "\n".join(f"- {line}" for line in problems)
        notice = SCHEMA_NOTICE.format(name=call.name, id=call.id or "-", problems=text)
        return Refuse(OutcomeStatus.ERROR, notice)


@dataclass(frozen=True, slots=True)
class Denied:
    """An approver's refusal with its reason, told to the model in the notice (a bare
    ``False`` reads "the user declined to run it")."""

    reason: str


Approver = Callable[[Invocation], bool | Denied | Awaitable[bool | Denied]]
"""``approve(call)``, plain or async: True runs the call; False or :class:`Denied` denies it."""


def needs_approval_unless_read_only(tool: Tool) -> bool:
    """The default approval rule: every tool not marked ``read_only`` needs approval."""
    return not tool.read_only


class ApprovalGate(Gate):
    """Asks ``approve(call)`` before a call runs -- the hook behind shell confirmation.

    A call is asked about when ``needs_approval(tool)`` is true (by default, for
    every tool that is not read-only), and also, whatever that rule says, when the
    call itself gives a reason (:attr:`Invocation.approval_reason`: the built-in
    ``write_file`` gives one for a write that configures later commands, see
    :mod:`railings.dispatch.configuring`). Only an answer of ``True`` runs the
    call; anything else is ``DENIED`` (fail closed): an intervention, not an error.
    """

    def __init__(
        self,
        inner: Dispatch,
        approve: Approver,
        *,
        needs_approval: Callable[[Tool], bool] = needs_approval_unless_read_only,
    ) -> None:
        super().__init__(inner)
        self.approve = approve
        self.needs_approval = needs_approval

    async def decide(self, call: Invocation) -> Decision:
        """Allow a call that needs no approval, or one ``approve`` answered exactly ``True``;
        refuse anything else as ``DENIED``."""
        if call.approval_reason is None and not self.needs_approval(call.tool):
            return ALLOW
        answer = self.approve(call)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is True:
            return ALLOW
        reason = answer.reason if isinstance(answer, Denied) else "the user declined to run it"
        notice = DENIED_NOTICE.format(name=call.name, id=call.id or "-", reason=reason)
        return Refuse(OutcomeStatus.DENIED, notice)
