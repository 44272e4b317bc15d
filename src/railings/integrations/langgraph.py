"""The LangGraph guard: no tool call of a turn cut at the output limit runs on "repaired"
arguments.

When a model stops at ``max_tokens`` in the middle of a tool call, langchain-core's
streaming parser closes the fragment -- ``{"command": "rm -rf /tmp/leg`` becomes
``{"command": "rm -rf /tmp/leg"}`` -- and LangGraph's ``ToolNode`` runs it. The model
call streams whenever the model has ``streaming=True`` *or* the graph is run with
``agent.stream(..., stream_mode="messages")``, which streams any chat model. The guard
asks railings for the turn's verdict first; a call railings rejects is not executed,
and its ``ToolMessage`` (``status="error"``) is railings' resend notice, so the model
sends the call again, complete.

What a LangGraph user adds::

    from railings.integrations.langgraph import GuardedToolNode, resend_notices

    agent = create_react_agent(model, tools=GuardedToolNode(tools), post_model_hook=resend_notices)

``GuardedToolNode(tools)`` is a ``ToolNode`` (same arguments) and is all it takes to
stop the execution, in ``create_react_agent`` and in a hand-built ``StateGraph``
(``builder.add_node("tools", GuardedToolNode(tools))``). ``resend_notices`` is for
non-streamed models: there LangChain already set the cut call aside in
``invalid_tool_calls``, so no tool node ever sees it and, without the hook, the agent
stops with the call unanswered; the hook answers it with the notice and the loop goes
on. To guard a ``ToolNode`` you build yourself, pass the gate through LangGraph's own
interceptor arguments::

    ToolNode(tools, wrap_tool_call=truncation_gate, awrap_tool_call=atruncation_gate)

For ``langchain.agents.create_agent``, use the middleware in
:mod:`railings.integrations.langchain`.

Theory of operation. The gate is a ``ToolCallWrapper`` (LangGraph's extension point
around each call): it finds, in the graph state the request carries, the AI message
that made the call, and gets railings' verdict for it from
:func:`~railings.integrations.inspect_message` -- the one assembler and verdict function
the rest of railings uses. It decides *whether* a call runs, never *with what*: an
executed call gets LangChain's arguments unchanged. A call whose message is not in the
state (a graph fed bare tool calls) carries no evidence of a cut and runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from railings._extras import require

require("railings.integrations.langgraph", "langchain_core", "langgraph")

from langchain_core.messages import ToolMessage  # noqa: E402  (after the extra check)
from langgraph.prebuilt import ToolNode  # noqa: E402
from langgraph.prebuilt.tool_node import ToolCallRequest  # noqa: E402
from langgraph.types import Command  # noqa: E402

from railings.integrations._messages import (  # noqa: E402
    find_message,
    inspect_message,
    messages_of,
    verdict_for,
)
from railings.turn.verdict import CallVerdict  # noqa: E402

__all__ = [
    "GuardedToolNode",
    "TruncationGate",
    "atruncation_gate",
    "inspect_message",
    "notice_message",
    "resend_notices",
    "truncation_gate",
]

Result = ToolMessage | Command[Any]
Execute = Callable[[ToolCallRequest], Result]
AsyncExecute = Callable[[ToolCallRequest], Awaitable[Result]]
Wrapper = Callable[[ToolCallRequest, Execute], Result]
AsyncWrapper = Callable[[ToolCallRequest, AsyncExecute], Awaitable[Result]]


def notice_message(verdict: CallVerdict) -> ToolMessage:
    """The ``ToolMessage`` a rejected call gets instead of a result: railings' notice."""
    return ToolMessage(
        content=verdict.notice or "",
        name=verdict.call.name,
        tool_call_id=verdict.call.id,
        status="error",
    )


