"""Each wire format as the test kit speaks it: the server side of a provider spec.

The scripted server and the fault proxy answer in each provider's own shapes:
request ids, error bodies and events, the key check, the headers of a stream,
and (for the server) the request it parses and the response it renders from a
:class:`~railings.testing.plan.Plan`. One :class:`KitWire` per
:class:`~railings.providers.ProviderSpec` holds them; :func:`kit_wire` finds it
by spec, :func:`wire_for_request` by a request's path and headers. The shapes
themselves live in ``wire_openai``, ``wire_anthropic``, ``wire_responses``,
``wire_gemini``, ``wire_bedrock`` and ``wire_ollama``; the base class in
:mod:`~railings.testing.kitwire`, the three native wires in
:mod:`~railings.testing.wires_native`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Mapping
from typing import Any

from railings.providers import (
    FALLBACK,
    SPECS,
    ProviderSpec,
    anthropic,
    openai_responses,
    spec_for_path,
)
from railings.testing import wire_anthropic as wa
from railings.testing import wire_responses as wr
from railings.testing.background import route
from railings.testing.http import Headers
from railings.testing.ids import Ids
from railings.testing.kitwire import Answer, KitWire, bearer
from railings.testing.plan import plan_turn
from railings.testing.script import Script, ScriptTurn
from railings.testing.wires_native import BedrockWire, GeminiWire, OllamaWire

__all__ = ["WIRES", "Answer", "KitWire", "kit_wire", "wire_for_path", "wire_for_request"]


class ResponsesWire(KitWire):
    """The Responses API: OpenAI's errors, its own requests, items and events."""

    spec = openai_responses.SPEC

    def claims(self, path: str) -> bool:
        """A kept response's path (``/v1/responses/{id}``, its ``/cancel``)."""
        return route(path) is not None

    def error_event(
        self, kind: str, ids: Ids, created: Mapping[str, Any], sequence: int
    ) -> tuple[bytes, str]:
        """``response.failed`` of the stream's own response (the SDK's stream helper
        checks the id), or an ``error`` event."""
        if kind == "response.failed":
            return wr.failed_event(created, sequence), kind
        return wr.error_event(sequence), "an error event (server_error)"

    def parse_ask(self, body: Any, reasoned: Mapping[str, str], path: str) -> Any:
        """The request reduced to what the server needs, or the 400 message."""
        return wr.parse_ask(body, reasoned)

    def turn_index(self, ask: Any, script: Script) -> int:
        """Which turn answers: the runs of assistant items the ``input`` holds."""
        return int(ask.turns)

    def answer(self, ask: Any, turn: ScriptTurn, at: Answer) -> dict[str, Any] | Iterator[bytes]:
        """The response object, or the events of its stream."""
        plan = plan_turn(turn, ask.max_tokens, at.ids.openai_call)
        options: dict[str, Any] = {
            "response_id": at.ids.response(),
            "created": int(time.time()),
            "model": at.model,
            "new_item_id": at.new_item_ids(),
        }
        if not ask.stream:
            return wr.response(plan, ask, **options)
        return wr.events(plan, ask, chunk_size=at.chunk_size, **options)


# Anthropic's own words for the in-stream errors the fault proxy injects.
_ERROR_MESSAGES = {
    "overloaded_error": "Overloaded",
    "api_error": "Internal server error",
    "rate_limit_error": "Rate limited",
}


