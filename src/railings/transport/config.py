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

The wires whose path names the model put it there, percent-encoded: Gemini
``{base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse`` (key in
``x-goog-api-key``), Bedrock ``{base_url}/model/{model}/converse-stream``. Bedrock is
regional: ``https://bedrock-runtime.{region}.amazonaws.com``, the region from
``region=``, else ``AWS_REGION`` / ``AWS_DEFAULT_REGION``; its key is a Bedrock API key
(``AWS_BEARER_TOKEN_BEDROCK``, a bearer token), and without one each request is
signed with SigV4 from the AWS credential chain (:mod:`~railings.transport.sigv4`,
the ``bedrock`` extra). Ollama (``http://127.0.0.1:11434``, ``OLLAMA_HOST``) needs no
key. ``auth`` takes any ``httpx2.Auth`` instead (an OAuth token for Vertex AI, say).
"""

from __future__ import annotations

import os
import re
import ssl
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx2

from railings.errors import ConfigurationError
from railings.limits import TurnLimits
from railings.profiles import choose
from railings.providers import SPECS, ProviderName, ProviderSpec, provider_for_path, spec
from railings.providers.anthropic import ANTHROPIC_VERSION
from railings.providers.base import Resumption
from railings.transport.retry import RetryPolicy
from railings.turn.profile import WIRE, Profile

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URLS",
    "ClientConfig",
    "ProviderName",
    "Timeouts",
    "provider_for_path",
    "resumption",
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


def resumption(provider: str) -> Resumption:
    """How ``provider``'s wire reads a kept response again; ConfigurationError for a
    wire whose provider keeps none."""
    wire = spec(provider)
    if wire.resumption is None:
        raise ConfigurationError(
            f"resume: {wire.title} keeps no response to read again; only a wire "
            "whose provider keeps responses can resume (openai-responses)"
        )
    return wire.resumption


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """One provider endpoint. ``base_url`` and ``api_key`` default to the environment.

    ``raise_on_partial``: by default an interrupted turn that already carried
    content (**Partial**) is returned as-is, marked interrupted, for the caller
    to decide; True raises :class:`~railings.errors.StreamInterrupted` instead.
    ``background``: retries of this client's work never update the foreground
    retry banner (a sub-agent's client, say).
    ``verify``: TLS verification, as in httpx2 (an ``ssl.SSLContext`` for a private CA).
    ``max_tokens_field``: OpenAI reasoning models want ``max_completion_tokens``
    (Chat Completions only: the Responses API has one name, ``max_output_tokens``).
    ``include_usage``: send ``stream_options.include_usage``; None means "send it,
    and drop it for this client if the endpoint rejects it with a 400" (Chat
    Completions only: a Responses stream always ends with its usage).
    ``max_connections``: the connection pool's size (the official SDKs' 1,000),
    so a normal agent workload is never capped by it.
    ``limits``: the bounds on one turn (:class:`~railings.limits.TurnLimits`),
    derived from ``max_tokens`` unless set.
    ``region``: a regional service's region (Bedrock): it picks the default base URL
    and is what SigV4 signs for; None: the environment's, else the base URL's.
    ``auth``: an ``httpx2.Auth`` that authenticates each request (retries included)
    instead of ``api_key``; None: the key, or for Bedrock without a key SigV4 signing
    (:class:`~railings.transport.sigv4.SigV4`).
    ``request_path``: the path appended to ``base_url`` instead of the wire's, a
    ``{model}`` in it the model (Vertex AI: base URL
    ``https://aiplatform.googleapis.com/v1/projects/P/locations/L/publishers/google``,
    path ``/models/{model}:streamGenerateContent?alt=sse``).
    ``profile``: the endpoint profile that judges its streams (:mod:`railings.profiles`):
    a :class:`~railings.turn.profile.Profile`, a built-in's name, ``"wire"`` for the
    wire's own rule only, or a file; None: the one matching ``base_url`` and ``model``
    (``RAILINGS_PROFILES``, then the built-ins). Read the chosen one as ``judged_by``.
    ``resume``: ask the provider to keep each response (OpenAI Responses:
    ``background: true``), and read a broken stream again from after its last whole
    event instead of ending the turn Partial (:mod:`railings.turn.resume`); a request
    whose ``extra_body`` asks for it is resumed too. Only a wire whose provider keeps
    responses can (``ConfigurationError`` otherwise).
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
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    include_usage: bool | None = None
    anthropic_version: str = ANTHROPIC_VERSION
    max_connections: int = 1000
    limits: TurnLimits = field(default_factory=TurnLimits)
    region: str | None = None
    auth: httpx2.Auth | None = field(default=None, repr=False)
    request_path: str | None = None
    profile: Profile | str | Path | None = None
    resume: bool = False

    def __post_init__(self) -> None:
        wire = spec(self.provider)  # an unknown name: ConfigurationError
        if self.resume:
            resumption(self.provider)
        if not self.model:
            raise ConfigurationError("model is required")
        for name in ("max_tokens", "max_connections"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"{name} must be a positive integer, not {value!r}")
        if self.request_path is not None and not self.request_path.startswith("/"):
            raise ConfigurationError(f"request_path must start with /, not {self.request_path!r}")
        given = self.base_url or _local_host(wire, _first_env((wire.base_url_env,)))
        # The region: the one given, else the one a regional base URL names (what its
        # requests must be signed for), else the environment's.
        region = (
            self.region
            or _region_of(wire, (given or "").rstrip("/"))
            or _first_env(wire.region_env)
        )
        default = wire.default_base_url
        if wire.regional_base_url and region:
            default = wire.regional_base_url.replace("{region}", region)
        base = given or default
        if not base.startswith(("http://", "https://")):
            raise ConfigurationError(f"base_url must start with http:// or https://, not {base!r}")
        # Frozen: fill the environment defaults once, at construction.
        object.__setattr__(self, "base_url", base.rstrip("/"))
        object.__setattr__(self, "region", region or _region_of(wire, base.rstrip("/")))
        if self.api_key is None:
            object.__setattr__(self, "api_key", _first_env(_key_variables(wire)))
        object.__setattr__(self, "profile", choose(self.profile, base, self.model))

    @property
    def judged_by(self) -> Profile:
        """The endpoint profile this client's streams are judged by."""
        return self.profile if isinstance(self.profile, Profile) else WIRE

    @property
    def url(self) -> str:
        """Where the turn is POSTed (the model in the path, percent-encoded, where the
        wire puts it there)."""
        wire = spec(self.provider)
        if self.request_path is None:
            return f"{self.base_url}{wire.path_for(self.model)}"
        return f"{self.base_url}{_with_model(self.request_path, self.model)}"

    def request_headers(self) -> dict[str, str]:
        """Authentication and protocol headers, then the caller's extra headers."""
        wire = spec(self.provider)
        # A binary or NDJSON stream's errors come as JSON: both are acceptable answers.
        accept = ", ".join(dict.fromkeys((*wire.content_types, "application/json")))
        if wire.content_types == ("text/event-stream",):
            accept = "text/event-stream"
        out = {"accept": accept, "content-type": "application/json"}
        if wire.version_header is not None:
            name, value = wire.version_header
            # Anthropic's version may be pinned per client (``anthropic_version``).
            out[name] = self.anthropic_version if name == "anthropic-version" else value
        if self.api_key and self.auth is None:
            bearer = wire.auth_header == "authorization"
            out[wire.auth_header] = f"Bearer {self.api_key}" if bearer else self.api_key
        out.update({k.lower(): v for k, v in self.headers.items()})
        return out

    @property
    def key_variable(self) -> str:
        """The environment variable that holds this provider's key (for error messages;
        where two are read, both: ``GEMINI_API_KEY or GOOGLE_API_KEY``)."""
        wire = spec(self.provider)
        return " or ".join(dict.fromkeys((wire.api_key_env, *_key_variables(wire))))


def _with_model(path: str, model: str) -> str:
    """``path`` with a ``{model}`` in it replaced by ``model``, percent-encoded."""
    return path.replace("{model}", urllib.parse.quote(model, safe=""))


def _first_env(names: tuple[str, ...]) -> str | None:
    """The value of the first of ``names`` set (and not empty) in the environment."""
    return next((os.environ[n] for n in names if n and os.environ.get(n)), None)


def _local_host(wire: ProviderSpec, value: str | None) -> str | None:
    """An environment base URL as a local server's variable holds it: ``OLLAMA_HOST`` is
    often ``host`` or ``host:port``, as the ollama CLI reads it, so a value without a
    scheme takes the default URL's scheme, and its port when it names none."""
    default = urllib.parse.urlsplit(wire.default_base_url)
    if value is None or "://" in value or default.scheme != "http":
        return value
    host = value.rstrip("/")
    if default.port is not None and re.search(r":\d+$", host) is None:
        host = f"{host}:{default.port}"
    return f"{default.scheme}://{host}"


def _key_variables(wire: ProviderSpec) -> tuple[str, ...]:
    """The variables a key is read from, first set wins (Gemini's SDK reads
    ``GOOGLE_API_KEY`` before ``GEMINI_API_KEY``)."""
    return wire.api_key_envs or (wire.api_key_env,)


def _region_of(wire: ProviderSpec, base_url: str) -> str | None:
    """The region a regional service's base URL names (``bedrock-runtime.eu-west-1...``);
    None for another URL (a proxy, a local server) or a service that is not regional."""
    if not wire.regional_base_url:
        return None
    head, _, tail = wire.regional_base_url.partition("{region}")
    found = re.fullmatch(re.escape(head) + r"([a-z0-9-]+)" + re.escape(tail), base_url)
    return None if found is None else found.group(1)
