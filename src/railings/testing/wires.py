"""Each wire format as the test kit speaks it: the server side of a provider spec.

The scripted server and the fault proxy answer in each provider's own shapes:
request ids, error bodies and events, the key check, the headers of a stream,
and (for the server) the request it parses and the response it renders from a
:class:`~railings.testing.plan.Plan`. One :class:`KitWire` per
:class:`~railings.providers.ProviderSpec` holds them; :func:`kit_wire` finds it
by spec, :func:`wire_for_request` by a request's path and headers. The shapes
themselves live in ``wire_openai``, ``wire_anthropic`` and ``wire_responses``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from railings.providers import (
    FALLBACK,
    SPECS,
    ProviderSpec,
    anthropic,
    openai_chat,
    openai_responses,
)
from railings.testing import wire_anthropic as wa
from railings.testing import wire_openai as wo
from railings.testing import wire_responses as wr
from railings.testing.http import Headers
from railings.testing.ids import Ids
from railings.testing.plan import plan_turn
from railings.testing.script import Script, ScriptTurn

__all__ = ["WIRES", "Answer", "KitWire", "kit_wire", "wire_for_request"]

Ask = wo.OpenAIAsk | wa.AnthropicAsk | wr.ResponsesAsk


@dataclass(frozen=True, slots=True)
class Answer:
    """What the server knows when it renders one response: its ids, the model name to
    report, the characters per delta, Anthropic's ping, and a factory of item ids for
    one Responses response (``new_item_ids()`` gives one response's ``new_item_id``)."""

    ids: Ids
    model: str
    chunk_size: int
    ping: bool
    new_item_ids: Callable[[], Callable[[str], str]]


def _bearer(headers: Headers) -> str | None:
    value = headers.get("authorization") or ""
    scheme, _, token = value.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


class KitWire:
    """OpenAI's side of a wire (both OpenAI formats share its errors, ids and headers);
    :class:`MessagesWire` is Anthropic's."""

    spec: ProviderSpec = openai_chat.SPEC
    invalid_json = "We could not parse the JSON body of your request."
    # Headers of a streamed answer, besides the content type and the request id.
    stream_headers: tuple[tuple[str, str], ...] = (
        ("openai-version", "2020-10-01"),
        ("openai-processing-ms", "1"),
    )

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths the scripted server answers: the request path, and with the base
        URL's own path before it (``/v1/chat/completions``)."""
        base = urlsplit(self.spec.default_base_url).path.rstrip("/")
        request = self.spec.request_path
        return (base + request, request) if base else (request,)

    def request_id(self, ids: Ids) -> str:
        """A fresh request id, as this provider spells them."""
        return ids.openai_request()

    def status_error(
        self, status: int, message: str | None = None, request_id: str | None = None
    ) -> dict[str, Any]:
        """The error body this provider sends with ``status``."""
        return wo.status_error(status, message)

    def rate_limit_message(self, wait: str) -> str | None:
        """The text of a 429 that names its wait (None: the default text)."""
        return f"Rate limit reached for requests. Please try again in {wait}."

    def not_found(self, method: str, path: str) -> str:
        """The message of a 404 for an unknown path."""
        return f"Invalid URL ({method} {path})"

    def missing_header(self, headers: Headers) -> str | None:
        """A header this provider requires that the request lacks, as its 400 says it."""
        return None

    def key(self, headers: Headers) -> str | None:
        """The API key the request carries."""
        return _bearer(headers)

    def missing_key(self, request_id: str) -> dict[str, Any]:
        """The 401 body for a request without a key."""
        return wo.error_body(
            "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer "
            "YOUR_KEY), or as the password field (with blank username) if you're "
            "accessing the API from your browser and are prompted for a username "
            "and password. You can obtain an API key from "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
        )

    def wrong_key(self, key: str, request_id: str) -> dict[str, Any]:
        """The 401 body for a request with a key other than the script's."""
        shown = f"{key[:3]}*****{key[-4:]}" if len(key) > 8 else "*****"
        return wo.error_body(
            f"Incorrect API key provided: {shown}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        )

    def error_event(
        self, kind: str, ids: Ids, created: Mapping[str, Any], sequence: int
    ) -> tuple[bytes, str]:
        """An in-stream error of ``kind`` (the fault's ``type``) and how to name it;
        ``created`` and ``sequence`` are the stream's own (numbered wires need them)."""
        return wo.error_event(), kind

    def parse_ask(self, body: Any, reasoned: Mapping[str, str]) -> Ask | str:
        """The request reduced to what the server needs, or the 400 message."""
        return wo.parse_ask(body)

    def turn_index(self, ask: Any, script: Script) -> int:
        """Which turn answers: the assistant turns the request's conversation holds."""
        return script.turn_index(ask.messages)

    def answer(self, ask: Any, turn: ScriptTurn, at: Answer) -> dict[str, Any] | Iterator[bytes]:
        """The response to ``ask``: a JSON body, or the events of a stream."""
        plan = plan_turn(turn, ask.max_tokens, at.ids.openai_call)
        completion_id, created = at.ids.chat_completion(), int(time.time())
        if not ask.stream:
            return wo.completion(
                plan, ask, completion_id=completion_id, created=created, model=at.model
            )
        return wo.chunks(
            plan,
            ask,
            completion_id=completion_id,
            created=created,
            model=at.model,
            chunk_size=at.chunk_size,
        )


class ResponsesWire(KitWire):
    """The Responses API: OpenAI's errors, its own requests, items and events."""

    spec = openai_responses.SPEC

    def error_event(
        self, kind: str, ids: Ids, created: Mapping[str, Any], sequence: int
    ) -> tuple[bytes, str]:
        """``response.failed`` of the stream's own response (the SDK's stream helper
        checks the id), or an ``error`` event."""
        if kind == "response.failed":
            return wr.failed_event(created, sequence), kind
        return wr.error_event(sequence), "an error event (server_error)"

    def parse_ask(self, body: Any, reasoned: Mapping[str, str]) -> Ask | str:
        """The request reduced to what the server needs, or the 400 message."""
        return wr.parse_ask(body, reasoned)

    def turn_index(self, ask: Any, script: Script) -> int:
        """Which turn answers: the runs of assistant items the ``input`` holds."""
        return int(ask.turns)

    def answer(self, ask: Any, turn: ScriptTurn, at: Answer) -> dict[str, Any] | Iterator[bytes]:
        """The response object, or the events of its stream."""
        plan = plan_turn(turn, ask.max_tokens, at.ids.openai_call)
        response_id, created = at.ids.response(), int(time.time())
        new_item_id = at.new_item_ids()
        if not ask.stream:
            return wr.response(
                plan,
                ask,
                response_id=response_id,
                created=created,
                model=at.model,
                new_item_id=new_item_id,
            )
        return wr.events(
            plan,
            ask,
            response_id=response_id,
            created=created,
            model=at.model,
            chunk_size=at.chunk_size,
            new_item_id=new_item_id,
        )


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

    def request_id(self, ids: Ids) -> str:
        """A fresh ``req_...`` id."""
        return ids.anthropic_request()

    def status_error(
        self, status: int, message: str | None = None, request_id: str | None = None
    ) -> dict[str, Any]:
        """The error body Anthropic sends with ``status``, with its request id."""
        return wa.status_error(status, message, request_id)

    def rate_limit_message(self, wait: str) -> str | None:
        """Anthropic's 429 text does not name the wait."""
        return None

    def not_found(self, method: str, path: str) -> str:
        """Anthropic's 404 message."""
        return "Not Found"

    def missing_header(self, headers: Headers) -> str | None:
        """The version header every request needs."""
        version = self.spec.version_header
        if version is not None and version[0] not in headers:
            return f"{version[0]}: header is required"
        return None

    def key(self, headers: Headers) -> str | None:
        """``x-api-key``, else a Bearer token."""
        return headers.get(self.spec.auth_header) or _bearer(headers)

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

    def parse_ask(self, body: Any, reasoned: Mapping[str, str]) -> Ask | str:
        """The request reduced to what the server needs, or the 400 message."""
        return wa.parse_ask(body)

    def answer(self, ask: Any, turn: ScriptTurn, at: Answer) -> dict[str, Any] | Iterator[bytes]:
        """The message, or the events of its stream (thinking signed)."""
        plan = plan_turn(turn, ask.max_tokens, at.ids.anthropic_tool)
        message_id, signature = at.ids.message(), at.ids.signature()
        if not ask.stream:
            return wa.message(plan, ask, message_id=message_id, model=at.model, signature=signature)
        return wa.events(
            plan,
            ask,
            message_id=message_id,
            model=at.model,
            chunk_size=at.chunk_size,
            signature=signature,
            ping=at.ping,
        )


# One per provider spec (tests/test_providers.py checks that none is missing).
WIRES: tuple[KitWire, ...] = (KitWire(), MessagesWire(), ResponsesWire())


def kit_wire(spec: ProviderSpec) -> KitWire:
    """The test kit's side of ``spec``."""
    for wire in WIRES:
        if wire.spec is spec:
            return wire
    raise LookupError(f"the test kit does not speak {spec.name}")  # a spec without its wire


def wire_for_request(path: str, headers: Headers) -> tuple[KitWire, bool]:
    """The wire a request to the scripted server speaks, and whether its path is one the
    server answers. Any other path is answered in the shape its headers suggest: a
    version header or a non-Bearer key header names the provider, else Chat Completions."""
    for wire in WIRES:
        if path in wire.paths:
            return wire, True
    for spec in SPECS:
        version = spec.version_header
        if (version is not None and version[0] in headers) or (
            spec.auth_header != "authorization" and spec.auth_header in headers
        ):
            return kit_wire(spec), False
    return kit_wire(FALLBACK), False
