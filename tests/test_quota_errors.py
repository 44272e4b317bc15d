"""Quota, billing and permission errors are never retried, wherever they arrive: an HTTP
status, a JSON error body, an in-stream error event, or only text."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from _server import CannedServer, Reply, anthropic_error, json_reply, openai_chunk, sse
from railings import QuotaExceeded, replay
from railings.classify import class_for_provider_type, class_for_status, classify_text
from railings.errors import AuthenticationError, ProviderError, RateLimited
from railings.messages import User
from railings.transport import (
    AsyncProviderClient,
    ClientConfig,
    RetryPolicy,
    Timeouts,
    set_testing,
)
from railings.transport.errors_map import error_from_response
from railings.transport.retry import Retrier

FAST = Timeouts(connect=2.0, first_byte=5.0, idle=2.0)


@pytest.fixture(autouse=True)
def _zero_waits() -> Iterator[None]:
    set_testing(True)
    yield
    set_testing(False)


def body(code: str | None, kind: str, message: str = "no") -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": code}}).encode()


@pytest.mark.parametrize(
    ("status", "payload", "headers", "cls"),
    [
        # OpenAI: out of quota is a 429, the status of a rate limit that passes with time.
        (429, body("insufficient_quota", "insufficient_quota"), {}, QuotaExceeded),
        (
            429,
            body("insufficient_quota", "insufficient_quota"),
            {"x-should-retry": "true"},
            QuotaExceeded,
        ),
        (400, body("billing_hard_limit_reached", "invalid_request_error"), {}, QuotaExceeded),
        (429, body("billing_not_active", "insufficient_quota"), {}, QuotaExceeded),
        # Anthropic: 402 billing_error, 403 permission_error.
        (
            402,
            b'{"type":"error","error":{"type":"billing_error","message":"low"}}',
            {},
            QuotaExceeded,
        ),
        (
            403,
            b'{"type":"error","error":{"type":"permission_error","message":"no"}}',
            {"x-should-retry": "true"},
            AuthenticationError,
        ),
        (403, b"", {"x-should-retry": "true"}, AuthenticationError),
        (402, b"", {}, QuotaExceeded),
    ],
)
def test_http_quota_billing_and_permission_errors_are_final(
    status: int, payload: bytes, headers: dict[str, str], cls: type[ProviderError]
) -> None:
    error = error_from_response(status, headers, payload)
    assert type(error) is cls and not error.retryable
    assert not isinstance(error, RateLimited)
    assert Retrier(RetryPolicy()).next_wait(error) is None


def test_a_real_rate_limit_is_still_retried() -> None:
    error = error_from_response(429, {}, body("rate_limit_exceeded", "requests"))
    assert type(error) is RateLimited and error.retryable


@pytest.mark.parametrize(
    ("ptype", "status"),
    [
        ("insufficient_quota", None),
        ("insufficient_quota", 429),
        ("billing_error", None),
        ("billing_hard_limit_reached", None),
        ("BILLING_NOT_ACTIVE", None),
        ("permission_error", None),
        (None, 402),
        (None, 403),
    ],
)
def test_provider_types_and_statuses_are_not_retryable(
    ptype: str | None, status: int | None
) -> None:
    assert not class_for_provider_type(ptype, status).retryable
    if ptype is None and status is not None:
        assert not class_for_status(status).retryable


def test_quota_text_is_classified_before_rate_limit_text() -> None:
    openai = "Error code: 429 - You exceeded your current quota, please check your plan and billing"
    assert classify_text(openai) is QuotaExceeded
    assert (
        classify_text("Your credit balance is too low to access the Anthropic API") is QuotaExceeded
    )
    assert classify_text("rate limit reached for requests") is RateLimited


# -- in-stream error events: replayed, and through the client against a real server ----------

RESPONSES_QUOTA = sse(
    {
        "type": "error",
        "code": "insufficient_quota",
        "message": "You exceeded your current quota",
        "param": None,
        "sequence_number": 0,
    },
    "error",
) + sse(
    {
        "type": "response.failed",
        "sequence_number": 1,
        "response": {
            "id": "resp_1",
            "status": "failed",
            "error": {"code": "insufficient_quota", "message": "You exceeded your current quota"},
        },
    },
    "response.failed",
)
CHAT_QUOTA = openai_chunk({"role": "assistant", "content": ""}) + sse(
    {"error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}}
)
ANTHROPIC_BILLING = anthropic_error("billing_error", "Your credit balance is too low")


@pytest.mark.parametrize(
    ("stream", "provider"),
    [
        (RESPONSES_QUOTA, "openai-responses"),
        (CHAT_QUOTA, "openai"),
        (ANTHROPIC_BILLING, "anthropic"),
    ],
)
def test_in_stream_quota_errors_are_reported_not_retryable(stream: bytes, provider: str) -> None:
    turn = replay(stream, provider=provider).turn
    assert turn.error is not None and turn.error.provider_type is not None
    assert not turn.error.retryable


def _run(server: CannedServer, provider: str) -> BaseException:
    base = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
    cfg = ClientConfig(
        provider=provider,  # type: ignore[arg-type]
        model="m",
        max_tokens=64,
        base_url=base,
        api_key="sk-test",
        timeouts=FAST,
        retry=RetryPolicy(attempts=4),
    )

    async def go() -> Any:
        async with AsyncProviderClient(cfg) as client:
            stream = client.stream_turn([User("hi")])
            async for _ in stream:
                pass

    with pytest.raises(ProviderError) as raised:
        asyncio.run(go())
    return raised.value


@pytest.mark.parametrize(
    ("stream", "provider"),
    [
        (RESPONSES_QUOTA, "openai-responses"),
        (CHAT_QUOTA, "openai"),
        (ANTHROPIC_BILLING, "anthropic"),
    ],
)
def test_the_client_sends_a_quota_error_event_once(stream: bytes, provider: str) -> None:
    with CannedServer() as server:
        server.push(*(Reply(chunks=[stream]) for _ in range(4)))
        error = _run(server, provider)
        assert isinstance(error, QuotaExceeded) and not error.retryable
        assert len(server.requests) == 1  # never resent: resending cannot add credit


def test_the_client_sends_a_quota_status_once() -> None:
    with CannedServer() as server:
        reply = json_reply(429, json.loads(body("insufficient_quota", "insufficient_quota")))
        server.push(*(reply for _ in range(4)))
        error = _run(server, "openai")
        assert isinstance(error, QuotaExceeded) and error.status == 429
        assert len(server.requests) == 1
