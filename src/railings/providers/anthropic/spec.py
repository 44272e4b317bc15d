"""Anthropic Messages (``"anthropic"``): ``POST {base_url}/v1/messages``.

Every event is named (``event: message_start`` ...); the proof of termination is
the ``message_stop`` event; the stop reason is ``message_delta.delta.stop_reason``;
tool results go back as ``tool_result`` blocks leading a user message.
"""

from __future__ import annotations

from typing import Any

from railings.conversation import ToolResult
from railings.errors import (
    AuthenticationError,
    BadRequest,
    Overloaded,
    ProviderError,
    QuotaExceeded,
    RateLimited,
    ServerError,
)
from railings.providers.anthropic.decoder import MESSAGE_STOP, AnthropicDecoder
from railings.providers.anthropic.encoder import _anthropic_blocks, anthropic_messages_body
from railings.providers.base import (
    Detection,
    EncodeRequest,
    ErrorShapes,
    Framing,
    Proof,
    ProviderDecoder,
    ProviderSpec,
    ScriptedShape,
    StopReasons,
)
from railings.stops import Stop

__all__ = ["ANTHROPIC_ERROR_TYPES", "ANTHROPIC_VERSION", "SPEC", "STOP_REASONS"]

ANTHROPIC_VERSION = "2023-06-01"

ANTHROPIC_ERROR_TYPES: dict[str, type[ProviderError]] = {
    "overloaded_error": Overloaded,
    "rate_limit_error": RateLimited,
    "api_error": ServerError,
    "timeout_error": ServerError,
    "invalid_request_error": BadRequest,
    "authentication_error": AuthenticationError,
    "permission_error": AuthenticationError,
    "billing_error": QuotaExceeded,
    "not_found_error": BadRequest,
    "request_too_large": BadRequest,
}

# Every event type of the Messages stream (their ``event:`` names).
_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        MESSAGE_STOP,
        "ping",
    }
)


def _decoder(choice: int = 0) -> ProviderDecoder:
    # One message per stream: no choices to pick from.
    return AnthropicDecoder()


def _encode(request: EncodeRequest) -> dict[str, Any]:
    return anthropic_messages_body(
        request.model,
        request.messages,
        max_tokens=request.max_tokens,
        tools=request.tools,
        extra=request.extra,
    )


def _tool_result(result: ToolResult, call_type: str) -> list[dict[str, Any]]:
    # One ``tool_result`` block (``is_error`` kept); the encoder puts a turn's results
    # first in one user message, as the API requires.
    return _anthropic_blocks(result)


def _anthropic_error(code: str, message: str) -> dict[str, Any]:
    # api_error: the type the anthropic SDKs map to their server error class.
    return {"type": "error", "error": {"type": "api_error", "message": message}}


# The anthropic SDKs raise on ``event: error``.
ERROR_SHAPES = ErrorShapes.of(_anthropic_error, event="error")

# ``message_delta.delta.stop_reason`` -> railings' stop reason. The window filling while
# the model wrote is an output-limit cut (Anthropic: handle it as ``max_tokens``).
STOP_REASONS: dict[str, Stop] = {
    "end_turn": Stop.END_TURN,
    "max_tokens": Stop.MAX_TOKENS,
    "tool_use": Stop.TOOL_USE,
    "stop_sequence": Stop.STOP_SEQUENCE,
    "refusal": Stop.REFUSAL,
    "pause_turn": Stop.PAUSE_TURN,
    "model_context_window_exceeded": Stop.MAX_TOKENS,
}

SPEC = ProviderSpec(
    name="anthropic",
    title="Anthropic Messages",
    request_path="/v1/messages",
    framing=Framing.SSE,
    content_types=("text/event-stream",),
    path_suffixes=("/messages",),
    default_base_url="https://api.anthropic.com",
    default_model="claude-sonnet-4-5",
    base_url_env="ANTHROPIC_BASE_URL",
    api_key_env="ANTHROPIC_API_KEY",
    auth_header="x-api-key",
    version_header=("anthropic-version", ANTHROPIC_VERSION),
    request_id_header="request-id",
    gen_ai_name="anthropic",
    decoder=_decoder,
    encode=_encode,
    tool_result=_tool_result,
    asks_for_usage=False,
    proof=Proof(
        markers=frozenset({MESSAGE_STOP}),
        events=frozenset({MESSAGE_STOP}),
        structure="a `message_delta` with its `stop_reason`",
    ),
    stop_reasons=StopReasons(
        wire=STOP_REASONS,
        nearest={"content_filter": "refusal", "malformed_tool_use": "end_turn"},
    ),
    error_types=ANTHROPIC_ERROR_TYPES,
    detection=Detection(events=_EVENTS, markers=('"type":"message_start"',)),
    error_shapes=ERROR_SHAPES,
    numbered=False,
    scripted=ScriptedShape(lead=3, seams=3),
    # The Messages API continues a trailing assistant message (prefill). Some current
    # models refuse it with a 400, which is not billed: railings.continuation then asks
    # again with the text in a user message.
    continues_by_prefill=True,
)
