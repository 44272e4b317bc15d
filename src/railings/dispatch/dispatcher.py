"""Batch dispatch: every tool call of one turn, with the truncation gate placed first.

The placement is reject-and-resend (a cut call is answered, never run), and each
choice is deliberate:

1. **The truncation gate comes first.** Every call is judged by
   :func:`~railings.turn.verdict.judge` -- the one verdict logic: an abruptly
   terminated turn rejects every call (it executes nothing); a truncated turn
   (an output-limit stop anywhere in the turn) rejects each
   call whose strict parse failed, never repairing it, and every call whose
   completeness cannot be proven from raw text (arguments parsed upstream, a
   freeform input); a finished turn repairs what it can.
2. **A rejected call is answered with its notice and nothing else.** It never
   enters the gate chain, so the loop guard does not count it -- the model never
   finished writing it, so it is not one of its attempts -- and it never reaches
   the circuit breaker: like an interception, it is an intervention, not an
   execution.
3. **Speculative tasks of rejected calls are cancelled at once**, before any
   other call of the turn runs: fragmentary arguments may slip into no
   execution path.
4. **Sibling calls whose arguments parsed completely execute as usual**,
   through the chain, in the order the calls started.
5. **Repaired arguments reach only tools that accept them.** A tool made with
   ``repair=False`` (the built-in ``shell`` and ``write_file``) never runs on
   arguments the repair ladder fixed: the call is rejected like a malformed
   one, and the notice names what was wrong, so the model resends it whole.

6. **An MCP approval request is answered, never run.** A Responses
   ``mcp_approval_request`` (call type ``mcp_approval``) asks the client to
   approve a call the provider will make to a remote MCP server. It is answered by
   ``approve_mcp(verdict)`` (sync or async): ``True`` approves it (status
   ``EXECUTED``, sent back as ``mcp_approval_response`` with ``approve: true``);
   without a hook, or on anything but ``True``, it is denied -- a remote action
   nobody approved does not happen.

Calls run one after another: the loop guard's "in a row" and the breaker's
"consecutive" are then well defined, and a confirmation prompt never competes
with another. Concurrency comes from speculative start, for the read-only
tools that opt in.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from railings.dispatch.gates import (
    ApprovalGate,
    Approver,
    Dispatch,
    SchemaGate,
    ToolExecutor,
    needs_approval_unless_read_only,
)
from railings.dispatch.guards import CircuitBreaker, LoopGuard
from railings.dispatch.notices import (
    EXACT_ARGUMENTS_NOTICE,
    MCP_DENIED_NOTICE,
    UNKNOWN_TOOL_NOTICE,
)
from railings.dispatch.outcome import BatchResult, Invocation, OutcomeStatus, ToolOutcome
from railings.dispatch.speculative import SpeculativeRunner
from railings.dispatch.tools import Tool, ToolRegistry
from railings.turn.model import Turn
from railings.turn.repair import Rung
from railings.turn.verdict import CallVerdict, judge

__all__ = ["Dispatcher", "default_chain"]


def default_chain(
    *,
    approve: Approver | None = None,
    needs_approval: Callable[[Tool], bool] = needs_approval_unless_read_only,
    max_repeats: int | None = 3,
) -> Dispatch:
    """``SchemaGate(LoopGuard(ApprovalGate(ToolExecutor(), approve)))``.

    Without ``approve`` there is no approval gate; with ``max_repeats=None``
    no loop guard. ``needs_approval(tool) -> bool`` picks the tools that ask
    (default: every tool that is not read-only).
    """
    chain: Dispatch = ToolExecutor()
    if approve is not None:
        chain = ApprovalGate(chain, approve, needs_approval=needs_approval)
    if max_repeats is not None:
        chain = LoopGuard(chain, max_repeats=max_repeats)
    return SchemaGate(chain)


class Dispatcher:
    """Dispatches the tool calls of each turn through the truncation gate and ``chain``.

    ``chain`` defaults to :func:`default_chain`; ``breaker`` to a
    :class:`CircuitBreaker` with its default limit. Both keep state across turns:
    use one dispatcher per agent conversation.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        chain: Dispatch | None = None,
        breaker: CircuitBreaker | None = None,
        approve_mcp: Callable[[CallVerdict], bool | Awaitable[bool]] | None = None,
    ) -> None:
        self.registry = registry
        self.chain = chain if chain is not None else default_chain()
        self.breaker = breaker if breaker is not None else CircuitBreaker()
        self.approve_mcp = approve_mcp

    async def dispatch_turn(
        self, turn: Turn, *, speculative: SpeculativeRunner | None = None
    ) -> BatchResult:
        """One :class:`ToolOutcome` per local call of ``turn``, in the order the calls started.

        ``speculative`` is the runner that was fed this turn's events, if any.
        Raises :class:`~railings.errors.CircuitOpen` when the breaker trips;
        every speculative task is cancelled before this returns or raises.
        """
        verdicts = judge(turn)
        try:
            if speculative is not None:
                await speculative.cancel(*(v.call for v in verdicts if not v.execute))
            outcomes: list[ToolOutcome] = []
            for verdict in verdicts:
                if not verdict.execute:
                    outcome = _answered(verdict, OutcomeStatus.REJECTED, verdict.notice or "")
                elif verdict.call.type == "mcp_approval":
                    outcome = await self._approval(verdict)
                else:
                    outcome = await self._dispatch(verdict, speculative)
                    self.breaker.record(outcome)
                outcomes.append(outcome)
            return BatchResult(turn, tuple(outcomes))
        finally:
            if speculative is not None:
                await speculative.cancel_all()

    async def _approval(self, verdict: CallVerdict) -> ToolOutcome:
        """Answer a pending MCP approval request (rule 6 of the module docstring)."""
        approved: object = False
        if self.approve_mcp is not None:
            approved = self.approve_mcp(verdict)
            if inspect.isawaitable(approved):
                approved = await approved
        if approved is True:
            return _answered(verdict, OutcomeStatus.EXECUTED, "approved")
        notice = MCP_DENIED_NOTICE.format(name=verdict.call.name, id=verdict.call.id or "-")
        return _answered(verdict, OutcomeStatus.DENIED, notice)

    async def _dispatch(
        self, verdict: CallVerdict, speculative: SpeculativeRunner | None
    ) -> ToolOutcome:
        found = self.registry.get(verdict.call.name)
        if found is None:
            return _unknown(verdict, self.registry)
        if verdict.repaired and not found.repair:
            return _not_exact(verdict)
        if speculative is None:
            return await self.chain.dispatch(Invocation(verdict, found))
        try:
            return await self.chain.dispatch(Invocation(verdict, found, speculative.claim(verdict)))
        finally:
            # A gate that answered the call itself left the task unused: discard it now.
            await speculative.cancel(verdict.call)


