"""The OpenAI Responses API (``"openai-responses"``): ``POST {base_url}/responses``.

Every event is typed (``response.created`` ... ) and numbered (``sequence_number``);
the proof of termination is ``response.completed`` or ``response.incomplete``
(whose ``incomplete_details.reason`` is the stop reason: there is no other); tool
results go back as output items of their own (``function_call_output`` ...) tied to
the call by ``call_id``.
"""

from __future__ import annotations

import re
from typing import Any

from railings._responses_shapes import result_items
from railings.conversation import ToolResult
from railings.errors import MalformedStream
from railings.messages import openai_responses_body
from railings.providers import openai_chat
from railings.providers._tail import EOL, TAIL_BYTES, line_start, previous_line
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
    compact_json,
)
from railings.providers.openai_chat import OPENAI_ERROR_TYPES
from railings.stops import Stop
from railings.wire._json import load_object
from railings.wire.openai_responses import (
    COMPLETED,
    INCOMPLETE,
    SEQUENCE_NUMBER,
    OpenAIResponsesDecoder,
)
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE

__all__ = ["COMPLETED_STATUS", "SPEC", "STOP_REASONS", "proven_by_tail"]

# The status of a response that ended naturally: ``tool_use`` when the turn has calls,
# else ``end_turn`` (railings.turn.stop_reason derives it).
COMPLETED_STATUS = "completed"

# The guard's tail rule. The terminal event carries the whole response (every output
# item again), so it is found by walking back from the end over its one line, not by a
# fixed-size tail: the body's last event must be a single data line (optionally after
# its ``event:`` line) holding a JSON object whose ``type`` is terminal. That one line
# is parsed (one event, not one per chunk: the cost stays at the end, in C). Anything
# unusual (several data lines, an ``id:`` field, a comment) goes to the reader;
# OpenRouter's ``data: [DONE]`` trailer after the terminal event is stepped over.
# Every Responses response object holds ``"error":null``, so an ``"error"`` alone cannot
# rule errors out here: instead every ``"error"`` in the body must be that null. An
# ``error`` event (``"type":"error"``) or a ``response.failed`` (``"error":{...}``)
# sends the body to the reader.
_PROOFS = frozenset({COMPLETED, INCOMPLETE})
_EVENT_LINE = re.compile(rb"event: ?response\.(?:completed|incomplete)")
_NOT_NULL_ERROR = re.compile(rb'"error"(?!:null)')  # one pass over the body, in C
_DONE_LINE = re.compile(rb"data: ?\[DONE\]")
_BLANK_TAIL = re.compile(EOL + EOL + rb"[\r\n]*\Z")


def proven_by_tail(body: bytes) -> bool:
    """True when ``body``'s last event is its one terminal event, every ``"error"`` in it
    is null and its sequence numbers count up without a gap (the guard's fast verdict;
    False means "ask the reader")."""
    if _NOT_NULL_ERROR.search(body) is not None:
        return False
    blank = _BLANK_TAIL.search(body, max(0, len(body) - TAIL_BYTES))
    if blank is None:
        return False  # the last event was never dispatched by its blank line
    start, end = line_start(body, blank.start()), blank.start()
    if _DONE_LINE.fullmatch(body, start, end) and start > 0:
        # OpenRouter's trailer after the terminal event: step back over it.
        p_start, p_end = previous_line(body, start)
        if p_start != p_end or p_start == 0:
            return False
        start, end = previous_line(body, p_start)
    if not body.startswith(b"data:", start) or end - start >= DEFAULT_MAX_EVENT_SIZE:
        return False  # not a data line, or one the reader refuses as too large
    if start > 0:
        p_start, p_end = previous_line(body, start)
        if p_start != p_end:  # not the blank line that opens the event: its event: line?
            if not _EVENT_LINE.fullmatch(body, p_start, p_end):
                return False
            if p_start > 0:
                q_start, q_end = previous_line(body, p_start)
                if q_start != q_end:
                    return False  # another field of the same event
    value = body[start + 5 : end]
    value = value[1:] if value.startswith(b" ") else value  # WHATWG: one space is dropped
    try:
        event = load_object(value.decode("utf-8"), where="guard")
    except (UnicodeDecodeError, MalformedStream):
        return False
    if event.get("type") not in _PROOFS:
        return False
    last = event.get("sequence_number")
    if not isinstance(last, int):
        return True  # an API that numbers nothing (the reader checks what is numbered)
    # Events lost, repeated or swapped on the way break the count: the reader says how.
    numbers = [int(n) for n in SEQUENCE_NUMBER.findall(body)]  # one pass, in C
    return numbers == list(range(last - len(numbers) + 1, last + 1))


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


# A non-streamed answer's error body is the one both OpenAI wires share.
ERROR_SHAPES = ErrorShapes(event=_responses_error, body=openai_chat.ERROR_SHAPES.body)

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
        proven_by_tail=proven_by_tail,
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
    scripted=ScriptedShape(lead=4, seams=4),
)
