"""Tool-call verdicts: the one place that decides whether a call may run.

The order is the rule (truncation before repair; no proof, no execution):

1. The turn terminated abruptly -> **reject, interrupted**. Even arguments that
   parse are not proven to be what the model meant to send: the turn never
   proved it finished. Likewise, a turn whose provider said the model wrote a call
   wrong (stop reason ``malformed_tool_use``: Bedrock's, Gemini's
   ``MALFORMED_FUNCTION_CALL`` ...) -> **reject, malformed**, every call of the
   turn: the provider's own word outranks arguments that happen to parse, and no
   call of a botched step is the model's intended action.
2. The turn is truncated (an output-limit stop seen anywhere in the turn, or billed
   output that reached the request's limit whatever stop reason the wire claims --
   servers report ``tool_calls`` for turns ``max_tokens`` cut)
   and the call's completeness cannot be proven from raw text ->
   **reject, truncated**, *every* such call of the turn, not only the last. A
   call is provable only when its arguments are JSON text the model wrote
   (:attr:`~railings.turn.model.ToolCall.provable`); arguments that arrived
   already parsed (an object on the wire, an Anthropic ``Message``'s input, a
   LangChain call, a Responses ``local_shell_call`` / ``shell_call`` /
   ``apply_patch_call`` / ``computer_call`` item) and freeform ``custom`` inputs
   carry no closing brace to check. Why all of them: "only the last call can be
   cut" holds for text the model writes in order, but a parsed call has been
   through a server, SDK or framework that may have reordered the calls
   (LangChain puts the ones it could not parse last), dropped or repaired the cut
   one, or assembled them after the fact; railings can verify none of that. A
   complete call rejected costs one resend; a cut call executed can cost
   ``rm -rf /tmp/leg``.
3. The turn is truncated and the call's strict parse failed -> **reject,
   truncated**. Never repaired: closing the fragment would finish the model's
   half-sentence. An empty argument string in a truncated turn is truncation too.
4. The strict parse failed in a turn that is not truncated: arguments that
   were not the model's JSON text (parsed upstream, or a freeform input that
   never closed) -> **reject, malformed**; otherwise an empty string means
   ``{}``, and anything else climbs the repair ladder
   (:func:`~railings.turn.repair.parse_arguments` with ``REPAIR_ALLOWED``):
   **execute, repaired** or **reject, malformed** -- but only for a call the
   model is known to have finished: its end was signalled (``content_block_stop``,
   a Responses item's ``.done``, a finish reason). A call whose end never came is
   **reject, malformed**, never repaired, whatever the turn's stop reason says:
   when the event carrying ``max_tokens`` is lost, the derived stop reason says
   ``tool_use``, and a server that ends the response right after a cut argument
   delta says ``completed``; closing the cut fragment would run the half-sentence
   rule 3 exists to stop.
5. Otherwise -> **execute**. For an ``mcp_approval`` call (a Responses
   ``mcp_approval_request``), *execute* means the approval is pending: the
   client must answer it (approve or deny); it never runs a local tool.

Each rejection comes with the notice the model is sent back instead of a result.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from railings.turn.limit import reached_limit
from railings.turn.model import Termination, ToolCall, Turn, UsageSource
from railings.turn.repair import RepairPolicy, Rung, parse_arguments
from railings.turn.stop_reason import Stop

__all__ = [
    "TRUNCATION_UNPROVEN_NOTICE",
    "CallVerdict",
    "RejectReason",
    "Verdict",
    "cut_at_limit",
    "interrupted_notice",
    "judge",
    "judge_call",
    "malformed_notice",
    "notice_for",
    "truncation_notice",
]


class Verdict(enum.Enum):
    """Whether a call may run."""

    EXECUTE = "execute"
    REJECT = "reject"


class RejectReason(enum.Enum):
    """Why a call may not run: the turn ended without its proof (rule 1), the output limit
    may have cut the call (rules 2-3), or its arguments cannot be read (rule 4, and rule
    1's provider-reported malformed call)."""

    INTERRUPTED = "interrupted"
    TRUNCATED = "truncated"
    MALFORMED = "malformed"


@dataclass(frozen=True, slots=True)
class CallVerdict:
    """The decision for one call. ``arguments`` are what to execute with (after repair)."""

    call: ToolCall
    verdict: Verdict
    reason: RejectReason | None = None
    arguments: dict[str, Any] | None = None
    rung: Rung | None = None
    notice: str | None = None

    @property
    def repaired(self) -> bool:
        """True when the arguments came from a rung of the repair ladder above ``STRICT``."""
        return self.rung is not None and self.rung is not Rung.STRICT

    @property
    def execute(self) -> bool:
        """True when the call may run (with :attr:`arguments`)."""
        return self.verdict is Verdict.EXECUTE


# The notices. One template each, tested verbatim: the model reads them.
_RESEND_WHOLE = (
    "Resend this tool call in full, with complete arguments. "
    "If the arguments are long, shorten them or split the work into several smaller "
    "calls so that each call fits within the output limit."
)
TRUNCATION_NOTICE = (
    "Tool call {name!r} (id {id}) was NOT executed: the response stopped at the output "
    "limit (stop_reason: {stop_reason}) before its arguments were complete. " + _RESEND_WHOLE
)
INTERRUPTED_NOTICE = (
    "Tool call {name!r} (id {id}) was NOT executed: the response stream was interrupted "
    "before the provider confirmed the turn had finished, so the call may be incomplete. "
    "Resend this tool call in full if it is still needed."
)
TRUNCATION_UNPROVEN_NOTICE = (
    "Tool call {name!r} (id {id}) was NOT executed: the response stopped at the output "
    "limit (stop_reason: {stop_reason}), and this call's arguments arrived in a form whose "
    "completeness cannot be checked, so it may have been cut. " + _RESEND_WHOLE
)
INCOMPLETE_INPUT_NOTICE = (
    "Tool call {name!r} (id {id}) was NOT executed: its input did not arrive complete. "
    "Resend this tool call in full."
)
MALFORMED_NOTICE = (
    "Tool call {name!r} (id {id}) was NOT executed: its arguments are not a valid JSON "
    "object and could not be read. Resend this tool call with its arguments as one "
    "valid JSON object."
)


def truncation_notice(call: ToolCall, stop_reason: str, limit: int | None = None) -> str:
    """The notice for a call rejected as truncated; a call whose completeness cannot be
    proven from raw text gets the wording that says so. ``limit``: the turn was found
    truncated because its billed output reached this limit, not by its stop reason, and
    the notice says so."""
    template = TRUNCATION_NOTICE if call.provable else TRUNCATION_UNPROVEN_NOTICE
    if limit is not None:
        stop_reason = f"{stop_reason}, but billed output reached the limit of {limit} tokens"
    return template.format(name=call.name, id=call.id or "-", stop_reason=stop_reason)


def interrupted_notice(call: ToolCall) -> str:
    """The notice for a call of a turn that ended without its proof."""
    return INTERRUPTED_NOTICE.format(name=call.name, id=call.id or "-")


def malformed_notice(call: ToolCall) -> str:
    """The notice for a call whose arguments cannot be read: not a JSON object, or (for
    arguments not written as JSON text) an input that never arrived complete."""
    template = MALFORMED_NOTICE if call.provable else INCOMPLETE_INPUT_NOTICE
    return template.format(name=call.name, id=call.id or "-")


def notice_for(
    verdict: CallVerdict, stop_reason: str | None, limit: int | None = None
) -> str | None:
    """The notice for a rejected call, or None for one that executes; ``limit`` as for
    :func:`truncation_notice`."""
    match verdict.reason:
        case RejectReason.TRUNCATED:
            return truncation_notice(verdict.call, stop_reason or "max_tokens", limit)
        case RejectReason.INTERRUPTED:
            return interrupted_notice(verdict.call)
        case RejectReason.MALFORMED:
            return malformed_notice(verdict.call)
    return None


def judge_call(turn: Turn, call: ToolCall) -> CallVerdict:
    """The verdict for one local call of ``turn`` (see the module docstring for the order)."""
    if turn.termination is Termination.ABRUPT:
        return _reject(call, RejectReason.INTERRUPTED, turn)
    if turn.stop_reason == Stop.MALFORMED_TOOL_USE:
        return _reject(call, RejectReason.MALFORMED, turn)  # rule 1: the provider said so
    if turn.truncated and not call.provable:
        return _reject(call, RejectReason.TRUNCATED, turn)  # rule 2: every unprovable call
    if call.arguments is not None:
        return CallVerdict(call, Verdict.EXECUTE, arguments=call.arguments, rung=Rung.STRICT)
    if turn.truncated:
        return _reject(call, RejectReason.TRUNCATED, turn)
    if not call.provable:
        return _reject(call, RejectReason.MALFORMED, turn)  # not the model's JSON: no repair
    if not call.raw_arguments.strip():
        return CallVerdict(call, Verdict.EXECUTE, arguments={}, rung=Rung.STRICT)
    if not call.closed:
        return _reject(call, RejectReason.MALFORMED, turn)  # not known finished: no repair
    parsed = parse_arguments(call.raw_arguments, RepairPolicy.REPAIR_ALLOWED)
    if parsed is None:
        return _reject(call, RejectReason.MALFORMED, turn)
    return CallVerdict(call, Verdict.EXECUTE, arguments=parsed.value, rung=parsed.rung)


def judge(turn: Turn) -> tuple[CallVerdict, ...]:
    """Verdicts for every local call of ``turn``, in the order the calls started."""
    return tuple(judge_call(turn, call) for call in turn.tool_calls)


def cut_at_limit(turn: Turn) -> int | None:
    """The request's limit when the turn is truncated by its billed output reaching it
    while the stop reason says otherwise (the notice must say why), else None."""
    if not turn.truncated or turn.stop_reason == Stop.MAX_TOKENS:
        return None
    output = turn.peak_output_tokens
    usage = turn.usage
    if output is None and usage is not None and usage.output_source is UsageSource.REPORTED:
        output = usage.output_tokens  # a turn built without the assembler; never an estimate
    return turn.max_tokens if reached_limit(output, turn.max_tokens) else None


def _reject(call: ToolCall, reason: RejectReason, turn: Turn) -> CallVerdict:
    verdict = CallVerdict(call, Verdict.REJECT, reason=reason)
    notice = notice_for(verdict, turn.stop_reason, cut_at_limit(turn))
    return CallVerdict(call, Verdict.REJECT, reason=reason, notice=notice)
