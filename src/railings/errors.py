"""The one error tree of railings.

Every exception railings raises on purpose is a :class:`RailingsError`. Remote
faults (the server or the stream lied, broke or refused) are kept apart from
local ones (misuse, configuration, a tool policy), because callers act on them
differently: a remote fault may be retried, a local one never is.

::

    RailingsError
    ├── RemoteError                      the server or the stream broke or refused
    │   ├── StreamInterrupted            ended without the provider's termination proof
    │   │   ├── IdleTimeout              no byte for longer than the idle gap
    │   │   └── ResumeFailed             reading a kept response again failed
    │   ├── MalformedStream              bytes that are not the protocol
    │   │   └── EventTooLarge            one event (or line) above the configured limit
    │   ├── TurnTooLarge                 one turn grew past its bound: max_tokens ignored
    │   ├── TransportError               the connection itself failed
    │   │   ├── ConnectError             could not connect
    │   │   ├── ConnectTimeout
    │   │   ├── FirstByteTimeout         connected, but no response in time
    │   │   └── TotalTimeout             the optional whole-request deadline passed
    │   └── ProviderError                the provider said no (HTTP status or error event)
    │       ├── RateLimited              429
    │       ├── Overloaded               529, 503, ``overloaded_error``
    │       ├── ServerError              other 5xx, ``api_error``
    │       ├── AuthenticationError      401, 403, ``permission_error``
    │       ├── QuotaExceeded            402, ``insufficient_quota``, ``billing_*``
    │       └── BadRequest               400, 404, 422
    │           └── ContextWindowExceeded
    └── LocalError                       misuse: never retried
        ├── ConfigurationError           a missing key, a bad URL, a bad option
        │   └── MissingDependency        an optional package a feature needs (also ImportError)
        ├── PoolTimeout                  no pooled connection free in time: too many turns
        ├── StreamNotRead                a stream's turn asked for before the stream ended
        ├── IllegalTransition            a state machine was driven out of its table
        ├── ToolDefinitionError          a tool that cannot be registered as declared
        ├── CircuitOpen                  the circuit breaker stopped the agent
        └── CannotContinue               a turn that is not a Partial text answer to continue

Each error carries fields, not just a message: ``retryable``, and where known
``status``, ``provider_type``, ``retry_after`` (seconds) and ``received`` (the
bytes of the response body that had arrived, at most its first 16 MiB). Messages
never contain API keys.
"""

from __future__ import annotations

from railings.redact import redact

__all__ = [
    "AuthenticationError",
    "BadRequest",
    "CannotContinue",
    "CircuitOpen",
    "ConfigurationError",
    "ConnectError",
    "ConnectTimeout",
    "ContextWindowExceeded",
    "EventTooLarge",
    "FirstByteTimeout",
    "IdleTimeout",
    "IllegalTransition",
    "LocalError",
    "MalformedStream",
    "MissingDependency",
    "Overloaded",
    "PoolTimeout",
    "ProviderError",
    "QuotaExceeded",
    "RailingsError",
    "RateLimited",
    "RemoteError",
    "ResumeFailed",
    "ServerError",
    "StreamInterrupted",
    "StreamNotRead",
    "ToolDefinitionError",
    "TotalTimeout",
    "TransportError",
    "TurnTooLarge",
]


class RailingsError(Exception):
    """Root of every error railings raises on purpose.

    The message is redacted when the error is made (:func:`railings.redact.redact`):
    a provider that echoes the API key in an error body does not put it in a log line.
    """

    retryable: bool = False

    def __init__(self, message: str, *, retryable: bool | None = None) -> None:
        message = redact(message)
        super().__init__(message)
        self.message = message
        if retryable is not None:
            self.retryable = retryable


class RemoteError(RailingsError):
    """The server or the stream broke, lied or refused."""


class StreamInterrupted(RemoteError):
    """The stream ended without the provider's proof of termination.

    ``empty`` is True when no content delta had arrived (the **Empty** outcome:
    safe to resend); False for **Partial** (content arrived and is billed: not
    retried automatically). ``turn`` holds what was assembled, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        empty: bool,
        received: bytes = b"",
        turn: object | None = None,
    ) -> None:
        super().__init__(message, retryable=empty)
        self.empty = empty
        self.received = received
        self.turn = turn


class IdleTimeout(StreamInterrupted):
    """No byte arrived for longer than the idle gap while the stream was open."""

    def __init__(
        self,
        message: str,
        *,
        empty: bool,
        idle_seconds: float,
        received: bytes = b"",
        turn: object | None = None,
    ) -> None:
        super().__init__(message, empty=empty, received=received, turn=turn)
        self.idle_seconds = idle_seconds


class ResumeFailed(StreamInterrupted):
    """The stream of a response the provider keeps broke, and reading it again failed:
    the server refused (``__cause__`` says how) or the attempts ran out. ``turn`` is
    what was read before; ``response_id`` and ``after`` say where it was to go on."""

    def __init__(
        self,
        message: str,
        *,
        empty: bool,
        response_id: str,
        after: int,
        received: bytes = b"",
        turn: object | None = None,
    ) -> None:
        super().__init__(message, empty=empty, received=received, turn=turn)
        self.response_id = response_id
        self.after = after


class MalformedStream(RemoteError):
    """Bytes that are not the protocol: bad framing, invalid JSON in a data line."""


class EventTooLarge(MalformedStream):
    """One event or line grew past the configured maximum size."""

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class TurnTooLarge(RemoteError):
    """One turn grew past a bound derived from the ``max_tokens`` it was asked for.

    ``bound`` names what grew: ``"bytes"`` (received, after content decoding),
    ``"events"`` (normalized stream events), ``"text"`` (assembled text, thinking
    and refusal, in characters) or ``"arguments"`` (all tool-call arguments, in
    characters). ``limit`` is the bound and ``max_tokens`` the limit the request
    was sent with (None when unknown). A provider that streams past its output
    limit, or keep-alives without end, is at fault: never retried, because the
    same request would be answered the same way.
    """

    def __init__(
        self,
        message: str,
        *,
        bound: str,
        limit: int,
        max_tokens: int | None = None,
        turn: object | None = None,
    ) -> None:
        super().__init__(message, retryable=False)
        self.bound = bound
        self.limit = limit
        self.max_tokens = max_tokens
        self.turn = turn


class TransportError(RemoteError):
    """The connection failed before or while the response was read."""

    retryable = True


class ConnectError(TransportError):
    """Could not open a connection."""


class ConnectTimeout(TransportError):
    """Opening the connection took longer than the connect timeout."""


class FirstByteTimeout(TransportError):
    """Connected and sent, but no response arrived within the first-byte timeout."""


class TotalTimeout(TransportError):
    """The optional deadline for the whole request passed."""

    retryable = False


class ProviderError(RemoteError):
    """The provider refused or failed: an HTTP error status or an in-stream error event."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider_type: str | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message, retryable=retryable)
        self.status = status
        self.provider_type = provider_type
        self.retry_after = retry_after


