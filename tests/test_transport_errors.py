"""The boundary map: every httpx2 exception and every HTTP status class has its railings error."""

from __future__ import annotations

import email.utils
import inspect
import json
from typing import Any

import httpx2
import pytest

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
    Overloaded,
    ProviderError,
    QuotaExceeded,
    RailingsError,
    RateLimited,
    ServerError,
    StreamInterrupted,
    TransportError,
)
from railings.transport.errors_map import (
    BOUNDARY,
    FOREIGN_ERRORS,
    HTTPX2_ERRORS,
    error_from_response,
    map_exception,
    map_stream_exception,
    parse_retry_after,
)


def httpx2_exception_classes() -> set[type[BaseException]]:
    """Every exception class httpx2 exports, and every subclass of them defined in httpx2."""
    roots = {
        obj
        for name in httpx2.__all__
        if inspect.isclass(obj := getattr(httpx2, name)) and issubclass(obj, BaseException)
    }
    found: set[type[BaseException]] = set()
    stack = list(roots)
    while stack:
        cls = stack.pop()
        if cls in found or not cls.__module__.startswith("httpx2"):
            continue
        found.add(cls)
        stack.extend(cls.__subclasses__())
    return found


def instance(cls: type[BaseException]) -> BaseException:
    if issubclass(cls, httpx2.HTTPStatusError):
        request = httpx2.Request("POST", "http://x/v1/chat/completions")
        return cls("429", request=request, response=httpx2.Response(429, request=request))
    try:
        return cls("boom")
    except TypeError:
        return cls()


def test_every_httpx2_exception_has_an_exact_entry() -> None:
    classes = httpx2_exception_classes()
    assert len(classes) >= 29  # the tree in httpx2/_exceptions.py, plus SSEError
    missing = sorted(c.__name__ for c in classes if c not in HTTPX2_ERRORS)
    assert missing == [], f"add these to HTTPX2_ERRORS: {missing}"


@pytest.mark.parametrize("cls", sorted(httpx2_exception_classes(), key=lambda c: c.__name__))
def test_every_httpx2_exception_is_caught_and_mapped(cls: type[BaseException]) -> None:
    assert issubclass(cls, BOUNDARY)
    mapped = map_exception(instance(cls))
    assert isinstance(mapped, RailingsError)
    streaming = map_stream_exception(instance(cls), empty=True, idle_seconds=1.0)
    assert isinstance(streaming, (StreamInterrupted, LocalError))


@pytest.mark.parametrize("cls", list(FOREIGN_ERRORS))
def test_foreign_exceptions_are_mapped(cls: type[BaseException]) -> None:
    assert isinstance(map_exception(instance(cls)), RailingsError)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (httpx2.ConnectError("refused"), ConnectError),
        (httpx2.ConnectTimeout("slow"), ConnectTimeout),
        (httpx2.ReadTimeout("no headers"), FirstByteTimeout),
        (httpx2.RemoteProtocolError("server disconnected"), TransportError),
        (httpx2.UnsupportedProtocol("ftp"), ConfigurationError),
        (httpx2.DecodingError("gzip"), MalformedStream),
        (httpx2.StreamConsumed(), LocalError),
    ],
)
def test_before_the_body(exc: BaseException, expected: type[RailingsError]) -> None:
    mapped = map_exception(exc)
    assert type(mapped) is expected


def test_retryable_flags_before_the_body() -> None:
    assert map_exception(httpx2.ConnectError("x")).retryable
    assert map_exception(httpx2.ReadTimeout("x")).retryable
    assert not map_exception(httpx2.InvalidURL("x")).retryable


def test_while_streaming() -> None:
    idle = map_stream_exception(httpx2.ReadTimeout(""), empty=False, idle_seconds=30.0)
    assert isinstance(idle, IdleTimeout) and idle.idle_seconds == 30.0 and not idle.retryable
    cut = map_stream_exception(httpx2.ReadError("reset"), empty=True, idle_seconds=None)
    assert type(cut) is StreamInterrupted and cut.empty and cut.retryable
    assert isinstance(
        map_stream_exception(httpx2.StreamClosed(), empty=True, idle_seconds=1), LocalError
    )


# -- retry-after --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # the precise one wins
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": "-3"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "whenever"}, None),
        ({"retry-after": " \x1c5\x1f "}, 5.0),  # any whitespace around the number
        ({"retry-after-ms": "-1", "retry-after": "2"}, 2.0),  # a negative wait is unreadable
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_parse_retry_after_http_date() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == 30.0
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert parse_retry_after({"retry-after": past}, now=now) == 0.0


# -- statuses -----------------------------------------------------------------------------


def body(kind: str | None = None, message: str = "m", code: str | None = None) -> bytes:
    error: dict[str, Any] = {"message": message}
    if kind:
        error["type"] = kind
    if code:
        error["code"] = code
    return json.dumps({"error": error}).encode()


@pytest.mark.parametrize(
    ("status", "expected", "retryable"),
    [
        (400, BadRequest, False),
        (401, AuthenticationError, False),
        (403, AuthenticationError, False),
        (404, BadRequest, False),
        (408, ServerError, True),
        (409, ServerError, True),
        (413, BadRequest, False),
        (418, BadRequest, False),
        (422, BadRequest, False),
        (429, RateLimited, True),
        (500, ServerError, True),
        (502, ServerError, True),
        (503, Overloaded, True),
        (504, ServerError, True),
        (529, Overloaded, True),
    ],
)
def test_every_status_class(status: int, expected: type[ProviderError], retryable: bool) -> None:
    error = error_from_response(status, {}, b"")
    assert type(error) is expected and error.retryable is retryable and error.status == status


def test_provider_types_refine_the_status() -> None:
    anthropic = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    assert type(error_from_response(529, {}, anthropic)) is Overloaded
    openai = body("invalid_request_error", "too long", "context_length_exceeded")
    assert type(error_from_response(400, {}, openai)) is ContextWindowExceeded
    too_long = (
        b'{"type":"error","error":{"type":"invalid_request_error",'
        b'"message":"prompt is too long: 210000 tokens > 200000 maximum"}}'
    )
    assert type(error_from_response(400, {}, too_long)) is ContextWindowExceeded
    unknown = body("something_new", "odd")
    assert type(error_from_response(500, {}, unknown)) is ServerError


def test_quota_and_should_retry() -> None:
    quota = error_from_response(429, {}, body("insufficient_quota", "pay", "insufficient_quota"))
    assert isinstance(quota, QuotaExceeded) and not quota.retryable
    assert error_from_response(400, {"x-should-retry": "true"}, b"").retryable
    assert not error_from_response(500, {"x-should-retry": "false"}, b"").retryable


def test_error_message_and_retry_after() -> None:
    error = error_from_response(429, {"retry-after": "2"}, body("rate_limit_error", "slow down"))
    assert error.retry_after == 2.0 and error.provider_type == "rate_limit_error"
    assert "slow down" in str(error) and "429" in str(error)
    garbage = error_from_response(502, {}, b"<html>Bad gateway</html>")
    assert "Bad gateway" in str(garbage)
