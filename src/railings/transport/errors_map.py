"""The boundary: every foreign exception and every HTTP error status becomes a railings error here.

Nothing else in railings looks at an httpx2, ssl, anyio or h2 exception. The
client catches :data:`BOUNDARY` around each network operation and calls
:func:`map_exception` (before the response body) or :func:`map_stream_exception`
(while streaming it). ``HTTPX2_ERRORS`` has an exact entry for every exception
class httpx2 defines: a test walks httpx2's classes and fails when a new one
appears without an entry here.

While the body streams, a broken connection is not an error of its own kind: it
is the stream ending without its proof (**Empty** or **Partial**), and a read
timeout is the idle gap passing (:class:`~railings.errors.IdleTimeout`).
"""

from __future__ import annotations

import dataclasses
import email.utils
import json
import ssl
import time
from collections.abc import Mapping
from typing import Any

import anyio
import h2.exceptions
import httpx2

from railings.classify import (
    CONTENT_IDLE_MESSAGE,
    FINAL_CLASSES,
    IDLE_MESSAGE,
    INTERRUPTED_MESSAGE,
    NON_RETRYABLE_PROVIDER_TYPES,
    class_for_provider_type,
    classify_text,
)
from railings.errors import (
    AuthenticationError,
    BadRequest,
    ConfigurationError,
    ConnectError,
    ConnectTimeout,
    ContextWindowExceeded,
    FirstByteTimeout,
    IdleTimeout,
    LocalError,
    MalformedStream,
    PoolTimeout,
    ProviderError,
    RailingsError,
    TransportError,
)
from railings.turn.ending import Cut, idle_cut

__all__ = [
    "BOUNDARY",
    "FOREIGN_ERRORS",
    "HTTPX2_ERRORS",
    "Cut",
    "error_from_response",
    "idle_cut",
    "idle_error",
    "map_exception",
    "map_stream_exception",
    "parse_retry_after",
    "stream_cut",
]

# Every httpx2 exception class -> the railings class it becomes before the response
# body. ReadTimeout is the first-byte timeout here; while streaming it is the idle gap.
HTTPX2_ERRORS: dict[type[BaseException], type[RailingsError]] = {
    httpx2.HTTPError: TransportError,
    httpx2.RequestError: TransportError,
    httpx2.TransportError: TransportError,
    httpx2.TimeoutException: TransportError,
    httpx2.ConnectTimeout: ConnectTimeout,
    httpx2.ReadTimeout: FirstByteTimeout,
    httpx2.WriteTimeout: TransportError,
    httpx2.PoolTimeout: PoolTimeout,  # our own pool was full: local, never retried
    httpx2.NetworkError: TransportError,
    httpx2.ConnectError: ConnectError,
    httpx2.ReadError: TransportError,
    httpx2.WriteError: TransportError,
    httpx2.CloseError: TransportError,
    httpx2.ProxyError: ConnectError,
    httpx2.UnsupportedProtocol: ConfigurationError,  # a base_url that is not http(s)
    httpx2.ProtocolError: TransportError,
    httpx2.LocalProtocolError: ConfigurationError,  # e.g. a header value with a newline
    httpx2.RemoteProtocolError: TransportError,
    httpx2.SSEError: MalformedStream,
    httpx2.DecodingError: MalformedStream,  # a body whose content-encoding does not decode
    httpx2.TooManyRedirects: ConfigurationError,  # a base_url that redirects in a loop
    httpx2.HTTPStatusError: ProviderError,  # refined by status in map_exception
    httpx2.InvalidURL: ConfigurationError,
    httpx2.CookieConflict: LocalError,
    # Misuse of httpx2's streaming API: a railings bug, never retried.
    httpx2.StreamError: LocalError,
    httpx2.StreamConsumed: LocalError,
    httpx2.StreamClosed: LocalError,
    httpx2.ResponseNotRead: LocalError,
    httpx2.RequestNotRead: LocalError,
}

# What escapes httpx2 unmapped on some paths (the openai SDK shims the same ones).
FOREIGN_ERRORS: dict[type[BaseException], type[RailingsError]] = {
    ssl.SSLCertVerificationError: ConfigurationError,
    ssl.SSLError: ConnectError,
    anyio.EndOfStream: TransportError,
    anyio.BrokenResourceError: TransportError,
    h2.exceptions.H2Error: TransportError,
    OSError: TransportError,
}

BOUNDARY: tuple[type[BaseException], ...] = (
    httpx2.HTTPError,
    httpx2.StreamError,
    httpx2.InvalidURL,
    httpx2.CookieConflict,
    *FOREIGN_ERRORS,
)

_WHAT: dict[type[RailingsError], str] = {
    ConnectTimeout: "connect timed out",
    ConnectError: "could not connect",
    FirstByteTimeout: "no response within the first-byte timeout",
    PoolTimeout: "no pooled connection became free within the pool timeout",
}


def _lookup(exc: BaseException) -> type[RailingsError]:
    for cls in type(exc).__mro__:
        found = HTTPX2_ERRORS.get(cls) or FOREIGN_ERRORS.get(cls)
        if found is not None:
            return found
    return TransportError


