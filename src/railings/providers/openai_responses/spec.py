"""The OpenAI Responses API (``"openai-responses"``): ``POST {base_url}/responses``.

Every event is typed (``response.created`` ... ) and numbered (``sequence_number``);
the proof of termination is ``response.completed`` or ``response.incomplete``
(whose ``incomplete_details.reason`` is the stop reason: there is no other); tool
results go back as output items of their own (``function_call_output`` ...) tied to
the call by ``call_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from railings.conversation import ToolResult
from railings.providers.base import (
    Detection,
    EncodeRequest,
    ErrorShapes,
    Framing,
    Proof,
    ProviderDecoder,
    ProviderSpec,
    Resumption,
    ScriptedShape,
    StopReasons,
    compact_json,
)
from railings.providers.openai_chat.spec import ERROR_SHAPES as CHAT_ERROR_SHAPES
from railings.providers.openai_chat.spec import OPENAI_ERROR_TYPES
from railings.providers.openai_responses.decoder import (
    COMPLETED,
    INCOMPLETE,
    SEQUENCE_NUMBER,
    OpenAIResponsesDecoder,
)
from railings.providers.openai_responses.encoder import openai_responses_body
from railings.providers.openai_responses.shapes import result_items
from railings.stops import Stop

__all__ = ["COMPLETED_STATUS", "RESUMPTION", "SPEC", "STOP_REASONS"]

# The status of a response that ended naturally: ``tool_use`` when the turn has calls,
# else ``end_turn`` (railings.turn.stop_reason derives it).
COMPLETED_STATUS = "completed"

# The terminal events: either is the proof.
_PROOFS = frozenset({COMPLETED, INCOMPLETE})


def _decoder(choice: int = 0) -> ProviderDecoder:
    # One response per stream: no choices to pick from.
    return OpenAIResponsesDecoder()


def _encode(request: EncodeRequest) -> dict[str, Any]:
    return openai_responses_body(
        request.model,
        request.messages,
        max_tokens=request.max_tokens,
        tools=request.tools,
        extra=request.extra,
    )


def _tool_result(result: ToolResult, call_type: str) -> list[dict[str, Any]]:
    # The output item of the call's own type (and, for a computer call answered with
    # text, a user message beside it).
    return result_items(call_type, result.call_id, result.content, result.is_error)


def _responses_error(code: str, message: str, number: int | None) -> bytes:
    # The documented ResponseErrorEvent (the next sequence number), plus the same fields
    # as an ``error`` object: the openai SDKs raise APIError only for an event whose data
    # holds ``error`` and read the flat fields into their event model otherwise.
    obj: dict[str, Any] = {"type": "error", "code": code, "message": message, "param": None}
    if number is not None:
        obj["sequence_number"] = number
    obj["error"] = {"type": "server_error", "code": code, "message": message, "param": None}
    return f"event: error\ndata: {compact_json(obj)}\n\n".encode()


def _keeps(body: Mapping[str, Any]) -> bool:
    # A background response keeps running, and keeps its events, when the stream breaks
    # (it needs ``store``, which the API refuses to turn off for it).
    return body.get("background") is True and body.get("stream") is True


def _ask(body: Mapping[str, Any]) -> dict[str, Any]:
    # The API keeps a background response only where it may store it.
    return {**body, "background": True, "store": True}


def _stream_path(response_id: str, after: int) -> str:
    # GET /responses/{id}?stream=true&starting_after=N: the events after N, again.
    return f"/{quote(response_id, safe='')}?stream=true&starting_after={after}"


def _cancel_path(response_id: str) -> str:
    return f"/{quote(response_id, safe='')}/cancel"


RESUMPTION = Resumption(keeps=_keeps, ask=_ask, stream_path=_stream_path, cancel_path=_cancel_path)

# A non-streamed answer's error body is the one both OpenAI wires share.
ERROR_SHAPES = ErrorShapes(event=_responses_error, body=CHAT_ERROR_SHAPES.body)

# No stop reason, only a status: ``completed`` (derived: ``tool_use`` with calls, else
# ``end_turn``), or ``incomplete`` and its ``incomplete_details.reason``, these.
STOP_REASONS: dict[str, Stop] = {
    "max_output_tokens": Stop.MAX_TOKENS,
    "content_filter": Stop.CONTENT_FILTER,
}

SPEC = ProviderSpec(
    name="openai-responses",
    title="OpenAI Responses",
    request_path="/responses",
    framing=Framing.SSE,
    content_types=("text/event-stream",),
    path_suffixes=("/responses",),
    # Both OpenAI wire formats read the ``OPENAI_`` variables: one SDK, one endpoint.
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
    asks_for_usage=False,
    proof=Proof(
        markers=_PROOFS,
        events=_PROOFS,
        types=_PROOFS,
    ),
    stop_reasons=StopReasons(
        wire=STOP_REASONS,
        derived=frozenset({COMPLETED_STATUS}),
        nearest={
            "refusal": "content_filter",
            "end_turn": COMPLETED_STATUS,
            "tool_use": COMPLETED_STATUS,
            "stop_sequence": COMPLETED_STATUS,
            "pause_turn": COMPLETED_STATUS,
            "malformed_tool_use": COMPLETED_STATUS,
        },
    ),
    error_types=OPENAI_ERROR_TYPES,  # one platform: the same types as Chat Completions
    detection=Detection(event_prefixes=("response.",), markers=('"type":"response.',)),
    error_shapes=ERROR_SHAPES,
    numbered=True,
    sequence_number=SEQUENCE_NUMBER,
    resumption=RESUMPTION,
    scripted=ScriptedShape(lead=4, seams=4),
)
