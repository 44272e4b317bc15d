"""The test kit's side of Gemini, Bedrock Converse and Ollama (a
:class:`~railings.testing.kitwire.KitWire` each).

Each answers its own paths (the model is part of Gemini's and Bedrock's), keys, error
shapes and stream framing: Gemini SSE chunks whose last candidate carries the
``finishReason``, Bedrock event-stream frames ending in ``messageStop`` and
``metadata``, Ollama NDJSON lines ending in ``done: true``. The stop reasons are
the inverse of each spec's map (``railings.providers.stop_reason_on``), never a copy.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from railings.errors import RailingsError
from railings.providers import ScriptedShape, bedrock, gemini, ollama, stop_reason_on
from railings.testing import wire_bedrock as wb
from railings.testing import wire_gemini as wg
from railings.testing import wire_ollama as wl
from railings.testing.http import Headers
from railings.testing.ids import Ids
from railings.testing.kitwire import Answer, KitWire, bearer
from railings.testing.plan import Plan, plan_turn
from railings.testing.script import Script, ScriptTurn
from railings.wire.blocks import lines
from railings.wire.eventstream import CONTENT_TYPE as EVENTSTREAM
from railings.wire.eventstream import EventStreamDecoder

__all__ = ["BedrockWire", "GeminiWire", "OllamaWire"]

NDJSON = "application/x-ndjson"


def _stop(wire: KitWire, plan: Plan) -> str:
    return stop_reason_on(wire.spec, plan.stop_reason) or plan.stop_reason


def _data(block: bytes) -> Any:
    """The JSON of an SSE block's ``data:`` lines, or None."""
    data = [line[5:].strip() for line in lines(block) if line.startswith(b"data:")]
    if not data:
        return None
    try:
        return json.loads(b"\n".join(data))
    except ValueError:
        return None


class GeminiWire(KitWire):
    """Gemini ``generateContent`` / ``streamGenerateContent``: Google's error JSON, the
    ``x-goog-api-key`` key, the proof a candidate's final ``finishReason``."""

    spec = gemini.SPEC
    invalid_json = "Invalid JSON payload received."
    stream_headers = ()
    rate_limit_text = None  # Gemini's 429 text does not name the wait
    whole_calls = True
    # The first chunk already carries content; each call is one chunk.
    scripted = ScriptedShape(lead=0, seams=1)

    def answers(self, path: str) -> bool:
        """``.../models/{model}:generateContent`` and ``:streamGenerateContent``."""
        found = wg.model_and_method(path)
        return found is not None and found[1] in ("generateContent", "streamGenerateContent")

    def claims(self, path: str) -> bool:
        """Any other ``.../models/{model}:{method}``."""
        return wg.model_and_method(path) is not None

    def request_id(self, ids: Ids) -> str:
        """A UUID-shaped id."""
        return ids.uuid()

    def status_error(
        self, status: int, message: str | None = None, request_id: str | None = None
    ) -> dict[str, Any]:
        """``{"error": {"code", "message", "status"}}``."""
        return wg.status_error(status, message)

    def not_found(self, method: str, path: str) -> str:
        """Google's 404 text."""
        return f"The requested URL {path.partition('?')[0]} was not found on this server."

    def key(self, headers: Headers) -> str | None:
        """``x-goog-api-key`` (what google-genai sends), else a Bearer token."""
        return headers.get("x-goog-api-key") or bearer(headers)

    def missing_key(self, request_id: str) -> dict[str, Any]:
        """The error for a request without a key."""
        return wg.status_error(
            401, "Method doesn't allow unregistered callers. Please use API Key."
        )

    def wrong_key(self, key: str, request_id: str) -> dict[str, Any]:
        """The error for a request with another key."""
        return wg.status_error(401, "API key not valid. Please pass a valid API key.")

    def error_event(
        self, kind: str, ids: Ids, created: Mapping[str, Any], sequence: int
    ) -> tuple[bytes, str]:
        """A ``data:`` line holding Google's error JSON."""
        return wg.error_event(kind)

    def is_proof(self, block: bytes) -> bool:
        """A chunk whose candidate carries a terminal ``finishReason``, or a refused
        prompt's ``promptFeedback.blockReason``."""
        if b"finishReason" not in block and b"blockReason" not in block:
            return False
        obj = _data(block)
        if not isinstance(obj, Mapping):
            return False
        feedback = obj.get("promptFeedback")
        if isinstance(feedback, Mapping) and feedback.get("blockReason"):
            return True
        candidates = obj.get("candidates")
        return isinstance(candidates, list) and any(
            isinstance(c, Mapping)
            and c.get("finishReason") not in (None, "FINISH_REASON_UNSPECIFIED")
            for c in candidates
        )

    def parse_ask(self, body: Any, reasoned: Mapping[str, str], path: str) -> Any:
        """The request reduced to what the server needs, or the 400 message."""
        return wg.parse_ask(body, path)

    def turn_index(self, ask: Any, script: Script) -> int:
        """Which turn answers: the ``model`` turns the request's ``contents`` holds."""
        return int(ask.turns)

    def answer(
        self, ask: Any, turn: ScriptTurn, at: Answer
    ) -> dict[str, Any] | list[Any] | Iterator[bytes]:
        """The response, the events of its stream, or (no ``alt=sse``) their array."""
        plan = plan_turn(turn, ask.max_tokens, at.ids.uuid)
        options = {
            "finish_reason": _stop(self, plan),
            "response_id": at.ids.gemini_response(),
            "model": at.model,
            "signature": at.ids.signature(),
        }
        if not ask.stream:
            return wg.response(plan, ask, **options)
        if not ask.sse:
            return list(wg.chunks(plan, ask, chunk_size=at.chunk_size, **options))
        return wg.events(plan, ask, chunk_size=at.chunk_size, **options)


