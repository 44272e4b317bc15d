"""The railings test kit: a scripted model server and a fault-injection proxy.

::

    from railings.testing import Fault, FaultProxy, Script, ScriptedServer

    script = Script.from_dict({"turns": [{"text": "Hello!"}]})
    with ScriptedServer(script) as server, FaultProxy(server.url, "truncate:events=3") as proxy:
        ...  # point a client at proxy.url (+ "/v1" for the OpenAI SDK)

The server speaks OpenAI Chat Completions and Responses, Anthropic Messages, Gemini,
Bedrock Converse (event-stream frames) and Ollama (NDJSON); the proxy's faults act on
each stream's own events (:mod:`railings.testing.frames`).

Everything binds to 127.0.0.1 on a free port chosen at run time, and runs in a
background thread (``with``) or in the caller's event loop
(``await server.start()`` / ``await server.aclose()``).
"""

from __future__ import annotations

from railings.testing.faults import FAULTS, EventSplitter, Fault
from railings.testing.proxy import FAULT_HEADER, FaultProxy, ProxyRecord
from railings.testing.script import TOKEN_CHARS, Script, ScriptTurn, ToolCallSpec, filler
from railings.testing.server import ReceivedRequest, ScriptedServer

__all__ = [
    "FAULTS",
    "FAULT_HEADER",
    "TOKEN_CHARS",
    "EventSplitter",
    "Fault",
    "FaultProxy",
    "ProxyRecord",
    "ReceivedRequest",
    "Script",
    "ScriptTurn",
    "ScriptedServer",
    "ToolCallSpec",
    "filler",
]