def _answered(verdict: CallVerdict, status: OutcomeStatus, notice: str) -> ToolOutcome:
    """The outcome of a call the dispatcher answers itself, before the chain."""
    return ToolOutcome(verdict.call.id, verdict.call.name, status, notice, verdict)


# What each rung of the repair ladder would have fixed, as the model is told it.
_PROBLEMS = {
    Rung.UNWRAP: "the object is wrapped in other text",
    Rung.TRAILING_COMMAS: "it has trailing commas",
    Rung.CLOSE: "a string, array or object is left open",
    Rung.PYTHON_LITERAL: "it is a Python literal, not JSON",
}


def _not_exact(verdict: CallVerdict) -> ToolOutcome:
    call = verdict.call
    problem = _PROBLEMS.get(verdict.rung, "it needs repair") if verdict.rung else ""
    notice = EXACT_ARGUMENTS_NOTICE.format(name=call.name, id=call.id or "-", problem=problem)
    return _answered(verdict, OutcomeStatus.REJECTED, notice)


def _unknown(verdict: CallVerdict, registry: ToolRegistry) -> ToolOutcome:
    call = verdict.call
    notice = UNKNOWN_TOOL_NOTICE.format(
        name=call.name, id=call.id or "-", available=", ".join(registry.names) or "none"
    )
    return _answered(verdict, OutcomeStatus.ERROR, notice)