def _access_key(headers: Headers) -> str | None:
    """The access key id of a SigV4 ``Authorization`` header."""
    value = headers.get("authorization") or ""
    _, found, rest = value.partition("Credential=")
    return rest.partition("/")[0] or None if found else None


class BedrockWire(KitWire):
    """Bedrock ``converse`` / ``converse-stream``: AWS errors with ``x-amzn-errortype``,
    event-stream frames, the proof the ``messageStop`` frame."""

    spec = bedrock.SPEC
    invalid_json = "Malformed input request, please reformat your input."
    stream_headers = ()
    stream_content_type = EVENTSTREAM
    rate_limit_text = None  # Bedrock's 429 text does not name the wait
    not_found_text = "The requested operation is not recognized by the service."
    key_status = 403
    # messageStart, then the deltas (a text block has no contentBlockStart, as in
    # tests/corpus/bedrock/text_end_turn.bin); a block's stop and the next block's start.
    scripted = ScriptedShape(lead=1, seams=2)

    def answers(self, path: str) -> bool:
        """``/model/{modelId}/converse`` and ``/converse-stream``."""
        return wb.model_and_action(path) is not None

    def claims(self, path: str) -> bool:
        """Any other ``/model/{modelId}/...`` operation."""
        return path.startswith("/model/")

    def request_id(self, ids: Ids) -> str:
        """A UUID (``x-amzn-requestid``)."""
        return ids.uuid()

    def status_error(
        self, status: int, message: str | None = None, request_id: str | None = None
    ) -> dict[str, Any]:
        """``{"message": ...}`` (with ``__type``, the AWS JSON protocol's)."""
        return wb.status_error(status, message)

    def error_headers(self, status: int, body: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        """``x-amzn-errortype``: what botocore reads the error code from."""
        name = body.get("__type") if isinstance(body, Mapping) else None
        return (("x-amzn-errortype", str(name or wb.error_type(status))),)

    def key(self, headers: Headers) -> str | None:
        """A Bedrock API key (Bearer), else the access key id a SigV4 signature names."""
        return bearer(headers) or _access_key(headers)

    def missing_key(self, request_id: str) -> dict[str, Any]:
        """The error for a request without credentials."""
        return {"message": "Missing Authentication Token", "__type": "AccessDeniedException"}

    def wrong_key(self, key: str, request_id: str) -> dict[str, Any]:
        """The error for a request with other credentials."""
        return {
            "message": "The security token included in the request is invalid.",
            "__type": "UnrecognizedClientException",
        }

    def error_event(
        self, kind: str, ids: Ids, created: Mapping[str, Any], sequence: int
    ) -> tuple[bytes, str]:
        """An exception frame (``serviceUnavailableException`` ...)."""
        return wb.error_event(kind)

    def is_proof(self, block: bytes) -> bool:
        """The ``messageStop`` event frame."""
        with contextlib.suppress(RailingsError):
            for message in EventStreamDecoder().feed(block):
                return message.text_header(":event-type") == "messageStop"
        return False

    def parse_ask(self, body: Any, reasoned: Mapping[str, str], path: str) -> Any:
        """The request reduced to what the server needs, or the 400 message."""
        return wb.parse_ask(body, path)

    def answer(self, ask: Any, turn: ScriptTurn, at: Answer) -> dict[str, Any] | Iterator[bytes]:
        """The ``/converse`` message, or the frames of ``/converse-stream``."""
        plan = plan_turn(turn, ask.max_tokens, at.ids.bedrock_tool)
        stop, signature = _stop(self, plan), at.ids.signature()
        if not ask.stream:
            return wb.message(plan, ask, stop_reason=stop, signature=signature)
        return wb.events(plan, ask, stop_reason=stop, chunk_size=at.chunk_size, signature=signature)


class OllamaWire(KitWire):
    """Ollama ``/api/chat`` and ``/api/generate``: ``{"error": ...}``, NDJSON lines, the
    proof ``done: true``."""

    spec = ollama.SPEC
    invalid_json = "invalid character in request body"
    stream_headers = ()
    stream_content_type = NDJSON
    rate_limit_text = None  # Ollama's 429 text does not name the wait
    not_found_text = "404 page not found"  # Go's mux
    whole_calls = True
    # The first line already carries content; the calls come in one line.
    scripted = ScriptedShape(lead=0, seams=1)

    def answers(self, path: str) -> bool:
        """``/api/chat`` and ``/api/generate``."""
        return path in (self.spec.request_path, wl.GENERATE)

    def claims(self, path: str) -> bool:
        """Any other ``/api/...`` endpoint."""
        return path.startswith("/api/")

    def request_id(self, ids: Ids) -> str:
        """Ollama names no request; an id keeps the log readable."""
        return ids.uuid()

    def status_error(
        self, status: int, message: str | None = None, request_id: str | None = None
    ) -> dict[str, Any]:
        """``{"error": "..."}``."""
        return wl.status_error(status, message)

    def missing_key(self, request_id: str) -> dict[str, Any]:
        """An Ollama behind an authenticating proxy: 401 without a key."""
        return wl.status_error(401, "unauthorized")

    def wrong_key(self, key: str, request_id: str) -> dict[str, Any]:
        """401 with another key."""
        return wl.status_error(401, "unauthorized")

    def error_event(
        self, kind: str, ids: Ids, created: Mapping[str, Any], sequence: int
    ) -> tuple[bytes, str]:
        """An ``{"error": ...}`` line."""
        return wl.error_event(kind)

    def is_proof(self, block: bytes) -> bool:
        """The line with ``done: true``."""
        if b'"done"' not in block:
            return False
        try:
            obj = json.loads(block)
        except ValueError:
            return False
        return isinstance(obj, Mapping) and obj.get("done") is True

    def parse_ask(self, body: Any, reasoned: Mapping[str, str], path: str) -> Any:
        """The request reduced to what the server needs, or the 400 message."""
        if path.partition("?")[0] == wl.GENERATE:
            return wl.parse_generate(body)
        return wl.parse_ask(body)

    def answer(self, ask: Any, turn: ScriptTurn, at: Answer) -> dict[str, Any] | Iterator[bytes]:
        """The ``done`` object whole, or the lines of the stream (a generate request with
        an empty prompt: its one lifecycle object)."""
        if ask.lifecycle is not None:
            return wl.lifecycle(ask, model=at.model)
        plan = plan_turn(turn, ask.max_tokens, at.ids.ollama_call)
        stop = _stop(self, plan)
        final, events = (
            (wl.generate_final, wl.generate_events) if ask.generate else (wl.final, wl.events)
        )
        if not ask.stream:
            return final(plan, ask, done_reason=stop, model=at.model, whole=True)
        return events(plan, ask, done_reason=stop, model=at.model, chunk_size=at.chunk_size)
