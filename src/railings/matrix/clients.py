"""The clients under test: railings itself (transport, then a real dispatch with a spy
tool), and the registry that names every client ``--client`` accepts.

* ``railings``: :class:`~railings.transport.AsyncProviderClient`, then a real
  dispatch of the turn (:class:`~railings.dispatch.Dispatcher`, default gate
  chain) with a spy ``shell`` tool that records every execution and runs nothing.
* ``railings+resume``: the same, asking the provider to keep each response
  (``ClientConfig(resume=True)``), on the wires whose provider keeps them: a broken
  stream is read again from after its last whole event instead of ending Partial.
* the official SDKs, with and without the guard: :mod:`railings.matrix.sdks`; the
  official Gemini, Bedrock and Ollama clients: :mod:`railings.matrix.sdks_native`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Literal

from railings.dispatch import Dispatcher, ToolRegistry, tool
from railings.dispatch.tools import Tool
from railings.errors import RailingsError
from railings.matrix.cells import ATTEMPTS, PROVIDERS
from railings.matrix.observation import (
    Client,
    Observation,
    Target,
    lineage,
    raised,
    shared_ssl_context,
)
from railings.matrix.sdks import SHELL_DESCRIPTION, AnthropicSDK, OpenAISDK
from railings.matrix.sdks_native import Boto3SDK, GenAISDK, OllamaSDK
from railings.messages import ToolSpec, User
from railings.providers import spec
from railings.transport import AsyncProviderClient, ClientConfig, RetryPolicy, Timeouts
from railings.turn.model import Turn

__all__ = ["CLIENTS", "RailingsClient", "ResumingClient", "Spy", "client_named"]


_EXECUTED: ContextVar[list[str]] = ContextVar("railings_matrix_executed")


async def _shell(command: str) -> str:
    """Run one shell command and return its output.

    Args:
        command: the command line
    """
    _EXECUTED.get().append(command)
    return "ok (the matrix's spy ran nothing)"


# One Tool for every cell (checking its schema costs milliseconds); each cell's
# executions go to that cell's own list, found through a context variable. Called
# outside a ``with Spy()`` block it fails (LookupError), so a call is never lost
# silently: the dispatch records an error outcome.
_SPY_TOOL: Tool = tool(name="shell")(_shell)


class Spy:
    """A ``shell`` tool that records every command it is asked to run, and runs none.

    Use it as a context manager: executions inside the ``with`` block (in this task
    and the tasks it starts) are recorded in :attr:`executed`."""

    def __init__(self) -> None:
        self.executed: list[str] = []
        self.tool = _SPY_TOOL
        self._token: Token[list[str]] | None = None

    def __enter__(self) -> Spy:
        self._token = _EXECUTED.set(self.executed)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _EXECUTED.reset(self._token)

    @property
    def spec(self) -> ToolSpec:
        """The ``shell`` tool as the request declares it to the model."""
        return ToolSpec(self.tool.name, SHELL_DESCRIPTION, dict(self.tool.parameters))


class RailingsClient:
    """The railings transport and dispatcher. :meth:`accept` is what the client makes
    of a turn before dispatching it: the turn as-is. (A test overrides it with a client
    that ignores the proof, to show the acceptance rule can fail.)"""

    name = "railings"
    kind: Literal["railings", "sdk"] = "railings"
    providers = frozenset(PROVIDERS)
    requires: tuple[str, ...] = ()
    resumes = False  # ask the provider to keep each response, and resume a broken stream

    def accept(self, turn: Turn) -> Turn:
        """The turn to dispatch: the one streamed, unchanged."""
        return turn

    async def run(self, target: Target) -> Observation:
        """Stream one turn from ``target`` and dispatch it with the spy: what railings returned
        (or raised), its attempts and retries, and what the spy ran."""
        spy = Spy()
        try:
            return await self._run(target, spy)
        except RailingsError as exc:  # a configuration the cell cannot run (no region...)
            return raised(exc, attempts=0, executed=[], retried=[])

    async def _run(self, target: Target, spy: Spy) -> Observation:
        config = ClientConfig(
            target.provider.name,  # type: ignore[arg-type]  # checked by ClientConfig
            target.model,
            max_tokens=target.max_tokens,
            base_url=target.base_url,
            api_key=target.api_key,
            http2=False,
            verify=shared_ssl_context(),
            background=True,  # never the foreground retry banner
            resume=self.resumes,
            timeouts=Timeouts(connect=10, first_byte=60, idle=target.idle, write=30),
            # The default policy but a short backoff, so a run takes seconds; a
            # retry-after the proxy sends is still obeyed as-is.
            retry=RetryPolicy(attempts=ATTEMPTS, deadline=60, initial=0.05, cap=0.2),
        )
        async with AsyncProviderClient(config) as client:
            stream = client.stream_turn([User(target.prompt)], [spy.spec] if target.tool else ())
            try:
                turn = await stream.result()
            except RailingsError as exc:
                return raised(
                    exc,
                    attempts=stream.attempts,
                    executed=[],
                    retried=[lineage(r.error) for r in stream.retries],
                )
        turn = self.accept(turn)
        with spy:
            batch = await Dispatcher(ToolRegistry([spy.tool])).dispatch_turn(turn)
        interruption = stream.interruption
        return Observation(
            returned=True,
            text=turn.text,
            calls=[(c.name, c.raw_arguments) for c in turn.tool_calls],
            stop_reason=turn.stop_reason,
            outcome=turn.outcome.value,
            interrupted=turn.outcome.value != "complete",
            interruption=lineage(interruption) if interruption is not None else [],
            message=interruption.message[:200] if interruption is not None else "",
            error_kind=turn.error.kind.value if turn.error else None,
            provider_error=turn.error.provider_type if turn.error else None,
            truncated=turn.truncated,
            attempts=stream.attempts,
            retried=[lineage(r.error) for r in stream.retries],
            resumed=list(turn.resumed),
            executed=list(spy.executed),
            dispatch=[
                {
                    "name": o.name,
                    "status": o.status.value,
                    "reason": o.verdict.reason.value if o.verdict.reason else None,
                }
                for o in batch.outcomes
            ],
        )


class ResumingClient(RailingsClient):
    """railings asking the provider to keep each response (``ClientConfig(resume=True)``;
    OpenAI Responses: ``background: true``): a stream that broke is read again from
    after its last whole event, within the retry policy's attempts, and nothing is
    generated twice. It runs on the wires whose provider keeps responses."""

    name = "railings+resume"
    providers = frozenset(p for p in PROVIDERS if spec(p).resumption is not None)
    resumes = True


CLIENTS: dict[str, Callable[[], Client]] = {
    "railings": RailingsClient,
    "railings+resume": ResumingClient,
    "openai-sdk": OpenAISDK,
    "openai-sdk+guard": lambda: OpenAISDK(guarded=True),
    "anthropic-sdk": AnthropicSDK,
    "anthropic-sdk+guard": lambda: AnthropicSDK(guarded=True),
    "google-genai": GenAISDK,
    "boto3": Boto3SDK,
    "ollama": OllamaSDK,
}


def client_named(name: str) -> Client:
    """A new client for a ``--client`` name (a key of :data:`CLIENTS`)."""
    return CLIENTS[name]()
