"""The error maps of Gemini, Bedrock and Ollama: each error type is typed, and retried only
when it passes with time, in the stream and by classification alike."""

from __future__ import annotations

import json

import pytest

from railings import classify
from railings.errors import (
    AuthenticationError,
    BadRequest,
    Overloaded,
    ProviderError,
    RateLimited,
    ServerError,
)
from railings.replay import replay
from railings.testing.eventstream import event_frame, exception_frame
from railings.turn.model import ErrorKind, Termination

BEDROCK = {
    "throttlingException": (RateLimited, True),
    "serviceUnavailableException": (Overloaded, True),
    "internalServerException": (ServerError, True),
    "modelStreamErrorException": (ServerError, True),  # AWS: HTTP 424, retried by the SDKs
    "modelTimeoutException": (ServerError, True),
    "modelNotReadyException": (Overloaded, True),
    "validationException": (BadRequest, False),
    "accessDeniedException": (AuthenticationError, False),
    "resourceNotFoundException": (BadRequest, False),
}

GEMINI = {
    "RESOURCE_EXHAUSTED": (429, RateLimited, True),
    "UNAVAILABLE": (503, Overloaded, True),
    "INTERNAL": (500, ServerError, True),
    "DEADLINE_EXCEEDED": (504, ServerError, True),
    "INVALID_ARGUMENT": (400, BadRequest, False),
    "FAILED_PRECONDITION": (400, BadRequest, False),
    "PERMISSION_DENIED": (403, AuthenticationError, False),
    "NOT_FOUND": (404, BadRequest, False),
    "UNAUTHENTICATED": (401, AuthenticationError, False),
}


@pytest.mark.parametrize(("kind", "expected"), BEDROCK.items(), ids=list(BEDROCK))
def test_bedrock_exception_frames_are_typed(
    kind: str, expected: tuple[type[ProviderError], bool]
) -> None:
    cls, retryable = expected
    assert classify.class_for_provider_type(kind) is cls
    assert cls.retryable is retryable
    body = event_frame("messageStart", {"role": "assistant"}) + exception_frame(
        kind, {"message": f"{kind} happened"}
    )
    turn = replay(body).turn
    assert turn.provider == "bedrock" and turn.termination is Termination.ABRUPT
    assert turn.error is not None and turn.error.kind is ErrorKind.PROVIDER_ERROR
    assert turn.error.provider_type == kind and turn.error.retryable is retryable


def test_a_model_stream_error_keeps_its_class_beside_its_status() -> None:
    # 424 alone would be a client error; the exception type says the model failed.
    assert classify.class_for_status(424) is BadRequest
    assert classify.class_for_provider_type("modelStreamErrorException", 424) is ServerError


@pytest.mark.parametrize(("status", "expected"), GEMINI.items(), ids=list(GEMINI))
def test_gemini_error_statuses_are_typed(
    status: str, expected: tuple[int, type[ProviderError], bool]
) -> None:
    code, cls, retryable = expected
    assert classify.class_for_provider_type(status, code) is cls
    event = {"error": {"code": code, "message": "no", "status": status}}
    turn = replay(b"data: " + json.dumps(event).encode() + b"\n\n", provider="gemini").turn
    assert turn.error is not None and turn.error.provider_type == status
    assert turn.error.retryable is retryable


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequest),
        (404, BadRequest),
        (429, RateLimited),
        (500, ServerError),
        (503, Overloaded),
    ],
)
def test_ollama_errors_are_classified_by_status(status: int, cls: type[ProviderError]) -> None:
    # Ollama's errors are {"error": "<text>"}: no type, so the status decides.
    assert classify.class_for_provider_type(None, status) is cls


def test_an_ollama_error_line_ends_the_turn() -> None:
    body = (
        b'{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant",'
        b'"content":"Hel"},"done":false}\n{"error":"an error was encountered while running'
        b' the model: unexpected EOF"}\n'
    )
    turn = replay(body).turn
    assert turn.provider == "ollama" and turn.termination is Termination.ABRUPT
    assert turn.error is not None and turn.error.kind is ErrorKind.PROVIDER_ERROR
    assert "unexpected EOF" in turn.error.message
