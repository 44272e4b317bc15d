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

from railings.errors import ProviderError
from railings.providers.base import (
    Detection,
    Framing,
    Proof,
    ProviderSpec,
    ScriptedShape,
    StopReasons,
)
from railings.providers.ollama.decoder import CONTENT_TYPE, DEFAULT_HOST, DONE, OllamaDecoder
from railings.providers.ollama.encoder import ollama_body, ollama_tool_message
from railings.stops import Stop

__all__ = ["OLLAMA_ERROR_TYPES", "SPEC", "STOP_REASONS"]

OLLAMA_ERROR_TYPES: dict[str, type[ProviderError]] = {}


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
    decoder=lambda _choice: OllamaDecoder(),  # one message per stream: no choices
    encode=lambda r: ollama_body(
        r.model, r.messages, max_tokens=r.max_tokens, tools=r.tools, extra=r.extra
    ),
    tool_result=lambda result, _call_type: [ollama_tool_message(result)],  # role: tool
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
