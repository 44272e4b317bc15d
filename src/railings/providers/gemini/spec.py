"""Google Gemini (``"gemini"``).

``POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse``.

One ``GenerateContentResponse`` JSON object per SSE event, no sentinel
(:mod:`railings.providers.gemini.decoder`). The proof of termination is a terminal
``finishReason`` (or a ``promptFeedback.blockReason``) **on the stream's last
event**: the decoder holds it and emits it at ``close()``, because translation
proxies stamp ``finishReason: STOP`` on chunks that are not the last. Function
calls arrive whole, already parsed. Tool results go back as ``functionResponse``
parts of a user content, tied to the call by name (and ``id`` where the call had
one); thought signatures go back where Gemini put them
(:mod:`railings.providers.gemini.encoder`).

Vertex AI serves the same body under its own path, :data:`VERTEX_REQUEST_PATH`
(``https://{location}-aiplatform.googleapis.com`` or the global
``https://aiplatform.googleapis.com``), authenticated by an OAuth bearer token
instead of the key header; the routing suffix is the same. The key variable is the
google-genai SDK's ``GEMINI_API_KEY`` (the SDK prefers ``GOOGLE_API_KEY`` when both
are set); its base URL variable is ``GOOGLE_GEMINI_BASE_URL``, a URL without the
API version (the path carries ``/v1beta``).
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
from railings.events import StreamEvent
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
from railings.providers.gemini.decoder import (
    FINISH_REASON,
    PROMPT_BLOCKED,
    GeminiDecoder,
    decode_body,
)
from railings.providers.gemini.decoder import STOP_REASONS as WIRE_STOPS
from railings.providers.gemini.encoder import gemini_body, gemini_function_response
from railings.stops import Stop

__all__ = [
    "GEMINI_ERROR_STATUSES",
    "SPEC",
    "STOP_REASONS",
    "VERTEX_REQUEST_PATH",
]

VERTEX_REQUEST_PATH = (
    "/v1/projects/{project}/locations/{location}/publishers/google/models/{model}"
    ":streamGenerateContent?alt=sse"
)

# ``error.status`` (google.rpc.Code names) -> the error class. Google's troubleshooting
# guide: RESOURCE_EXHAUSTED (429, "you've exceeded the rate limit"), UNAVAILABLE (503,
# "temporarily overloaded or down"), INTERNAL (500) and DEADLINE_EXCEEDED (504) pass with
# time; INVALID_ARGUMENT, FAILED_PRECONDITION (400: billing, region), PERMISSION_DENIED
# (403), NOT_FOUND (404) and UNAUTHENTICATED (401) never do.
GEMINI_ERROR_STATUSES: dict[str, type[ProviderError]] = {
    "RESOURCE_EXHAUSTED": RateLimited,
    "UNAVAILABLE": Overloaded,
    "INTERNAL": ServerError,
    "DEADLINE_EXCEEDED": ServerError,
    "UNKNOWN": ServerError,
    "INVALID_ARGUMENT": BadRequest,
    "FAILED_PRECONDITION": BadRequest,
    "OUT_OF_RANGE": BadRequest,
    "NOT_FOUND": BadRequest,
    "PERMISSION_DENIED": AuthenticationError,
    "UNAUTHENTICATED": AuthenticationError,
    "BILLING_DISABLED": QuotaExceeded,
}


def _decoder(choice: int = 0) -> ProviderDecoder:
    # ``choice`` is the candidate read (``candidateCount`` > 1).
    return GeminiDecoder(candidate=choice)


def _whole_body(body: bytes, choice: int) -> list[StreamEvent]:
    # ``streamGenerateContent`` without ``alt=sse``: one JSON array, read whole.
    return decode_body(body, candidate=choice)


def _encode(request: EncodeRequest) -> dict[str, Any]:
    # The model is in the request path (ProviderSpec.path_for), not the body.
    return gemini_body(
        request.messages, max_tokens=request.max_tokens, tools=request.tools, extra=request.extra
    )


def _tool_result(result: ToolResult, call_type: str) -> list[dict[str, Any]]:
    # One functionResponse part, named by ``result.name`` (the encoder looks the name up
    # in the history when it is empty).
    return [gemini_function_response(result)]


# ``finishReason`` (and ``promptFeedback.blockReason``) -> railings' stop reason, in the
# API's upper case (normalization matches case-insensitively): the decoder's table but
# ``OTHER`` and the like, which have no normalized meaning (they are kept, lower-cased).
# Gemini has no tool stop: a turn with calls ends in STOP, and ``tool_use`` is derived.
STOP_REASONS: dict[str, Stop] = {
    wire: stop for wire, stop in WIRE_STOPS.items() if isinstance(stop, Stop)
}

SPEC = ProviderSpec(
    name="gemini",
    title="Google Gemini",
    request_path="/v1beta/models/{model}:streamGenerateContent?alt=sse",
    framing=Framing.SSE,
    content_types=("text/event-stream",),
    path_suffixes=(":streamGenerateContent",),
    default_base_url="https://generativelanguage.googleapis.com",
    default_model="gemini-2.5-flash",
    base_url_env="GOOGLE_GEMINI_BASE_URL",
    api_key_env="GEMINI_API_KEY",
    api_key_envs=("GOOGLE_API_KEY", "GEMINI_API_KEY"),  # google-genai's order
    auth_header="x-goog-api-key",
    version_header=None,
    # The API names no request header: the response is named by ``responseId`` in its
    # body. The scripted server names its answers with this one.
    request_id_header="x-request-id",
    gen_ai_name="gcp.gemini",
    decoder=_decoder,
    whole_body=_whole_body,
    encode=_encode,
    tool_result=_tool_result,
    asks_for_usage=False,
    proof=Proof(
        markers=frozenset({FINISH_REASON, PROMPT_BLOCKED}),
        fields=frozenset({FINISH_REASON, "blockReason"}),
    ),
    stop_reasons=StopReasons(
        # The first spelling of a stop reason is the one the scripted server sends.
        wire=STOP_REASONS,
        nearest={
            "tool_use": "STOP",
            "stop_sequence": "STOP",
            "pause_turn": "STOP",
            "refusal": "SAFETY",
        },
    ),
    error_types=GEMINI_ERROR_STATUSES,
    detection=Detection(markers=('"candidates":', '"promptFeedback":', '"usageMetadata":')),
    numbered=False,
    scripted=ScriptedShape(lead=1, seams=1),
)
