"""Safe dispatch: tools, the truncation gate, the gate chain, loop guard, circuit breaker,
speculative start and the built-in tools.

The rule that holds throughout: **half a sentence never reaches a tool**. Every
call is judged by :func:`railings.turn.verdict.judge` first; arguments cut off
by the output limit are never completed, never executed, and the model is told
to resend.

::

    registry = ToolRegistry(builtin_tools("."))
    dispatcher = Dispatcher(registry, chain=default_chain(approve=ask_the_user))
    batch = await dispatcher.dispatch_turn(turn)
    for outcome in batch:
        send_back(outcome.call_id, outcome.content, is_error=outcome.is_error)
"""

from __future__ import annotations

from railings.dispatch.builtins import (
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    builtin_tools,
    confine,
    spawn,
)
from railings.dispatch.dispatcher import Dispatcher, default_chain
from railings.dispatch.gates import (
    ALLOW,
    Allow,
    ApprovalGate,
    Approver,
    Decision,
    Denied,
    Dispatch,
    Gate,
    Refuse,
    SchemaGate,
    ToolExecutor,
    needs_approval_unless_read_only,
)
from railings.dispatch.guards import CircuitBreaker, LoopGuard, canonical_arguments
from railings.dispatch.notices import (
    DENIED_NOTICE,
    LOOP_NOTICE,
    SCHEMA_NOTICE,
    TOOL_ERROR_NOTICE,
    TRUNCATION_CONTRACT,
    UNKNOWN_TOOL_NOTICE,
)
from railings.dispatch.outcome import BatchResult, Invocation, OutcomeStatus, ToolOutcome
from railings.dispatch.schema import check_schema, derive_schema, schema_problems
from railings.dispatch.speculative import SpeculativeRunner
from railings.dispatch.tools import (
    DEFAULT_TOOL_TIMEOUT,
    Execution,
    Tool,
    ToolFailure,
    ToolRegistry,
    execute,
    tool,
)

__all__ = [
    "ALLOW",
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TOOL_TIMEOUT",
    "DENIED_NOTICE",
    "LOOP_NOTICE",
    "SCHEMA_NOTICE",
    "TOOL_ERROR_NOTICE",
    "TRUNCATION_CONTRACT",
    "UNKNOWN_TOOL_NOTICE",
    "Allow",
    "ApprovalGate",
    "Approver",
    "BatchResult",
    "CircuitBreaker",
    "Decision",
    "Denied",
    "Dispatch",
    "Dispatcher",
    "Execution",
    "Gate",
    "Invocation",
    "LoopGuard",
    "OutcomeStatus",
    "Refuse",
    "SchemaGate",
    "SpeculativeRunner",
    "Tool",
    "ToolExecutor",
    "ToolFailure",
    "ToolOutcome",
    "ToolRegistry",
    "builtin_tools",
    "canonical_arguments",
    "check_schema",
    "confine",
    "default_chain",
    "derive_schema",
    "execute",
    "needs_approval_unless_read_only",
    "schema_problems",
    "spawn",
    "tool",
]
