"""The truncation guard as LangChain agent middleware (``langchain.agents.create_agent``).

``create_agent`` is where LangGraph 1.x points ``create_react_agent`` users. What a
user adds::

    from railings.integrations.langchain import TruncationGuard

    agent = create_agent(model, tools, middleware=[TruncationGuard()])

It hooks in twice, both through the middleware's own extension points:

* ``after_model``: each call railings rejects in the model's message is answered at
  once with railings' resend notice (a ``ToolMessage``, ``status="error"``), and the
  agent goes back to the model. This covers the non-streamed case too, where
  LangChain set the cut call aside in ``invalid_tool_calls`` and the agent would
  otherwise end with the call unanswered.
* ``wrap_tool_call``: the same gate as :class:`~railings.integrations.langgraph.GuardedToolNode`
  at the moment of execution, for calls that reach the tools some other way
  (``jump_to="tools"``, a human-in-the-loop edit).

The verdict is railings' own (:func:`~railings.integrations.inspect_message`): the
middleware decides whether a call runs, never with what arguments.
"""

from __future__ import annotations

from typing import Any

from railings._extras import require

require("railings.integrations.langchain", "langchain_core", "langgraph", "langchain")

from langchain.agents.middleware import AgentMiddleware, hook_config  # noqa: E402
from langchain_core.messages import ToolMessage  # noqa: E402
from langgraph.prebuilt.tool_node import ToolCallRequest  # noqa: E402
from langgraph.runtime import Runtime  # noqa: E402

from railings.integrations._messages import inspect_message, messages_of  # noqa: E402
from railings.integrations.langgraph import (  # noqa: E402
    AsyncExecute,
    Execute,
    Result,
    TruncationGate,
    resend_notices,
)

__all__ = ["TruncationGuard", "inspect_message"]


class TruncationGuard(AgentMiddleware):
    """Middleware that keeps a turn cut at the output limit from running its cut calls.

    ``max_tokens``: the output limit the model is called with; a message whose billed
    output reached it was cut, whatever its stop reason says."""

    def __init__(self, *, max_tokens: int | None = None) -> None:
        super().__init__()
        self.max_tokens = max_tokens
        self._gate = TruncationGate(max_tokens=max_tokens)

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Answer each call railings rejects in the latest AI message with its notice; when
        no call is left for the tools, jump back to the model. None: nothing rejected."""
        notices: list[ToolMessage] = resend_notices(state, max_tokens=self.max_tokens)["messages"]
        if not notices:
            return None
        update: dict[str, Any] = {"messages": notices}
        if not _pending(state, notices):
            # Nothing left for the tools: without the jump an agent whose only call was
            # set aside as invalid would end here instead of sending the notice.
            update["jump_to"] = "model"
        return update

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """:meth:`after_model` for async agents (it does no I/O)."""
        return self.after_model(state, runtime)

    def wrap_tool_call(self, request: ToolCallRequest, handler: Execute) -> Result:
        """Run the call through ``handler`` only if railings' verdict allows it; else its
        notice."""
        return self._gate(request, handler)

    async def awrap_tool_call(self, request: ToolCallRequest, handler: AsyncExecute) -> Result:
        """The async twin of :meth:`wrap_tool_call`."""
        return await self._gate.acall(request, handler)


def _pending(state: Any, notices: list[ToolMessage]) -> bool:
    """Whether the latest AI message still has a call no tool message answers."""
    messages = messages_of(state)
    latest = next((m for m in reversed(messages) if getattr(m, "type", None) == "ai"), None)
    answered = {
        getattr(m, "tool_call_id", None)
        for m in [*messages, *notices]
        if getattr(m, "type", None) == "tool"
    }
    return any(call.get("id") not in answered for call in getattr(latest, "tool_calls", ()) or ())