def _certificate_failure(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return True
        current = current.__cause__ or current.__context__
    return False


def map_exception(exc: BaseException) -> RailingsError:
    """The railings error for ``exc``, raised before the response body was reached.

    The caller raises it ``from exc``, so the foreign chain stays inspectable
    (the HTTP/2 fallback reads it).
    """
    if isinstance(exc, httpx2.HTTPStatusError):
        response = exc.response
        return error_from_response(response.status_code, response.headers, b"")
    cls = _lookup(exc)
    if cls is ConnectError and _certificate_failure(exc):
        return ConfigurationError(f"TLS certificate verification failed: {exc}")
    what = _WHAT.get(cls, "connection failed" if issubclass(cls, TransportError) else "error")
    detail = str(exc) or type(exc).__name__
    return cls(f"{what}: {detail}")


def stream_cut(exc: BaseException, *, idle_seconds: float | None) -> Cut | LocalError:
    """What ``exc``, raised while the body streamed, means.

    A read timeout is the idle gap; any other remote failure is an interruption
    (the stream ended without its proof). Local misuse stays a local error.
    """
    if isinstance(exc, httpx2.ReadTimeout):
        return dataclasses.replace(idle_cut(idle_seconds or 0.0), cause=exc)
    mapped = map_exception(exc)
    if isinstance(mapped, LocalError):
        mapped.__cause__ = exc
        return mapped
    return Cut(f"{INTERRUPTED_MESSAGE}: {mapped.message}", cause=exc)


def idle_error(
    seconds: float,
    *,
    empty: bool,
    received: bytes = b"",
    content: bool = False,
    turn: object | None = None,
) -> IdleTimeout:
    """The stream went silent for ``seconds`` (the idle gap, or the wait for first content);
    ``content``: bytes kept arriving, but only keep-alives (the content clock ran out)."""
    message = (CONTENT_IDLE_MESSAGE if content else IDLE_MESSAGE).format(seconds=seconds)
    return IdleTimeout(message, empty=empty, idle_seconds=seconds, received=received, turn=turn)


def map_stream_exception(
    exc: BaseException, *, empty: bool, idle_seconds: float | None, received: bytes = b""
) -> RailingsError:
    """The railings error for ``exc`` raised while the body streamed (:func:`stream_cut`,
    built at once)."""
    cut = stream_cut(exc, idle_seconds=idle_seconds)
    if isinstance(cut, LocalError):
        return cut
    return cut.error(empty=empty, received=received)


# -- HTTP error statuses ------------------------------------------------------------------


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the provider asked to wait: ``retry-after-ms`` first, then ``retry-after``
    (delta-seconds or an HTTP date, RFC 9110 10.2.3). None when absent or unreadable."""
    ms = _number(headers.get("retry-after-ms"))
    if ms is not None and ms >= 0:  # NaN is not
        return ms / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _number(raw)
    if seconds is not None:
        return seconds if seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _number(raw: str | None) -> float | None:
    try:
        return None if raw is None else float(raw.strip())  # str.strip: every whitespace
    except ValueError:
        return None


def _error_fields(body: bytes) -> tuple[str | None, str | None]:
    """(provider_type, message) from an error body: OpenAI's and Anthropic's
    (``error.code`` / ``error.type``), Gemini's (``error.status``: ``RESOURCE_EXHAUSTED``),
    AWS's (``__type``, ``message`` / ``Message`` at the top), Ollama's (``error``: text)."""
    try:
        obj: Any = json.loads(body.decode("utf-8", "replace")) if body else None
    except ValueError:
        text = body.decode("utf-8", "replace").strip()
        return None, text[:500] or None
    if isinstance(obj, list) and len(obj) == 1:
        obj = obj[0]  # Gemini without alt=sse answers an error as a one-item array too
    if not isinstance(obj, dict):
        return None, None
    error = obj.get("error", obj)
    if not isinstance(error, dict):
        return None, str(error)[:500]
    message = error.get("message", error.get("Message"))
    code, kind, status = error.get("code"), error.get("type"), error.get("status")
    aws = error.get("__type")
    # OpenAI puts the precise reason in ``code`` (context_length_exceeded), the family in
    # ``type``; Gemini's ``code`` is the HTTP status and its ``status`` the gRPC code name.
    ptype = next(
        (v for v in (code, kind, status) if isinstance(v, str) and v),
        _camel(aws.rpartition("#")[2]) if isinstance(aws, str) and aws else None,
    )
    return ptype, message if isinstance(message, str) else None


def _aws_error_type(headers: Mapping[str, str]) -> str | None:
    """The exception an AWS service names in ``x-amzn-errortype``
    (``ThrottlingException:http://internal.amazon.com/...``), in the camelCase the
    event stream spells it (``throttlingException``); None without the header."""
    raw = headers.get("x-amzn-errortype", "").partition(":")[0].strip()
    return _camel(raw) if raw else None


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def error_from_response(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    key_variable: str | None = None,
    has_key: bool = True,
) -> ProviderError:
    """The typed error for an HTTP error status with its (bounded) body."""
    ptype, message = _error_fields(body)
    ptype = _aws_error_type(headers) or ptype
    cls = class_for_provider_type(ptype, status)
    if ptype is not None and cls is ProviderError:
        cls = class_for_provider_type(None, status)
    if issubclass(cls, BadRequest) and classify_text(message or "") is ContextWindowExceeded:
        cls = ContextWindowExceeded
    text = f"HTTP {status}" + (f" ({ptype})" if ptype else "") + (f": {message}" if message else "")
    if cls is AuthenticationError and not has_key and key_variable:
        text += f" (no API key configured: set {key_variable})"
    # The official SDKs obey the provider's explicit verdict -- except on a quota,
    # billing or permission error, which no resend can clear (railings.classify).
    retryable = {"true": True, "false": False}.get(headers.get("x-should-retry", ""))
    if ptype in NON_RETRYABLE_PROVIDER_TYPES or issubclass(cls, FINAL_CLASSES):
        retryable = False
    return cls(
        text,
        status=status,
        provider_type=ptype,
        retry_after=parse_retry_after(headers),
        retryable=retryable,
    )
