"""The test kit's side of a wire, as a base class: :class:`KitWire` (OpenAI's shapes,
which both OpenAI formats share) and :class:`Answer`, what a response is rendered
with. The other wires subclass it (:mod:`railings.testing.wires` lists them all).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from railings.providers import ProviderSpec, ScriptedShape, openai_chat
from railings.testing import wire_openai as wo
from railings.testing.blocks import is_terminator
from railings.testing.http import Headers
from railings.testing.ids import Ids
from railings.testing.plan import plan_turn
from railings.testing.script import Script, ScriptTurn

__all__ = ["SSE_CONTENT_TYPE", "Answer", "KitWire", "bearer"]

SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"


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


def bearer(headers: Headers) -> str | None:
    """The token of an ``Authorization: Bearer`` header, or None."""
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

    # Calls go out whole (parsed), so a call the output limit cut is never sent.
    whole_calls = False

    @property
    def scripted(self) -> ScriptedShape:
        """How the scripted server shapes this wire's stream (the fault matrix aims by it)."""
        return self.spec.scripted

    # The status of an answer to a request without the script's key.
    key_status = 401
    # The content type of a streamed answer.
    stream_content_type = SSE_CONTENT_TYPE
    # A 429's text naming its wait (``{wait}``); None: the status's own text.
    rate_limit_text: str | None = "Rate limit reached for requests. Please try again in {wait}."
    # A 404's text for an unknown path (``{method}``, ``{path}``).
    not_found_text = "Invalid URL ({method} {path})"

    def answers(self, path: str) -> bool:
        """True when the scripted server answers ``path`` in this wire."""
        return path in self.paths

    def claims(self, path: str) -> bool:
        """True when ``path``, though not answered, is plainly of this API (a 404 of
        another Gemini method, say), so its error comes in this wire's shape."""
        return False

    def error_headers(self, status: int, body: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        """Headers an error response carries besides the request id (Bedrock's error type)."""
        return ()

    def is_proof(self, block: bytes) -> bool:
        """True when one event of this wire's stream (an SSE block here) is its
        termination proof: what the fault proxy's ``drop_terminator`` drops."""
        return is_terminator(block)

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths the scripted server answers: the request path, and with the base
        URL's own path before it (``/v1/chat/completions``)."""
        base = self.spec.base_path
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
        return None if self.rate_limit_text is None else self.rate_limit_text.format(wait=wait)

    def not_found(self, method: str, path: str) -> str:
        """The message of a 404 for an unknown path."""
        return self.not_found_text.format(method=method, path=path)

    def missing_header(self, headers: Headers) -> str | None:
        """A header this provider requires that the request lacks, as its 400 says it."""
        return None

    def key(self, headers: Headers) -> str | None:
        """The API key the request carries."""
        return bearer(headers)

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

    def parse_ask(self, body: Any, reasoned: Mapping[str, str], path: str) -> Any:
        """The request reduced to what the server needs (an object with ``model``,
        ``stream`` and ``max_tokens``), or the 400 message; ``path`` is the request's."""
        return wo.parse_ask(body)

    def admit(self, ask: Any, script: Script) -> Any:
        """The request as this script's model takes it, or the 400 message of one it
        refuses."""
        return ask

    def turn_index(self, ask: Any, script: Script) -> int:
        """Which turn answers: the assistant turns the request's conversation holds."""
        return script.turn_index(ask.messages)

    def answer(
        self, ask: Any, turn: ScriptTurn, at: Answer
    ) -> dict[str, Any] | list[Any] | Iterator[bytes]:
        """The response to ``ask``: a JSON body, or the events of a stream."""
        plan = plan_turn(turn, ask.max_tokens, at.ids.openai_call)
        options: dict[str, Any] = {
            "completion_id": at.ids.chat_completion(),
            "created": int(time.time()),
            "model": at.model,
        }
        if not ask.stream:
            return wo.completion(plan, ask, **options)
        return wo.chunks(plan, ask, chunk_size=at.chunk_size, **options)
