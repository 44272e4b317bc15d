"""What the model is told when a call does not run, or fails.

The three rejection notices of the verdicts (truncated, interrupted, malformed)
live with the verdicts, in :mod:`railings.turn.verdict`, and are reused here
untouched. This module holds the notices of the dispatch gates, one template
each, tested verbatim: the model reads them, so their wording is behaviour.

:data:`TRUNCATION_CONTRACT` is the sentence every built-in tool's manual ends
with -- teach first, block second: the model learns the rule before it ever
meets the gate.
"""

from __future__ import annotations

__all__ = [
    "DENIED_NOTICE",
    "EXACT_ARGUMENTS_NOTICE",
    "LOOP_NOTICE",
    "MCP_DENIED_NOTICE",
    "SCHEMA_NOTICE",
    "TOOL_ERROR_NOTICE",
    "TRUNCATION_CONTRACT",
    "UNKNOWN_TOOL_NOTICE",
]

TRUNCATION_CONTRACT = (
    "Tool calls cut off by the output limit are NOT executed and must be resent "
    "complete: keep the arguments short, or split the work into several smaller calls."
)

LOOP_NOTICE = (
    "Tool call {name!r} (id {id}) was NOT executed: it is the same call with the same "
    "arguments {count} times in a row, and repeating it will not give a different result. "
    "Change the arguments or try a different approach."
)

SCHEMA_NOTICE = (
    "Tool call {name!r} (id {id}) was NOT executed: its arguments do not match the "
    "tool's schema.\n{problems}\nResend the call with arguments that match the schema."
)

UNKNOWN_TOOL_NOTICE = (
    "Tool call {name!r} (id {id}) was NOT executed: there is no tool named {name!r}. "
    "Available tools: {available}."
)

DENIED_NOTICE = (
    "Tool call {name!r} (id {id}) was NOT executed: {reason}. "
    "Do not resend it unchanged; ask the user or try something else."
)

EXACT_ARGUMENTS_NOTICE = (
    "Tool call {name!r} (id {id}) was NOT executed: its arguments are not valid JSON as "
    "sent ({problem}), and this tool runs only on arguments exactly as written. Resend "
    "this tool call with its arguments as one complete, valid JSON object."
)

TOOL_ERROR_NOTICE = "Tool call {name!r} (id {id}) failed: {error}"

MCP_DENIED_NOTICE = (
    "The MCP call {name!r} (approval request {id}) was NOT approved: the client did not "
    "allow it. Do not retry it unless the user asks for it."
)
