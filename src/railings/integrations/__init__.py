"""railings where users already are: guards for the frameworks they run tools with.

``import railings`` never imports this package, and this package imports no framework:
each framework lives in its own module, imported only when asked for.

* :mod:`railings.integrations.langgraph` -- ``GuardedToolNode``, ``truncation_gate``,
  ``resend_notices`` for LangGraph (``pip install langgraph``).
* :mod:`railings.integrations.langchain` -- ``TruncationGuard``, the middleware for
  ``langchain.agents.create_agent``.
* :func:`inspect_message` -- the turn verdict for a LangChain ``AIMessage``, read by
  shape (needs no framework installed).
"""

from __future__ import annotations

from railings.integrations._messages import inspect_message

__all__ = ["inspect_message"]
