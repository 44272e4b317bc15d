"""Ollama's native API (``"ollama"``): ``POST {base_url}/api/chat``.

The answer is ``application/x-ndjson``, one JSON object per line
(:mod:`railings.providers.ollama.decoder`); the proof of termination is the line with
``done: true``, whose ``done_reason`` is the stop reason (``length``: the
``num_predict`` cut). Tool calls arrive whole and parsed; tool results go back as
``role: tool`` messages (:mod:`railings.providers.ollama.encoder`).

``/api/generate`` (a prompt in, text out: no conversation) is the same wire: its lines
carry ``response`` and ``thinking`` where a chat line has ``message``, with the same
proof and usage, and the one decoder reads both. So both paths route here (the guard
watches them, the fault proxy shapes their faults and errors); railings' own client
sends conversations, to ``/api/chat``.

A local server needs no key: ``OLLAMA_API_KEY`` (ollama.com's hosted models, as the
ollama client reads it) is sent as a bearer token when set, and its absence is no
error. ``OLLAMA_HOST`` is the base URL as the ollama client reads it: it may lack
the scheme or the port (``0.0.0.0``, ``host:11434``), which mean ``http://`` and
``11434``. Ollama errors carry no type, only text and the HTTP status, so the status
classifies them (``classify.STATUS_TABLE``: 404 an unknown model, 503 a full queue
...): this spec's error map is empty.
"""

from __future__ import annotations

from typing import Any

from railings.conversation import ToolResult
from railings.errors import ProviderError
from railings.providers.base import (
    Detection,
    EncodeRequest,
    Framing,
    Proof,
    ProviderDecoder,
    ProviderSpec,
    ScriptedShape,
    StopReasons,
)
from railings.providers.ollama.decoder import CONTENT_TYPE, DEFAULT_HOST, DONE, OllamaDecoder
from railings.providers.ollama.encoder import ollama_body, ollama_tool_message
from railings.stops import Stop

__all__ = ["OLLAMA_ERROR_TYPES", "SPEC", "STOP_REASONS"]

OLLAMA_ERROR_TYPES: dict[str, type[ProviderError]] = {}


def _decoder(choice: int = 0) -> ProviderDecoder:
    # One message per stream: no choices to pick from.
    return OllamaDecoder()


def _encode(request: EncodeRequest) -> dict[str, Any]:
    return ollama_body(
        request.model,
        request.messages,
        max_tokens=request.max_tokens,
        tools=request.tools,
        extra=request.extra,
    )


def _tool_result(result: ToolResult, call_type: str) -> list[dict[str, Any]]:
    # One ``role: tool`` message per result.
    return [ollama_tool_message(result)]


# ``done_reason`` -> railings' stop reason. ``load`` / ``unload`` (the model's lifecycle)
# are kept as they are, unnormalized.
STOP_REASONS: dict[str, Stop] = {"stop": Stop.END_TURN, "length": Stop.MAX_TOKENS}

SPEC = ProviderSpec(
    name="ollama",
    title="Ollama",
    request_path="/api/chat",
    framing=Framing.NDJSON,
    content_types=(CONTENT_TYPE,),
    path_suffixes=("/api/chat", "/api/generate"),
    default_base_url=DEFAULT_HOST,
    default_model="llama3.2",
    base_url_env="OLLAMA_HOST",
    api_key_env="OLLAMA_API_KEY",
    auth_header="authorization",
    key_required=False,
    version_header=None,
    # The API names no request header; the scripted server names its answers with this.
    request_id_header="x-request-id",
    gen_ai_name="ollama",
    decoder=_decoder,
    encode=_encode,
    tool_result=_tool_result,
    asks_for_usage=False,
    proof=Proof(markers=frozenset({DONE}), fields=frozenset({DONE}), structure="a `done_reason`"),
    stop_reasons=StopReasons(
        wire=STOP_REASONS,
        nearest={
            "tool_use": "stop",  # Ollama has no tool stop: a turn with calls ends in stop
            "stop_sequence": "stop",
            "content_filter": "stop",
            "refusal": "stop",
            "pause_turn": "stop",
            "malformed_tool_use": "stop",
        },
    ),
    error_types=OLLAMA_ERROR_TYPES,
    detection=Detection(markers=('"model":', '"created_at":', '"done":')),
    numbered=False,
    scripted=ScriptedShape(lead=1, seams=1),
)
