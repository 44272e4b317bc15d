"""Gemini ``streamGenerateContent`` decoder: SSE events in, normalized events out.

Theory of operation. ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``
(and the same body from Vertex AI's ``.../publishers/google/models/{model}:
streamGenerateContent?alt=sse``) sends one ``GenerateContentResponse`` JSON object per
SSE event. There is no sentinel. Each object may carry ``candidates`` (the turn reads
one, index 0 unless told otherwise), ``usageMetadata``, ``promptFeedback``,
``modelVersion`` and ``responseId``. A candidate's ``content.parts`` are read by one
handler per part kind (:data:`PART_HANDLERS`):

* ``text`` -- answer text, or reasoning when ``thought: true``.
* ``thoughtSignature`` (on any part) -- an opaque signature that must go back with its
  part: a :class:`ThinkingDelta` signature, in order.
* ``functionCall`` -- a call, whole (``name`` and already-parsed ``args``): its arguments
  are railings' serialization of an object, marked ``parsed`` (proving nothing about their
  completeness). Streamed ones (``willContinue``, ``partialArgs``: :mod:`.args`) are
  rebuilt and marked the same; a call whose fragments never ended is never closed.
* ``inlineData``, ``executableCode``, ``codeExecutionResult`` ... -- :class:`Unknown`.

The termination proof
---------------------
A candidate's ``finishReason`` other than ``FINISH_REASON_UNSPECIFIED`` is the
model's word that it stopped (``STOP``, ``MAX_TOKENS`` -- the output-limit cut --
``SAFETY``, ``RECITATION`` ...; :data:`STOP_REASONS`); a ``promptFeedback.blockReason``
without candidates is the API's word that the prompt was refused. Either is the proof
**only on the stream's last event**: the decoder holds it, a later event that carries
content withdraws it, and :meth:`GeminiDecoder.close` (EOF after a whole event)
emits the :class:`TerminationProof`.

The stop reason itself is reported where it arrives, as a :class:`StopReason` (one per
change of reason): the proof waits for the end, the model's word does not. A
``MAX_TOKENS`` on a function call's chunk, then a contentless ``STOP``, is two stop
reasons, and the assembler keeps the output limit whatever follows (its sticky rule, for
every wire): the call was cut, and the last reason alone would hide it.

Why not at once: ``finishReason: "STOP"`` has been seen on chunks that are not the
last. The Gemini API itself sent it on every chunk of a stream in 2024 (gemini-pro;
songquanpeng/one-api#1477 removed the field from its translation because "you cannot
know in advance which message is the last", fruitbars/simple-one-api#32 likewise), and
translation proxies still do: router-for-me/CLIProxyAPI#5640 and #5651 (OpenAI ->
Gemini) stamp ``STOP`` on every contentless chunk, including the ones *before* the
text, and Chevey339/kelivo#1003 lost whole replies to that. Trusting the first ``STOP``
would report such turns finished after their first chunk -- the silent truncation this
library exists to refuse. Trusting only the last costs nothing on today's API, whose
``finishReason`` comes on its final chunk (with ``usageMetadata``) right before the end
of the body. What it cannot catch: ``STOP`` on every chunk *and* a cut right after one
of them -- indistinguishable from a real end on the wire.

The other way round is known too: for a turn of pure thinking the API has been seen
omitting ``finishReason`` from its last chunk (CLIProxyAPI#5226). Such a turn has no
proof and is reported interrupted, as it must be: a missing proof is never invented.

An ``error`` object in an event (``{"error": {"code", "message", "status"}}``) is a
provider error, typed by ``status`` and ``code``. ``data: [DONE]`` (appended by some
proxies) is read past. Without ``alt=sse`` the body is one JSON array of the same
objects: :func:`decode_body` reads it whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from railings.errors import EventTooLarge, MalformedStream
from railings.events import (
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
    UsageUpdate,
)
from railings.providers.base import as_dict as _dict
from railings.providers.base import as_str as _str
from railings.providers.gemini.args import PartialArguments
from railings.providers.gemini.fields import (
    CANDIDATE_READ,
    CANDIDATE_READ_PAST,
    DONE,
    FINISH_REASON,
    PART_METADATA,
    PROMPT_BLOCKED,
    READ_PAST,
    STOP_REASONS,
    TOP_READ,
    UNSPECIFIED,
)
from railings.wire._held import HeldStream
from railings.wire._json import as_count, as_int, load_object
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE, ServerSentEvent, SSEDecoder

__all__ = [
    "CANDIDATE_READ_PAST",
    "FINISH_REASON",
    "PART_HANDLERS",
    "PROMPT_BLOCKED",
    "READ_PAST",
    "STOP_REASONS",
    "UNSPECIFIED",
    "GeminiDecoder",
    "GeminiStream",
    "decode_body",
    "is_gemini",
]


def is_gemini(first: ServerSentEvent) -> bool:
    """Detection from a stream's first event: a GenerateContentResponse object (its
    camelCase top-level keys), not an OpenAI chunk or a typed Anthropic/Responses event."""
    data = first.data.lstrip()
    if not data.startswith("{") or '"type"' in data[:40] or '"choices"' in data:
        return False
    return any(f'"{key}"' in data for key in ("candidates", "promptFeedback", "usageMetadata"))


class GeminiDecoder:
    """Turns the SSE events of one ``streamGenerateContent`` stream into normalized events.

    ``candidate`` picks the candidate read (``candidateCount`` > 1); the indexes seen
    are in :attr:`candidates`."""

    __slots__ = (
        "_call",
        "_next",
        "_pending",
        "_reported",
        "_started",
        "candidate",
        "candidates",
    )

    def __init__(self, *, candidate: int = 0) -> None:
        self.candidate = candidate
        self.candidates: set[int] = set()
        self._started = False
        self._next = 0  # position of the next call
        self._call: tuple[int, PartialArguments] | None = None  # a call streaming its args
        # The last event's stop, if terminal: (wire reason, proof marker).
        self._pending: tuple[str, str] | None = None
        self._reported = ""  # the stop reason last emitted

    def feed(self, sse: ServerSentEvent) -> list[StreamEvent]:
        """The normalized events of one SSE event. The proof is held until
        :meth:`close` (module docstring). Data that is not a JSON object raises
        :class:`~railings.errors.MalformedStream`."""
        if sse.data == DONE:
            return []  # a proxy's trailer: proves nothing for this API
        return self.feed_object(load_object(sse.data, where="gemini event"))

    def feed_object(self, obj: dict[str, Any]) -> list[StreamEvent]:
        """The normalized events of one decoded GenerateContentResponse object."""
        out: list[StreamEvent] = []
        if not self._started and ("responseId" in obj or "modelVersion" in obj):
            self._started = True
            out.append(
                MessageStart(id=_str(obj.get("responseId")), model=_str(obj.get("modelVersion")))
            )
        error = obj.get("error")
        if isinstance(error, dict):
            out.append(_error_event(error))
            return out
        out += [
            Unknown(name=f"gemini:{key}")
            for key in obj
            if key not in TOP_READ and key not in READ_PAST
        ]
        content = False
        reason: tuple[str, str] | None = None
        candidates = obj.get("candidates")
        if isinstance(candidates, list):
            for candidate in candidates:
                if not isinstance(candidate, dict):
                    out.append(Unknown(name="gemini:candidate"))
                    continue
                index = as_int(candidate.get("index")) or 0
                self.candidates.add(index)
                if index != self.candidate:
                    continue
                out += [
                    Unknown(name=f"gemini:candidate:{key}")
                    for key in candidate
                    if key not in CANDIDATE_READ and key not in CANDIDATE_READ_PAST
                ]
                parts = _dict(candidate.get("content")).get("parts")
                if isinstance(parts, list):
                    for part in parts:
                        events = self._part(part)
                        content = content or any(not isinstance(e, Unknown) for e in events)
                        out += events
                finish = candidate.get(FINISH_REASON)
                if isinstance(finish, str) and finish and finish != UNSPECIFIED:
                    reason = (finish, FINISH_REASON)
        blocked = _dict(obj.get("promptFeedback")).get("blockReason")
        if reason is None and isinstance(blocked, str) and blocked and not candidates:
            reason = (blocked, PROMPT_BLOCKED)
        usage = obj.get("usageMetadata")
        if isinstance(usage, dict):
            out += _usage(usage)
        if reason is not None:
            self._pending = reason
            if reason[0] != self._reported:
                self._reported = reason[0]
                out.append(StopReason(wire=reason[0]))  # where it arrives: module docstring
        elif content:
            self._pending = None  # more content came: the earlier stop was not the last
        return out

    def close(self) -> list[StreamEvent]:
        """EOF after whole events: the proof when the last event carried a terminal
        ``finishReason`` (or a prompt block), else nothing."""
        pending, self._pending = self._pending, None
        if pending is None:
            return []  # no proof: a call still streaming stays open (interrupted)
        out: list[StreamEvent] = []
        if self._call is not None:
            # The model stopped with a call whose fragments never said they ended: its
            # arguments are not known whole, so they are kept as the fragments, unrunnable.
            position, arguments = self._call
            self._call = None
            out += [
                Unknown(name="gemini:functionCall:unended"),
                ToolArgumentsDelta(index=position, fragment=arguments.raw(), parsed=True),
                ToolCallEnd(index=position),
            ]
        return [*out, TerminationProof(marker=pending[1])]

    # -- parts ------------------------------------------------------------------------------

    def _part(self, part: object) -> list[StreamEvent]:
        if not isinstance(part, dict):
            return [Unknown(name="gemini:part")]
        kinds = [key for key in part if key not in PART_METADATA]
        signature = part.get("thoughtSignature")
        if len(kinds) != 1:
            if not kinds and isinstance(signature, str) and signature:
                return [ThinkingDelta(text="", signature=signature)]
            return [Unknown(name=f"gemini:part:{','.join(sorted(kinds)) or 'empty'}")]
        handler = PART_HANDLERS.get(kinds[0])
        if handler is None:
            return [Unknown(name=f"gemini:part:{kinds[0]}")]
        return handler(self, part)

    def _text(self, part: dict[str, Any]) -> list[StreamEvent]:
        text = part.get("text")
        signature = _str(part.get("thoughtSignature"))
        if not isinstance(text, str):
            return [Unknown(name="gemini:part:text")]
        if part.get("thought") is True:
            return [ThinkingDelta(text=text, signature=signature)] if text or signature else []
        out: list[StreamEvent] = [TextDelta(text=text)] if text else []
        if signature:
            out.append(ThinkingDelta(text="", signature=signature))
        return out

    def _function_call(self, part: dict[str, Any]) -> list[StreamEvent]:
        call = part.get("functionCall")
        if not isinstance(call, dict):
            return [Unknown(name="gemini:part:functionCall")]
        out: list[StreamEvent] = []
        signature = _str(part.get("thoughtSignature"))
        if signature:
            # Gemini 3 refuses a call sent back without the signature it came with.
            out.append(ThinkingDelta(text="", signature=signature))
        streaming = call.get("willContinue") is True
        name = call.get("name")
        if isinstance(name, str) and name and (self._call is None or "partialArgs" not in call):
            out += self._end_call()  # a new call begins: the previous one is over
            position = self._next
            self._next += 1
            out.append(ToolCallStart(index=position, id=_str(call.get("id")), name=name))
            if not streaming and "partialArgs" not in call:
                args = call.get("args")
                whole = json.dumps(args if isinstance(args, dict) else {}, ensure_ascii=False)
                out.append(ToolArgumentsDelta(index=position, fragment=whole, parsed=True))
                out.append(ToolCallEnd(index=position))
                return out
            self._call = (position, PartialArguments())
        if self._call is None:
            return [*out, Unknown(name="gemini:functionCall:unmatched")]
        if "partialArgs" in call:
            self._call[1].add(call["partialArgs"])
        if not streaming:
            out += self._end_call()
        return out

    def _end_call(self) -> list[StreamEvent]:
        if self._call is None:
            return []
        (position, arguments), self._call = self._call, None
        whole = arguments.json()
        out: list[StreamEvent] = []
        if whole is None:
            # Never an empty string (that would read as "no arguments"): the fragments
            # themselves, marked parsed, which no verdict runs.
            out.append(Unknown(name="gemini:partialArgs:unreadable"))
            whole = arguments.raw()
        out.append(ToolArgumentsDelta(index=position, fragment=whole, parsed=True))
        out.append(ToolCallEnd(index=position))
        return out


_PartHandler = Callable[[GeminiDecoder, dict[str, Any]], list[StreamEvent]]

PART_HANDLERS: Final[dict[str, _PartHandler]] = {
    "text": GeminiDecoder._text,
    "functionCall": GeminiDecoder._function_call,
}


def _usage(usage: dict[str, Any]) -> list[StreamEvent]:
    prompt = as_count(usage.get("promptTokenCount"))
    candidates = as_count(usage.get("candidatesTokenCount"))
    thoughts = as_count(usage.get("thoughtsTokenCount"))
    # maxOutputTokens bounds thinking and answer together: both are the turn's output.
    output = (
        None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    )
    if prompt is None and output is None:
        return []
    return [UsageUpdate(input_tokens=prompt, output_tokens=output)]


def _error_event(error: dict[str, Any]) -> ProviderErrorEvent:
    status = _str(error.get("status")) or None
    return ProviderErrorEvent(
        message=_str(error.get("message")) or "provider error",
        provider_type=status,
        status=as_int(error.get("code")),
    )


def decode_body(
    body: bytes, *, candidate: int = 0, max_size: int = DEFAULT_MAX_EVENT_SIZE
) -> list[StreamEvent]:
    """The events of a whole non-SSE body: ``streamGenerateContent`` without
    ``alt=sse`` (one JSON array of response objects) or ``generateContent`` (one
    object). The closing bracket is the array's own proof of completeness: a body cut
    short is not JSON and raises :class:`~railings.errors.MalformedStream`; then the
    last object's ``finishReason`` is the turn's proof, as for the stream."""
    if len(body) > max_size:
        raise EventTooLarge(f"gemini body of {len(body)} bytes exceeds {max_size}", limit=max_size)
    try:
        value = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise MalformedStream("gemini body: not UTF-8") from None
    except ValueError as exc:
        raise MalformedStream(f"gemini body: not whole JSON ({exc})") from None
    except RecursionError:
        raise MalformedStream("gemini body: nests too deeply to parse") from None
    objects = value if isinstance(value, list) else [value]
    decoder = GeminiDecoder(candidate=candidate)
    out: list[StreamEvent] = []
    for obj in objects:
        if not isinstance(obj, dict):
            raise MalformedStream("gemini body: an element is not an object")
        out += decoder.feed_object(obj)
    return out + decoder.close()


class GeminiStream(HeldStream[ServerSentEvent]):
    """Bytes in, normalized events out: the SSE decoder and :class:`GeminiDecoder`
    (``wire/_held.py``). At EOF an unterminated last event is discarded (WHATWG), then
    ``close()`` returns the proof when the last whole event carried it."""

    __slots__ = ()

    def __init__(self, *, candidate: int = 0, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        super().__init__(
            SSEDecoder(max_event_size=max_event_size), GeminiDecoder(candidate=candidate)
        )
