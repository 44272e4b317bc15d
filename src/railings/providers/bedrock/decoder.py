"""Amazon Bedrock ``ConverseStream`` decoder: event-stream frames in, normalized events out.

Theory of operation. ``POST /model/{modelId}/converse-stream`` answers with
``application/vnd.amazon.eventstream`` frames (:mod:`railings.wire.eventstream`).
Each frame's ``:message-type`` header says what it is:

* ``event`` -- ``:event-type`` names it and the payload is its JSON object (the
  ``{"messageStart": {...}}`` wrapping that boto3 and the AI SDK show is theirs,
  not the wire's). :data:`EVENT_HANDLERS` is the table:

  - ``messageStart`` -- the response began (no id or model on the wire: the request
    id is an HTTP header).
  - ``contentBlockStart`` -- ``start.toolUse`` opens a local call (``toolUseId``,
    ``name``); an empty ``start`` (a text block) is nothing.
  - ``contentBlockDelta`` -- keyed by the delta's one key (:data:`DELTA_HANDLERS`):
    ``text``; ``toolUse.input``, a fragment of the argument JSON **as the model
    wrote it** (raw text: joined, then parsed strictly once); ``reasoningContent``
    with ``text``, ``signature`` or ``redactedContent`` (kept to go back verbatim).
    ``citation`` is metadata on a text block, read past.
  - ``contentBlockStop`` -- closes a call's argument block.
  - ``messageStop`` -- **the termination proof**, with ``stopReason``
    (:data:`STOP_REASONS`).
  - ``metadata`` -- usage and metrics. It comes *after* ``messageStop`` on the wire, and
    alone it is no proof: a stream with ``metadata`` but no ``messageStop`` is
    interrupted, whatever usage it reports.
* ``exception`` -- ``:exception-type`` (``throttlingException`` ...): a provider error,
  typed so classification can retry what passes with time (:data:`ERROR_CLASSES`).
* ``error`` -- the older ``:error-code`` / ``:error-message`` pair: a provider error.

Anything else -- another event type, delta key or block start -- is :class:`Unknown`.
A payload that is not a UTF-8 JSON object is a
:class:`~railings.errors.MalformedStream`, as a frame whose CRC does not match is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from railings.errors import (
    AuthenticationError,
    BadRequest,
    MalformedStream,
    Overloaded,
    ProviderError,
    RateLimited,
    ServerError,
)
from railings.events import (
    BilledOutput,
    MessageStart,
    ProviderErrorEvent,
    StopReason,
    StreamEvent,
    TerminationProof,
    TextDelta,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unknown,
)
from railings.providers.base import as_str as _str
from railings.providers.base import usage_update
from railings.stops import Stop
from railings.wire._held import HeldStream
from railings.wire._json import as_int, load_object
from railings.wire.eventstream import (
    CONTENT_TYPE,
    DEFAULT_MAX_MESSAGE_SIZE,
    EventStreamDecoder,
    Message,
    looks_like_eventstream,
)

__all__ = [
    "CONTENT_TYPE",
    "DELTA_HANDLERS",
    "ERROR_CLASSES",
    "ERROR_STATUS",
    "EVENT_HANDLERS",
    "MESSAGE_STOP",
    "STOP_REASONS",
    "BedrockDecoder",
    "BedrockStream",
    "is_bedrock",
]

MESSAGE_STOP: Final = "messageStop"

# ConverseStream ``stopReason`` -> railings' stop reason (the spec's table). The window
# filling while the model wrote is an output-limit cut (the truncation gate applies);
# guardrail and content-filter stops are both content filtering; a botched call is its
# own reason.
STOP_REASONS: Final[dict[str, Stop]] = {
    "end_turn": Stop.END_TURN,
    "tool_use": Stop.TOOL_USE,
    "max_tokens": Stop.MAX_TOKENS,
    "model_context_window_exceeded": Stop.MAX_TOKENS,
    "stop_sequence": Stop.STOP_SEQUENCE,
    "content_filtered": Stop.CONTENT_FILTER,
    "guardrail_intervened": Stop.CONTENT_FILTER,
    "malformed_tool_use": Stop.MALFORMED_TOOL_USE,
}

# Exception type -> the error class it is (retryable or not). The first four pass with
# time (AWS: "retry your request"); a validation or access error never does.
ERROR_CLASSES: Final[dict[str, type[ProviderError]]] = {
    "throttlingException": RateLimited,
    "serviceUnavailableException": Overloaded,
    "internalServerException": ServerError,
    "modelStreamErrorException": ServerError,
    "modelTimeoutException": ServerError,
    "modelNotReadyException": Overloaded,
    "validationException": BadRequest,
    "accessDeniedException": AuthenticationError,
    "resourceNotFoundException": BadRequest,
}
# The HTTP status the Bedrock API reference gives each exception, reported on the event
# when the payload carries no ``originalStatusCode`` of its own.
ERROR_STATUS: Final[dict[str, int]] = {
    "throttlingException": 429,
    "serviceUnavailableException": 503,
    "internalServerException": 500,
    "modelStreamErrorException": 424,
    "modelTimeoutException": 408,
    "modelNotReadyException": 429,
    "validationException": 400,
    "accessDeniedException": 403,
    "resourceNotFoundException": 404,
}

_CITATION_DELTAS: Final = frozenset({"citation"})


def is_bedrock(content_type: str, prefix: bytes = b"") -> bool:
    """Detection: the event-stream media type, or a body that opens with a valid prelude."""
    return content_type.split(";")[0].strip().lower() == CONTENT_TYPE or looks_like_eventstream(
        prefix
    )


class BedrockDecoder:
    """Turns the frames of one ConverseStream response into normalized events."""

    __slots__ = ("_blocks", "_next")

    def __init__(self) -> None:
        self._next = 0  # position of the next tool call
        self._blocks: dict[int, int] = {}  # contentBlockIndex -> tool call position

    def feed(self, message: Message) -> list[StreamEvent]:
        """The normalized events of one frame: ``messageStop`` carries the termination
        proof, an exception frame is a provider error, an unknown type is
        :class:`Unknown`. A payload that is not a JSON object raises
        :class:`~railings.errors.MalformedStream`."""
        kind = message.text_header(":message-type")
        if kind == "event":
            event_type = message.text_header(":event-type")
            handler = EVENT_HANDLERS.get(event_type)
            if handler is None:
                return [Unknown(name=f"bedrock:{event_type}")]
            return handler(self, _payload(message, event_type))
        if kind == "exception":
            exception = message.text_header(":exception-type")
            return [_exception(exception, _payload(message, exception))]
        if kind == "error":
            code = message.text_header(":error-code") or None
            text = message.text_header(":error-message") or "provider error"
            return [ProviderErrorEvent(message=text, provider_type=code, status=None)]
        return [Unknown(name=f"bedrock:message-type:{kind}")]

    def close(self) -> list[StreamEvent]:
        """No events: each frame was decoded whole as it came."""
        return []

    def _block_start(self, obj: dict[str, Any]) -> list[StreamEvent]:
        start = obj.get("start")
        if not isinstance(start, dict) or not start:
            return []  # a text block opens with an empty start
        tool = start.get("toolUse")
        if not isinstance(tool, dict):
            return [Unknown(name=f"bedrock:start:{','.join(sorted(start))}")]
        position = self._next
        self._next += 1
        self._blocks[as_int(obj.get("contentBlockIndex")) or 0] = position
        return [
            ToolCallStart(
                index=position, id=_str(tool.get("toolUseId")), name=_str(tool.get("name"))
            )
        ]

    def _block_delta(self, obj: dict[str, Any]) -> list[StreamEvent]:
        delta = obj.get("delta")
        if not isinstance(delta, dict) or len(delta) != 1:
            return [Unknown(name="bedrock:contentBlockDelta")]
        ((key, value),) = delta.items()
        handler = DELTA_HANDLERS.get(key)
        if handler is not None:
            return handler(self, as_int(obj.get("contentBlockIndex")) or 0, value)
        if key in _CITATION_DELTAS:
            # A citation the model attached to its text: billed output the turn does not
            # keep (railings.turn.billable).
            return [BilledOutput(name=f"bedrock:delta:{key}")]
        return [Unknown(name=f"bedrock:delta:{key}")]

    def _tool_input(self, block: int, value: object) -> list[StreamEvent]:
        position = self._blocks.get(block)
        fragment = value.get("input") if isinstance(value, dict) else None
        if position is None or not isinstance(fragment, str):
            return [Unknown(name="bedrock:delta:toolUse:unmatched")]
        # The model's own JSON text: joined and parsed strictly once the block ends.
        return [ToolArgumentsDelta(index=position, fragment=fragment)] if fragment else []

    def _block_stop(self, obj: dict[str, Any]) -> list[StreamEvent]:
        position = self._blocks.get(as_int(obj.get("contentBlockIndex")) or 0)
        return [] if position is None else [ToolCallEnd(index=position)]


def _message_start(_: BedrockDecoder, obj: dict[str, Any]) -> list[StreamEvent]:
    return [MessageStart(id="", model="")]


def _message_stop(_: BedrockDecoder, obj: dict[str, Any]) -> list[StreamEvent]:
    reason = _str(obj.get("stopReason"))
    out: list[StreamEvent] = [StopReason(wire=reason)] if reason else []
    return [*out, TerminationProof(marker=MESSAGE_STOP)]


def _metadata(_: BedrockDecoder, obj: dict[str, Any]) -> list[StreamEvent]:
    return usage_update(obj.get("usage"), "inputTokens", "outputTokens")


def _text(_: BedrockDecoder, block: int, value: object) -> list[StreamEvent]:
    return [TextDelta(text=value)] if isinstance(value, str) and value else []


def _reasoning(_: BedrockDecoder, block: int, value: object) -> list[StreamEvent]:
    if not isinstance(value, dict):
        return [Unknown(name="bedrock:delta:reasoningContent")]
    out: list[StreamEvent] = []
    text = value.get("text")
    if isinstance(text, str) and text:
        out.append(ThinkingDelta(text=text))
    signature = value.get("signature")
    if isinstance(signature, str) and signature:
        out.append(ThinkingDelta(text="", signature=signature))
    redacted = value.get("redactedContent")
    if isinstance(redacted, str) and redacted:
        out.append(ThinkingDelta(text="", redacted=redacted))
    return out


def _exception(exception: str, obj: dict[str, Any]) -> ProviderErrorEvent:
    status = as_int(obj.get("originalStatusCode")) or ERROR_STATUS.get(exception)
    return ProviderErrorEvent(
        message=_str(obj.get("message")) or _str(obj.get("originalMessage")) or exception,
        provider_type=exception or None,
        status=status,
    )


def _payload(message: Message, what: str) -> dict[str, Any]:
    try:
        text = message.payload.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedStream(f"bedrock {what}: payload is not UTF-8") from None
    return load_object(text, where=f"bedrock {what}")


_Handler = Callable[[BedrockDecoder, dict[str, Any]], list[StreamEvent]]
_DeltaHandler = Callable[[BedrockDecoder, int, object], list[StreamEvent]]

EVENT_HANDLERS: Final[dict[str, _Handler]] = {
    "messageStart": _message_start,
    "contentBlockStart": BedrockDecoder._block_start,
    "contentBlockDelta": BedrockDecoder._block_delta,
    "contentBlockStop": BedrockDecoder._block_stop,
    MESSAGE_STOP: _message_stop,
    "metadata": _metadata,
}

DELTA_HANDLERS: Final[dict[str, _DeltaHandler]] = {
    "text": _text,
    "toolUse": BedrockDecoder._tool_input,
    "reasoningContent": _reasoning,
}


class BedrockStream(HeldStream[Message]):
    """Bytes in, normalized events out: the frame decoder and :class:`BedrockDecoder`
    (``wire/_held.py``). ``close()`` raises :class:`~railings.errors.MalformedStream`
    when the body ended inside a frame, as a CRC mismatch does in ``feed``."""

    __slots__ = ()

    def __init__(self, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        super().__init__(EventStreamDecoder(max_message_size=max_message_size), BedrockDecoder())

    @property
    def frames_seen(self) -> int:
        """The frames decoded so far."""
        return self.seen