class MessagesWire(KitWire):
    """Anthropic Messages: its own errors, request ids, key header and version header."""

    spec = anthropic.SPEC
    invalid_json = "Invalid JSON body"
    stream_headers = ()
    rate_limit_text = None  # Anthropic's 429 text does not name the wait
    not_found_text = "Not Found"

    def request_id(self, ids: Ids) -> str:
        """A fresh ``req_...`` id."""
        return ids.anthropic_request()

    def status_error(
        self, status: int, message: str | None = None, request_id: str | None = None
    ) -> dict[str, Any]:
        """The error body Anthropic sends with ``status``, with its request id."""
        return wa.status_error(status, message, request_id)

    def missing_header(self, headers: Headers) -> str | None:
        """The version header every request needs."""
        version = self.spec.version_header
        if version is not None and version[0] not in headers:
            return f"{version[0]}: header is required"
        return None

    def key(self, headers: Headers) -> str | None:
        """``x-api-key``, else a Bearer token."""
        return headers.get(self.spec.auth_header) or bearer(headers)

    def missing_key(self, request_id: str) -> dict[str, Any]:
        """The 401 body for a request without a key."""
        return self.status_error(401, "x-api-key header is required", request_id)

    def wrong_key(self, key: str, request_id: str) -> dict[str, Any]:
        """The 401 body for a request with a key other than the script's."""
        return self.status_error(401, "invalid x-api-key", request_id)

    def error_event(
        self, kind: str, ids: Ids, created: Mapping[str, Any], sequence: int
    ) -> tuple[bytes, str]:
        """A mid-stream ``event: error`` of ``kind`` with its request id."""
        message = _ERROR_MESSAGES.get(kind, "Overloaded")
        return wa.error_event(kind, message, ids.anthropic_request()), kind

    def parse_ask(self, body: Any, reasoned: Mapping[str, str], path: str) -> Any:
        """The request reduced to what the server needs, or the 400 message."""
        return wa.parse_ask(body)

    def admit(self, ask: Any, script: Script) -> Any:
        """A prefill to a model that refuses one (``"prefill": false``), or one that ends
        in whitespace, is the API's 400 message (the refusal first). A paused turn sent
        back whole (its script turn stops with ``pause_turn``) is no prefill: the API
        continues a paused turn, and the script's next turn is that continuation."""
        if ask.prefill is None:
            return ask
        paused = script.select(script.turn_index(ask.messages) - 1)
        if (
            paused is not None
            and paused.stop_reason == "pause_turn"
            and (ask.prefill == paused.text)
        ):
            return dataclasses.replace(ask, prefill=None)
        if not script.prefill:
            return wa.NO_PREFILL
        if ask.prefill != ask.prefill.rstrip():
            return wa.TRAILING_WHITESPACE
        return ask

    def turn_index(self, ask: Any, script: Script) -> int:
        """The assistant messages the conversation holds, a prefill not counted: the
        turn it starts is the one that answers."""
        counted = script.turn_index(ask.messages)
        return counted - 1 if ask.prefill is not None else counted

    def answer(self, ask: Any, turn: ScriptTurn, at: Answer) -> dict[str, Any] | Iterator[bytes]:
        """The message, or the events of its stream (thinking signed). After a prefill
        the turn's text that repeats it is not sent: the model continues from it."""
        if ask.prefill and turn.text.startswith(ask.prefill):
            turn = dataclasses.replace(turn, text=turn.text[len(ask.prefill) :])
        plan = plan_turn(turn, ask.max_tokens, at.ids.anthropic_tool)
        options = {
            "message_id": at.ids.message(),
            "model": at.model,
            "signature": at.ids.signature(),
        }
        if not ask.stream:
            return wa.message(plan, ask, **options)
        return wa.events(plan, ask, chunk_size=at.chunk_size, ping=at.ping, **options)


# One per provider spec (tests/test_providers.py checks that none is missing).
WIRES: tuple[KitWire, ...] = (
    KitWire(),
    MessagesWire(),
    ResponsesWire(),
    GeminiWire(),
    BedrockWire(),
    OllamaWire(),
)


def kit_wire(spec: ProviderSpec) -> KitWire:
    """The test kit's side of ``spec``."""
    for wire in WIRES:
        if wire.spec is spec:
            return wire
    raise LookupError(f"the test kit does not speak {spec.name}")  # a spec without its wire


def wire_for_path(path: str) -> KitWire:
    """The wire a proxied request speaks: the guard's rule (the spec whose request path
    ``path`` ends with), else a wire whose server paths include it (Gemini's
    ``:generateContent``, Bedrock's ``/converse``), else the Responses API for a kept
    response's path (a background stream resumed by ``GET /v1/responses/{id}``), else
    Chat Completions. ``path`` is without its query string."""
    found = spec_for_path(path)
    if found is not None:
        return kit_wire(found)
    for wire in WIRES:
        if wire.answers(path):
            return wire
    responses = kit_wire(openai_responses.SPEC)
    if responses.claims(path):
        return responses
    return kit_wire(FALLBACK)


def wire_for_request(path: str, headers: Headers) -> tuple[KitWire, bool]:
    """The wire a request to the scripted server speaks, and whether its path is one the
    server answers. Any other path is answered in the shape its headers suggest: a
    version header or a non-Bearer key header names the provider, else Chat Completions."""
    for wire in WIRES:
        if wire.answers(path):
            return wire, True
    for wire in WIRES:
        if wire.claims(path):
            return wire, False
    for spec in SPECS:
        version = spec.version_header
        if (version is not None and version[0] in headers) or (
            spec.auth_header != "authorization" and spec.auth_header in headers
        ):
            return kit_wire(spec), False
    return kit_wire(FALLBACK), False
