"""Classification tables: which error class, and whether to retry.

Three inputs arrive from the outside world, and each has one table here:

* an HTTP status (``STATUS_TABLE``),
* a provider's error ``type`` / ``code`` inside a body or a stream event
  (``PROVIDER_TYPE_TABLE``, the union of the provider specs' error maps),
* only text, when another library wrapped the cause (``classify_text``, with the
  exact phrases in ``RETRYABLE_NETWORK_PHRASES``).

Quota, billing and permission errors are final wherever they arrive (a status, a
JSON body, an in-stream error event, only text): :data:`FINAL_CLASSES` are never
retried, not even when a ``429`` status or an ``x-should-retry: true`` header says
otherwise -- resending cannot add credit or grant a permission, it only burns the
retry budget and hides the cause behind a retries-exhausted error.

railings' own interruption messages are constants here too, and
``classify_text`` must put them in the retryable network category: a test pins
them verbatim, so a reworded message cannot silently turn an automatic retry
into a hard failure.
"""

from __future__ import annotations

from railings.errors import (
    AuthenticationError,
    BadRequest,
    ContextWindowExceeded,
    Overloaded,
    ProviderError,
    QuotaExceeded,
    RateLimited,
    ServerError,
    TransportError,
)
from railings.providers import error_types

__all__ = [
    "CONTENT_IDLE_MESSAGE",
    "FINAL_CLASSES",
    "IDLE_MESSAGE",
    "INTERRUPTED_MESSAGE",
    "NON_RETRYABLE_PROVIDER_TYPES",
    "PROVIDER_TYPE_TABLE",
    "RETRYABLE_NETWORK_PHRASES",
    "STATUS_TABLE",
    "class_for_provider_type",
    "class_for_status",
    "classify_text",
    "interrupted_message",
]

# railings' own words for a stream that ended without its proof. Pinned by tests.
INTERRUPTED_MESSAGE = "stream ended without the provider's termination proof"
IDLE_MESSAGE = "stream went idle: no data for {seconds:g} s while streaming"
CONTENT_IDLE_MESSAGE = "stream went idle: no content for {seconds:g} s, only keep-alives"


def interrupted_message(detail: str) -> str:
    """``detail`` as an interruption message: it starts with :data:`INTERRUPTED_MESSAGE`
    (which the classification below relies on), added once, never twice."""
    return detail if detail.startswith(INTERRUPTED_MESSAGE) else f"{INTERRUPTED_MESSAGE}: {detail}"


STATUS_TABLE: dict[int, type[ProviderError]] = {
    400: BadRequest,
    401: AuthenticationError,
    402: QuotaExceeded,  # Payment Required (Anthropic billing_error)
    403: AuthenticationError,
    404: BadRequest,
    408: ServerError,  # request timeout at the server: retried, as the official SDKs do
    409: ServerError,  # conflict / lock timeout: retried, as the official SDKs do
    413: BadRequest,
    422: BadRequest,
    429: RateLimited,
    503: Overloaded,
    529: Overloaded,
}

# Each provider's error types and codes are its spec's (railings.providers): Anthropic's
# (overloaded_error, billing_error ...), OpenAI's and compatible services' (server_error,
# insufficient_quota, Groq's tool_use_failed ...), in one map.
PROVIDER_TYPE_TABLE: dict[str, type[ProviderError]] = error_types()

# Provider types that arrive with a retryable status (429) but do not pass with time:
# the account is out of quota. Resending only burns the retry budget.
NON_RETRYABLE_PROVIDER_TYPES: frozenset[str] = frozenset({"insufficient_quota"})

# OpenAI spells its billing codes with this prefix (billing_hard_limit_reached,
# billing_not_active ...): every one of them is a quota error.
_BILLING_PREFIX = "billing_"

# Errors no header, status or retry policy may turn into a retry (module docstring).
FINAL_CLASSES: tuple[type[ProviderError], ...] = (QuotaExceeded, AuthenticationError)

# Text-only causes of a quota error (OpenAI's and Anthropic's own words).
_QUOTA_PHRASES = (
    "insufficient_quota",
    "exceeded your current quota",
    "credit balance is too low",
    _BILLING_PREFIX,
)

# Phrases that mean "the connection broke": safe to retry when nothing was received.
RETRYABLE_NETWORK_PHRASES: tuple[str, ...] = (
    INTERRUPTED_MESSAGE,
    "stream went idle",
    "connection reset",
    "connection refused",
    "connection aborted",
    "broken pipe",
    "server disconnected",
    "peer closed connection",
    "incomplete chunked read",
    "remote protocol error",
    "unexpected eof",
    "timed out",
)

_CONTEXT_PHRASES = ("context length", "context window", "maximum context", "prompt is too long")


def class_for_status(status: int) -> type[ProviderError]:
    """The error class for an HTTP status (>= 400)."""
    return STATUS_TABLE.get(status) or (ServerError if status >= 500 else BadRequest)


def class_for_provider_type(
    provider_type: str | None, status: int | None = None
) -> type[ProviderError]:
    """The error class for a provider's error type or code, falling back to the status."""
    if provider_type:
        lowered = provider_type.lower()
        if lowered.startswith(_BILLING_PREFIX):
            return QuotaExceeded
        known = PROVIDER_TYPE_TABLE.get(lowered)
        if known is ServerError and status is not None:
            # A generic "server_error" body does not hide what the status says more
            # precisely: OpenAI answers 529/503 overloads with type server_error.
            by_status = STATUS_TABLE.get(status)
            if by_status is Overloaded or by_status is RateLimited:
                return by_status
        if known is not None:
            return known
    if status is not None and status >= 400:
        return class_for_status(status)
    return ProviderError


def classify_text(text: str) -> type[ProviderError] | type[TransportError] | None:
    """Map an error known only by its text to a class; None when nothing matches."""
    lowered = text.lower()
    if any(phrase in lowered for phrase in _CONTEXT_PHRASES):
        return ContextWindowExceeded
    if any(phrase in lowered for phrase in _QUOTA_PHRASES):
        return QuotaExceeded  # before "rate limit": OpenAI's quota message is a 429
    if "overloaded" in lowered:
        return Overloaded
    if "rate limit" in lowered or "too many requests" in lowered:
        return RateLimited
    if any(phrase in lowered for phrase in RETRYABLE_NETWORK_PHRASES):
        return TransportError
    return None
