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
from typing import Any, ClassVar, Protocol

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


def _data(block: bytes) -> Any:
    """The JSON of an SSE block's ``data:`` lines, or None."""
    data = [line[5:].strip() for line in lines(block) if line.startswith(b"data:")]
    if not data:
        return None
    try:
        return json.loads(b"\n".join(data))
    except ValueError:
        return None


class _WireErrors(Protocol):
    """What a native wire's module writes of its errors (``wire_gemini`` ...)."""

    def status_error(self, status: int, message: str | None = None) -> dict[str, Any]: ...

    def error_event(self, kind: str) -> tuple[bytes, str]: ...


class _NativeWire(KitWire):
    """What the native wires share: none sends OpenAI's stream headers or names the wait
    in its 429 text, a UUID stands for the request id none of their bodies carries, and
    their errors (a body, and the in-stream error of a fault's ``type``) are their
    module's, with the key errors' texts as data."""

    stream_headers = ()
    rate_limit_text = None
    errors: _WireErrors
    missing_key_text: ClassVar[str]
    wrong_key_text: ClassVar[str]

    def request_id(self, ids: Ids) -> str:
        """A UUID-shaped id (Bedrock's ``x-amzn-requestid``; Ollama names no request)."""
        return ids.uuid()

    def status_error(
        self, status: int, message: str | None = None, request_id: str | None = None
    ) -> dict[str, Any]:
        """The module's error body for ``status``."""
        return self.errors.status_error(status, message)

    def missing_key(self, request_id: str) -> dict[str, Any]:
        """The error for a request without a key."""
        return self.status_error(self.key_status, self.missing_key_text)

    def wrong_key(self, key: str, request_id: str) -> dict[str, Any]:
        """The error for a request with another key."""
        return self.status_error(self.key_status, self.wrong_key_text)

    def error_event(
        self, kind: str, ids: Ids, created: Mapping[str, Any], sequence: int
    ) -> tuple[bytes, str]:
        """The module's in-stream error for ``kind``, and how to name it."""
        return self.errors.error_event(kind)

    def stop_reason(self, plan: Plan) -> str:
        """The plan's stop reason as this wire spells it (the inverse of the spec's map)."""
        return stop_reason_on(self.spec, plan.stop_reason) or plan.stop_reason


class GeminiWire(_NativeWire):
    """Gemini ``generateContent`` / ``streamGenerateContent``: Google's error JSON, the
    ``x-goog-api-key`` key, the proof a candidate's final ``finishReason``."""

    spec = gemini.SPEC
    errors = wg
    invalid_json = "Invalid JSON payload received."
    missing_key_text = "Method doesn't allow unregistered callers. Please use API Key."
    wrong_key_text = "API key not valid. Please pass a valid API key."
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

    def not_found(self, method: str, path: str) -> str:
        """Google's 404 text."""
        return f"The requested URL {path.partition('?')[0]} was not found on this server."

    def key(self, headers: Headers) -> str | None:
        """``x-goog-api-key`` (what google-genai sends), else a Bearer token."""
        return headers.get("x-goog-api-key") or bearer(headers)

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
            "finish_reason": self.stop_reason(plan),
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


class BedrockWire(_NativeWire):
    """Bedrock ``converse`` / ``converse-stream``: AWS errors with ``x-amzn-errortype``,
    event-stream frames, the proof the ``messageStop`` frame."""

    spec = bedrock.SPEC
    errors = wb
    invalid_json = "Malformed input request, please reformat your input."
    stream_content_type = EVENTSTREAM
    missing_key_text = "Missing Authentication Token"  # 403: AccessDeniedException
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

    def error_headers(self, status: int, body: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        """``x-amzn-errortype``: what botocore reads the error code from."""
        name = body.get("__type") if isinstance(body, Mapping) else None
        return (("x-amzn-errortype", str(name or wb.error_type(status))),)

    def key(self, headers: Headers) -> str | None:
        """A Bedrock API key (Bearer), else the access key id a SigV4 signature names."""
        return bearer(headers) or _access_key(headers)

    def wrong_key(self, key: str, request_id: str) -> dict[str, Any]:
        """The error for a request with other credentials (a type of its own)."""
        return {
            "message": "The security token included in the request is invalid.",
            "__type": "UnrecognizedClientException",
        }

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
        stop, signature = self.stop_reason(plan), at.ids.signature()
        if not ask.stream:
            return wb.message(plan, ask, stop_reason=stop, signature=signature)
        return wb.events(plan, ask, stop_reason=stop, chunk_size=at.chunk_size, signature=signature)


class OllamaWire(_NativeWire):
    """Ollama ``/api/chat`` and ``/api/generate``: ``{"error": ...}``, NDJSON lines, the
    proof ``done: true``."""

    spec = ollama.SPEC
    errors = wl
    invalid_json = "invalid character in request body"
    stream_content_type = NDJSON
    # An Ollama behind an authenticating proxy: 401 without a key, or with another.
    missing_key_text = wrong_key_text = "unauthorized"
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
        stop = self.stop_reason(plan)
        final, events = (
            (wl.generate_final, wl.generate_events) if ask.generate else (wl.final, wl.events)
        )
        if not ask.stream:
            return final(plan, ask, done_reason=stop, model=at.model, whole=True)
        return events(plan, ask, done_reason=stop, model=at.model, chunk_size=at.chunk_size)
