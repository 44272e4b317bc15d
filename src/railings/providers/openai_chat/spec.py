"""OpenAI Chat Completions (``"openai"``): ``POST {base_url}/chat/completions``.

The wire most OpenAI-compatible services speak (DeepSeek, Groq, OpenRouter, vLLM
...). Its proof of termination is the ``data: [DONE]`` line; its stop reason is
each choice's ``finish_reason``; tool results go back as ``role: tool`` messages.
"""

from __future__ import annotations

from typing import Any

from railings.conversation import ToolResult
from railings.errors import (
    AuthenticationError,
    BadRequest,
    ContextWindowExceeded,
    ProviderError,
    QuotaExceeded,
    RateLimited,
    ServerError,
)
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
from railings.providers.openai_chat.decoder import DONE, OpenAIChatDecoder
from railings.providers.openai_chat.encoder import _openai_message, openai_chat_body
from railings.stops import Stop

__all__ = ["OPENAI_ERROR_TYPES", "SPEC", "STOP_REASONS"]

# OpenAI's error types and codes, and those of compatible services; the Responses API
# shares them (one platform).
OPENAI_ERROR_TYPES: dict[str, type[ProviderError]] = {
    "invalid_request_error": BadRequest,
    "server_error": ServerError,
    "internal_error": ServerError,
    "rate_limit_exceeded": RateLimited,
    "insufficient_quota": QuotaExceeded,  # sent with 429, yet it does not pass with time
    "context_length_exceeded": ContextWindowExceeded,
    "invalid_api_key": AuthenticationError,
    "tool_use_failed": BadRequest,  # Groq: the model's call failed the tool schema
}


def _decoder(choice: int = 0) -> ProviderDecoder:
    return OpenAIChatDecoder(choice=choice)


def _encode(request: EncodeRequest) -> dict[str, Any]:
    return openai_chat_body(
        request.model,
        request.messages,
        max_tokens=request.max_tokens,
        tools=request.tools,
        include_usage=request.include_usage,
        max_tokens_field=request.max_tokens_field,
        extra=request.extra,
    )


def _tool_result(result: ToolResult, call_type: str) -> list[dict[str, Any]]:
    # One ``role: tool`` message per result, whatever the call's type (every call is a
    # function call on this wire).
    return [_openai_message(result)]


def _openai_error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "server_error", "param": None, "code": code}}


# The openai SDKs raise APIError on a chunk whose data holds ``error``.
ERROR_SHAPES = ErrorShapes.of(_openai_error)

# ``finish_reason`` -> railings' stop reason. The first spelling of a stop reason is the
# one the scripted server sends (``function_call`` is the legacy calls' reason).
STOP_REASONS: dict[str, Stop] = {
    "stop": Stop.END_TURN,
    "length": Stop.MAX_TOKENS,
    "tool_calls": Stop.TOOL_USE,
    "function_call": Stop.TOOL_USE,
    "content_filter": Stop.CONTENT_FILTER,
}

SPEC = ProviderSpec(
    name="openai",
    title="OpenAI Chat Completions",
    request_path="/chat/completions",
    framing=Framing.SSE,
    content_types=("text/event-stream",),
    path_suffixes=("/chat/completions",),
    default_base_url="https://api.openai.com/v1",
    default_model="gpt-4.1-mini",
    base_url_env="OPENAI_BASE_URL",
    api_key_env="OPENAI_API_KEY",
    auth_header="authorization",
    version_header=None,
    request_id_header="x-request-id",
    gen_ai_name="openai",
    decoder=_decoder,
    encode=_encode,
    tool_result=_tool_result,
    asks_for_usage=True,
    proof=Proof(markers=frozenset({DONE}), data=frozenset({DONE}), structure="a `finish_reason`"),
    stop_reasons=StopReasons(
        wire=STOP_REASONS,
        nearest={
            "stop_sequence": "stop",
            "refusal": "content_filter",
            "pause_turn": "stop",
            # No such stop here: a compatible server sends a botched call as text, "stop".
            "malformed_tool_use": "stop",
        },
    ),
    error_types=OPENAI_ERROR_TYPES,
    detection=Detection(
        data=frozenset({DONE}), markers=('"choices":', '"object":"chat.completion')
    ),
    error_shapes=ERROR_SHAPES,
    numbered=False,
    scripted=ScriptedShape(lead=1, seams=1),
)