class RateLimited(ProviderError):
    """429: too many requests. ``retry_after`` says how long the provider asked to wait."""

    retryable = True


class Overloaded(ProviderError):
    """529, 503 or an ``overloaded_error`` event: the provider has no capacity now."""

    retryable = True


class ServerError(ProviderError):
    """Any other 5xx or an ``api_error`` event."""

    retryable = True


class AuthenticationError(ProviderError):
    """401 or 403: the key is missing, wrong or not allowed."""


class QuotaExceeded(ProviderError):
    """The account is out of quota or credit, or its billing is not set up: OpenAI
    ``insufficient_quota`` (sent with status 429) and ``billing_*``, Anthropic
    ``billing_error``, HTTP 402. Never retried: resending cannot clear it."""


class BadRequest(ProviderError):
    """400, 404 or 422: the request itself is wrong; resending it cannot help."""


class ContextWindowExceeded(BadRequest):
    """The prompt does not fit the model's context window."""


class LocalError(RailingsError):
    """Misuse or local policy; never retried."""


class ConfigurationError(LocalError):
    """A missing key, a bad URL, an unknown provider, an impossible option."""


class MissingDependency(ConfigurationError, ImportError):
    """A feature needs an optional package that is not installed.

    Also an :class:`ImportError`, so ``import railings.integrations.langgraph``
    without LangGraph fails the way Python code expects, with a message that names
    the packages to install and the extra of railings that brings them
    (``pip install langchain-core langgraph (railings' langgraph extra)``). The
    packages come first because the command is true wherever railings came from:
    a package index, a built wheel or a clone.
    """

    def __init__(
        self, feature: str, *, package: str, extra: str, install: tuple[str, ...] = ()
    ) -> None:
        self.install = install or (package,)
        super().__init__(
            f"{feature} needs {package}: pip install {' '.join(self.install)}"
            f" (railings' {extra} extra)"
        )
        self.feature = feature
        self.package = package
        self.extra = extra


class PoolTimeout(LocalError):
    """No connection of the client's pool became free within the pool timeout.

    More turns were in flight than ``max_connections`` allows: a local limit, not
    the server's fault, so it is never retried (raise ``max_connections`` or the
    pool timeout). ``seconds`` and ``max_connections`` say which limits applied.
    """

    def __init__(
        self, message: str, *, seconds: float | None = None, max_connections: int | None = None
    ) -> None:
        super().__init__(message)
        self.seconds = seconds
        self.max_connections = max_connections


class StreamNotRead(LocalError):
    """A stream's turn was asked for before the stream was read to its end.

    The turn exists only once the stream ended (its proof arrived, or it was
    interrupted): iterate the stream, or ``await stream.result()``, first.
    """

    def __init__(self) -> None:
        super().__init__(
            "the turn is known once the stream has been read to its end: iterate the stream "
            "or await stream.result() (stream.result() in the blocking client) first"
        )


class IllegalTransition(LocalError):
    """A state machine was driven with an event its table does not allow."""

    def __init__(self, state: str, event: str) -> None:
        super().__init__(f"illegal transition: event {event!r} in state {state!r}")
        self.state = state
        self.event = event


class ToolDefinitionError(LocalError):
    """A tool that cannot be registered as declared (bad schema, duplicate name)."""


class CircuitOpen(LocalError):
    """The circuit breaker stopped the agent after consecutive tool execution errors."""

    def __init__(self, message: str, *, failures: int) -> None:
        super().__init__(message)
        self.failures = failures


class CannotContinue(LocalError):
    """A turn that is not a Partial text answer, asked to be continued
    (:mod:`railings.continuation`). ``reason`` says why:

    * ``"complete"``: the turn's proof arrived; there is nothing to continue.
    * ``"tool_call"``: the turn holds a tool call, whole or cut. A call is never
      continued: a cut one is answered with its notice and the model resends it whole.
    * ``"no_text"``: no answer text arrived (only reasoning, a refusal, or nothing).
    * ``"no_reply"``: the agent has no reply to continue (its last task brought none).
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason
