"""What a provider client needs to know: endpoint, key, model, limits and timeouts.

Base URLs follow each official SDK, so a user can paste what they already use:
OpenAI's includes the API version (``https://api.openai.com/v1``, requests go to
``{base_url}/chat/completions``, or ``{base_url}/responses`` for the Responses
API, provider ``"openai-responses"``); Anthropic's does not
(``https://api.anthropic.com``, requests go to ``{base_url}/v1/messages``).
``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` and ``OPENAI_API_KEY`` /
``ANTHROPIC_API_KEY`` fill what the caller leaves out, as in the SDKs (both
OpenAI wire formats read the ``OPENAI_`` ones: one SDK, one endpoint). Each of these
is a field of the provider's spec (:mod:`railings.providers`).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from railings.errors import ConfigurationError
from railings.limits import TurnLimits
from railings.providers import SPECS, ProviderName, provider_for_path, spec
from railings.providers.anthropic import ANTHROPIC_VERSION
from railings.transport.retry import RetryPolicy

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URLS",
    "ClientConfig",
    "ProviderName",
    "Timeouts",
    "provider_for_path",
]

# Base URLs by provider name, for callers that compare against the default.
DEFAULT_BASE_URLS: dict[str, str] = {s.name: s.default_base_url for s in SPECS}


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Each wait has its own limit, in seconds (None: no limit).

    * ``connect``: opening the TCP (and TLS) connection.
    * ``first_byte``: the wait for the response headers, and then for the first
      content. Generous: a model may think for minutes before its first token,
      and some send nothing at all meanwhile (OpenAI's reasoning models).
    * ``idle``: once content is streaming, the longest silence between two
      reads: the *connection* clock. Any bytes count, comment keep-alives
      (``: ping``) and Anthropic ``ping`` events included.
    * ``content_idle``: once content is streaming, the longest time without a
      stream event: the *content* clock. Keep-alives keep the connection alive
      but do not reset it, so a server that sends nothing but pings cannot hold a
      turn open forever. Before the first content, ``first_byte`` bounds the
      same wait.
    * ``total``: optional deadline for one attempt, request to proof.
    * ``write``: sending the request body.
    * ``pool``: waiting for a free connection of the client's pool (only when
      more turns are in flight than ``ClientConfig.max_connections``); its own
      limit, not the connect timeout, so queued turns are not failed as
      unreachable.

    A silence past ``idle`` or ``content_idle`` while streaming raises
    :class:`~railings.errors.IdleTimeout` (Empty before content: resent).
    """

    connect: float | None = 10.0
    first_byte: float | None = 600.0
    idle: float | None = 30.0
    total: float | None = None
    write: float | None = 30.0
    content_idle: float | None = 300.0
    pool: float | None = 600.0

    def __post_init__(self) -> None:
        for name in ("connect", "first_byte", "idle", "total", "write", "content_idle", "pool"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigurationError(f"timeout {name} must be positive or None, not {value!r}")


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """One provider endpoint. ``base_url`` and ``api_key`` default to the environment.

    ``raise_on_partial``: by default an interrupted turn that already carried
    content (**Partial**) is returned as-is, marked interrupted, for the caller
    to decide; True raises :class:`~railings.errors.StreamInterrupted` instead.
    ``background``: retries of this client's work never update the foreground
    retry banner (a sub-agent's client, say).
    ``verify``: TLS verification, as in httpx2 (an ``ssl.SSLContext`` for a private CA).
    ``service``: the name looked up in the truncation gate's exemption table.
    ``max_tokens_field``: OpenAI reasoning models want ``max_completion_tokens``
    (Chat Completions only: the Responses API has one name, ``max_output_tokens``).
    ``include_usage``: send ``stream_options.include_usage``; None means "send it,
    and drop it for this client if the endpoint rejects it with a 400" (Chat
    Completions only: a Responses stream always ends with its usage).
    ``max_connections``: the connection pool's size (the official SDKs' 1,000),
    so a normal agent workload is never capped by it.
    ``limits``: the bounds on one turn (:class:`~railings.limits.TurnLimits`),
    derived from ``max_tokens`` unless set.
    """

    provider: ProviderName
    model: str
    max_tokens: int = 4096
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict)
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    timeouts: Timeouts = field(default_factory=Timeouts)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    http2: bool = True
    verify: ssl.SSLContext | bool = True
    raise_on_partial: bool = False
    background: bool = False
    service: str | None = None
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    include_usage: bool | None = None
    anthropic_version: str = ANTHROPIC_VERSION
    max_connections: int = 1000
    limits: TurnLimits = field(default_factory=TurnLimits)

    def __post_init__(self) -> None:
        wire = spec(self.provider)  # an unknown name: ConfigurationError
        if not self.model:
            raise ConfigurationError("model is required")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ConfigurationError(
                f"max_tokens must be a positive integer, not {self.max_tokens!r}"
            )
        if not isinstance(self.max_connections, int) or self.max_connections < 1:
            raise ConfigurationError(
                f"max_connections must be a positive integer, not {self.max_connections!r}"
            )
        base = self.base_url or os.environ.get(wire.base_url_env) or wire.default_base_url
        if not base.startswith(("http://", "https://")):
            raise ConfigurationError(f"base_url must start with http:// or https://, not {base!r}")
        # Frozen: fill the environment defaults once, at construction.
        object.__setattr__(self, "base_url", base.rstrip("/"))
        if self.api_key is None:
            object.__setattr__(self, "api_key", os.environ.get(wire.api_key_env) or None)

    @property
    def url(self) -> str:
        """Where the turn is POSTed."""
        return f"{self.base_url}{spec(self.provider).request_path}"

    def request_headers(self) -> dict[str, str]:
        """Authentication and protocol headers, then the caller's extra headers."""
        wire = spec(self.provider)
        out = {"accept": "text/event-stream", "content-type": "application/json"}
        if wire.version_header is not None:
            name, value = wire.version_header
            # Anthropic's version may be pinned per client (``anthropic_version``).
            out[name] = self.anthropic_version if name == "anthropic-version" else value
        if self.api_key:
            bearer = wire.auth_header == "authorization"
            out[wire.auth_header] = f"Bearer {self.api_key}" if bearer else self.api_key
        out.update({k.lower(): v for k, v in self.headers.items()})
        return out

    @property
    def key_variable(self) -> str:
        """The environment variable that holds this provider's key (for error messages)."""
        return spec(self.provider).api_key_env