class TruncationGate:
    """A LangGraph ``ToolCallWrapper`` that runs a call only if railings' verdict allows it.

    Use the instance as ``wrap_tool_call`` and its :meth:`acall` as ``awrap_tool_call``.
    ``messages_key`` is the state key of the message list (``ToolNode``'s own argument);
    ``max_tokens`` the output limit the model is called with: a message whose billed
    output reached it was cut, whatever its stop reason says.
    """

    def __init__(self, messages_key: str = "messages", *, max_tokens: int | None = None) -> None:
        self.messages_key = messages_key
        self.max_tokens = max_tokens

    def verdict(self, request: ToolCallRequest) -> CallVerdict | None:
        """railings' verdict for the request's call; None when its message is not in the state."""
        call_id = str(request.tool_call.get("id") or "")
        message = find_message(messages_of(request.state, self.messages_key), call_id)
        if message is None:
            return None
        return verdict_for(message, call_id, max_tokens=self.max_tokens)

    def rejection(self, request: ToolCallRequest) -> ToolMessage | None:
        """The notice message for a rejected call, or None for a call that may run."""
        verdict = self.verdict(request)
        return None if verdict is None or verdict.execute else notice_message(verdict)

    def __call__(self, request: ToolCallRequest, execute: Execute) -> Result:
        """The call's result from ``execute``, or railings' notice if the call is rejected
        (then ``execute`` is never called)."""
        rejected = self.rejection(request)
        return rejected if rejected is not None else execute(request)

    async def acall(self, request: ToolCallRequest, execute: AsyncExecute) -> Result:
        """The async twin of calling the gate: ``execute`` is awaited only for a call that
        may run."""
        rejected = self.rejection(request)
        return rejected if rejected is not None else await execute(request)


truncation_gate = TruncationGate()
"""The gate for a ``ToolNode`` on the default ``messages`` key (``wrap_tool_call=``)."""
atruncation_gate = truncation_gate.acall
"""Its async twin (``awrap_tool_call=``)."""


class GuardedToolNode(ToolNode):
    """A ``ToolNode`` behind the truncation gate; takes every ``ToolNode`` argument.

    A ``wrap_tool_call`` / ``awrap_tool_call`` passed here runs inside the gate: a
    rejected call never reaches it. With only a sync wrapper, LangGraph runs it for
    async invocations too, as a plain ``ToolNode`` does. ``max_tokens``: the output
    limit the model is called with (see :class:`TruncationGate`).
    """

    def __init__(
        self,
        tools: Sequence[Any],
        *,
        messages_key: str = "messages",
        wrap_tool_call: Wrapper | None = None,
        awrap_tool_call: AsyncWrapper | None = None,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> None:
        gate = TruncationGate(messages_key, max_tokens=max_tokens)
        inner, ainner = wrap_tool_call, awrap_tool_call

        def wrap(request: ToolCallRequest, execute: Execute) -> Result:
            return gate(request, execute if inner is None else lambda r: inner(r, execute))

        async def awrap(request: ToolCallRequest, execute: AsyncExecute) -> Result:
            run = execute if ainner is None else lambda r: ainner(r, execute)
            return await gate.acall(request, run)

        # A user's sync-only wrapper cannot take an async execute: then LangGraph falls back
        # to the sync chain for async runs, as it does for a plain ToolNode.
        async_chain = awrap if inner is None or ainner is not None else None
        super().__init__(
            tools,
            messages_key=messages_key,
            wrap_tool_call=wrap,
            awrap_tool_call=async_chain,
            **kwargs,
        )


def resend_notices(
    state: Any, *, messages_key: str = "messages", max_tokens: int | None = None
) -> dict[str, list[ToolMessage]]:
    """A ``post_model_hook``: answer each call railings rejects in the latest AI message
    with its notice, so the agent loops back to the model instead of stopping.

    Calls already answered are left alone; calls railings allows are left to the tools.
    ``max_tokens``: the model's output limit (``functools.partial(resend_notices,
    max_tokens=...)``), see :class:`TruncationGate`.
    """
    messages = messages_of(state, messages_key)
    latest = next((m for m in reversed(messages) if getattr(m, "type", None) == "ai"), None)
    if latest is None:
        return {messages_key: []}
    answered = {
        getattr(m, "tool_call_id", None) for m in messages if getattr(m, "type", None) == "tool"
    }
    return {
        messages_key: [
            notice_message(verdict)
            for verdict in inspect_message(latest, max_tokens=max_tokens).verdicts
            if not verdict.execute and verdict.call.id not in answered
        ]
    }
