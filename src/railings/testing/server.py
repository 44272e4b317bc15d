"""The scripted model server: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages
on loopback.

::

    with ScriptedServer(Script.text("Hello!")) as server:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="x")
        client.responses.create(model="m", input="Hi", stream=True)   # the Responses API
        client_a = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="x")

Endpoints: ``POST /v1/chat/completions`` (also ``/chat/completions``),
``POST /v1/responses`` (also ``/responses``) and ``POST /v1/messages``, streamed
(``"stream": true``) or not. What the model says comes from a
:class:`~railings.testing.script.Script`; the wire shapes from
:mod:`~railings.testing.wire_openai`, :mod:`~railings.testing.wire_responses`
and :mod:`~railings.testing.wire_anthropic`. The server is stateless: a
Responses request must carry the whole conversation in ``input`` (``store``
is echoed but nothing is stored; a ``previous_response_id`` is answered 400),
and which turn answers it is counted from its ``input`` items (see
:mod:`~railings.testing.script`). Errors come in each provider's own format
(the Responses API's are OpenAI's): 401 without (or with a wrong) key when the
script requires one, 400 for a malformed request (Anthropic: also without
``anthropic-version``), 404 for an unknown path, 405 for a wrong method. Every
response carries ``x-request-id`` (OpenAI) or ``request-id`` (Anthropic).

Test-only request headers: ``x-railings-turn: N`` answers with turn N,
``x-railings-chunk-size: N`` overrides the characters per delta.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from railings.testing import wire_anthropic as wa
from railings.testing import wire_openai as wo
from railings.testing import wire_responses as wr
from railings.testing.http import (
    LAST_CHUNK,
    Headers,
    HTTPFault,
    Request,
    encode_chunk,
    read_request,
    render_head,
    send_json,
)
from railings.testing.ids import Ids
from railings.testing.script import Script, ScriptTurn, plan_turn
from railings.testing.service import Service

LOG = logging.getLogger("railings.testing.server")

__all__ = ["SECRET_HEADERS", "ReceivedRequest", "ScriptedServer"]

SECRET_HEADERS = frozenset(
    {"authorization", "x-api-key", "api-key", "cookie", "proxy-authorization", "x-goog-api-key"}
)
SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
OPENAI_PATHS = ("/v1/chat/completions", "/chat/completions")
RESPONSES_PATHS = ("/v1/responses", "/responses")
ANTHROPIC_PATHS = ("/v1/messages",)


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One request as the server saw it. ``request["messages"]`` reads the JSON body."""

    method: str
    path: str
    headers: Mapping[str, str]  # lower-case names; secrets redacted
    body: Any  # the parsed JSON body, or None
    provider: str | None = None
    turn: int | None = None
    status: int = 0
    stream: bool = False

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def get(self, key: str, default: Any = None) -> Any:
        """A field of the JSON body, or ``default`` (also when the body is not an object)."""
        return self.body.get(key, default) if isinstance(self.body, Mapping) else default


def _redact(headers: Headers) -> dict[str, str]:
    return {k: ("<redacted>" if k in SECRET_HEADERS else v) for k, v in headers.as_dict().items()}


def _bearer(headers: Headers) -> str | None:
    value = headers.get("authorization") or ""
    scheme, _, token = value.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


class _Reply(Exception):
    """Answer with this status and JSON body (raised from deep in a handler)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status, self.body = status, body


class ScriptedServer(Service):
    """A deterministic model server for tests (see the module docstring)."""

    def __init__(
        self,
        script: Script | Mapping[str, Any] | str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(host, port)
        if isinstance(script, str | Path):
            script = Script.load(script)
        elif not isinstance(script, Script):
            script = Script.from_dict(script)
        self.script = script
        self._ids = Ids(script.seed)
        self._lock = threading.Lock()
        self._requests: list[ReceivedRequest] = []
        # Responses API: the item ids a reasoning item produced -> its id (wire_responses).
        self._reasoned: dict[str, str] = {}

    @property
    def openai_base_url(self) -> str:
        """The OpenAI SDK convention: the base URL includes ``/v1``."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic SDK convention: the base URL is the origin."""
        return self.url

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every request received so far (a copy, safe to read from any thread)."""
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        """Forget the requests received so far (:attr:`requests` starts empty again)."""
        with self._lock:
            self._requests.clear()

    def _record(self, record: ReceivedRequest) -> None:
        with self._lock:
            self._requests.append(record)
        # One access-log line per request (``railings serve`` shows them on stderr).
        what = "stream" if record.stream else "answer"
        turn = f", turn {record.turn + 1}" if record.turn is not None else ""
        path = record.path.partition("?")[0]  # a query string may carry a key: never logged
        LOG.info("%s %s -> %s (%s%s)", record.method, path, record.status, what, turn)

    # -- one connection, one request ----------------------------------------------
    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read one request, record it and answer it from the script: an error in the
        provider's own shape, a JSON body, or an event stream."""
        try:
            request = await read_request(reader)
        except EOFError:
            return
        except HTTPFault as fault:
            await send_json(writer, fault.status, wo.status_error(fault.status, fault.message))
            return
        provider = self._provider_for(request)
        request_id = (
            self._ids.anthropic_request() if provider == "anthropic" else self._ids.openai_request()
        )
        id_headers = [("request-id" if provider == "anthropic" else "x-request-id", request_id)]
        body: Any = None
        with contextlib.suppress(ValueError):
            body = json.loads(request.body) if request.body else None
        record = ReceivedRequest(
            request.method, request.path, _redact(request.headers), body, provider
        )
        try:
            turn_index, events, delay = self._respond(request, provider, body, request_id)
        except _Reply as reply:
            self._record(dataclasses.replace(record, status=reply.status))
            await send_json(writer, reply.status, reply.body, id_headers)
            return
        stream = isinstance(body, Mapping) and body.get("stream") is True
        self._record(dataclasses.replace(record, status=200, turn=turn_index, stream=stream))
        if isinstance(events, dict):
            await send_json(writer, 200, events, id_headers)
            return
        await self._send_stream(writer, events, id_headers, provider, delay)

    def _provider_for(self, request: Request) -> str:
        if request.path in ANTHROPIC_PATHS:
            return "anthropic"
        if request.path in OPENAI_PATHS:
            return "openai"
        if request.path in RESPONSES_PATHS:
            return "openai-responses"
        return (
            "anthropic"
            if ("anthropic-version" in request.headers or "x-api-key" in request.headers)
            else "openai"
        )

    def _error(
        self, provider: str, status: int, message: str | None = None, request_id: str | None = None
    ) -> _Reply:
        if provider == "anthropic":
            return _Reply(status, wa.status_error(status, message, request_id))
        return _Reply(status, wo.status_error(status, message))

    def _respond(
        self, request: Request, provider: str, body: Any, request_id: str
    ) -> tuple[int, dict[str, Any] | Iterator[bytes], float]:
        if request.path not in OPENAI_PATHS + RESPONSES_PATHS + ANTHROPIC_PATHS:
            message = (
                f"Invalid URL ({request.method} {request.path})"
                if provider != "anthropic"
                else "Not Found"
            )
            raise self._error(provider, 404, message, request_id)
        if request.method != "POST":
            raise self._error(provider, 405, f"Method {request.method} not allowed", request_id)
        self._check_key(request.headers, provider, request_id)
        if provider == "anthropic" and "anthropic-version" not in request.headers:
            raise self._error(provider, 400, "anthropic-version: header is required", request_id)
        if body is None:
            raise self._error(
                provider,
                400,
                "We could not parse the JSON body of your request."
                if provider != "anthropic"
                else "Invalid JSON body",
                request_id,
            )
        ask: wa.AnthropicAsk | wo.OpenAIAsk | wr.ResponsesAsk | str
        if provider == "anthropic":
            ask = wa.parse_ask(body)
        elif provider == "openai-responses":
            ask = wr.parse_ask(body, self._reasoned)
        else:
            ask = wo.parse_ask(body)
        if isinstance(ask, str):
            raise self._error(provider, 400, ask, request_id)
        counted = (
            ask.turns if isinstance(ask, wr.ResponsesAsk) else self.script.turn_index(ask.messages)
        )
        turn_index, turn = self._select(request.headers, counted, provider, request_id)
        chunk_size = (
            _header_int(request.headers, "x-railings-chunk-size")
            or turn.chunk_size
            or self.script.chunk_size
        )
        model = self.script.model or ask.model
        delay = turn.delay if turn.delay is not None else self.script.delay
        if isinstance(ask, wa.AnthropicAsk):
            plan = plan_turn(turn, ask.max_tokens, self._ids.anthropic_tool)
            message_id, signature = self._ids.message(), self._ids.signature()
            if not ask.stream:
                return (
                    turn_index,
                    wa.message(plan, ask, message_id=message_id, model=model, signature=signature),
                    delay,
                )
            return (
                turn_index,
                wa.events(
                    plan,
                    ask,
                    message_id=message_id,
                    model=model,
                    chunk_size=chunk_size,
                    signature=signature,
                    ping=self.script.ping,
                ),
                delay,
            )
        if isinstance(ask, wr.ResponsesAsk):
            plan = plan_turn(turn, ask.max_tokens, self._ids.openai_call)
            response_id, created = self._ids.response(), int(time.time())
            new_item_id = self._item_ids()
            if not ask.stream:
                return (
                    turn_index,
                    wr.response(
                        plan,
                        ask,
                        response_id=response_id,
                        created=created,
                        model=model,
                        new_item_id=new_item_id,
                    ),
                    delay,
                )
            return (
                turn_index,
                wr.events(
                    plan,
                    ask,
                    response_id=response_id,
                    created=created,
                    model=model,
                    chunk_size=chunk_size,
                    new_item_id=new_item_id,
                ),
                delay,
            )
        plan = plan_turn(turn, ask.max_tokens, self._ids.openai_call)
        completion_id, created = self._ids.chat_completion(), int(time.time())
        if not ask.stream:
            return (
                turn_index,
                wo.completion(plan, ask, completion_id=completion_id, created=created, model=model),
                delay,
            )
        return (
            turn_index,
            wo.chunks(
                plan,
                ask,
                completion_id=completion_id,
                created=created,
                model=model,
                chunk_size=chunk_size,
            ),
            delay,
        )

    def _item_ids(self) -> Callable[[str], str]:
        """Item ids for one response, remembering what its reasoning item produced: a
        response's reasoning comes first, and every later item of it is its product."""
        first: list[str] = []

        def new_item_id(prefix: str) -> str:
            ident = self._ids.response_item(prefix)
            if not first:
                first.append(ident)
            elif first[0].startswith("rs_"):
                self._reasoned[ident] = first[0]
            return ident

        return new_item_id

    def _check_key(self, headers: Headers, provider: str, request_id: str) -> None:
        script = self.script
        if not script.key_required:
            return
        if provider == "anthropic":
            key = headers.get("x-api-key") or _bearer(headers)
            if not key:
                raise self._error(provider, 401, "x-api-key header is required", request_id)
        else:
            key = _bearer(headers)
            if not key:
                raise _Reply(
                    401,
                    wo.error_body(
                        "You didn't provide an API key. You need to provide your API key in an "
                        "Authorization header using Bearer auth (i.e. Authorization: Bearer "
                        "YOUR_KEY), or as the password field (with blank username) if you're "
                        "accessing the API from your browser and are prompted for a username "
                        "and password. You can obtain an API key from "
                        "https://platform.openai.com/account/api-keys.",
                        "invalid_request_error",
                    ),
                )
        if script.api_key is not None and key != script.api_key:
            if provider == "anthropic":
                raise self._error(provider, 401, "invalid x-api-key", request_id)
            shown = f"{key[:3]}*****{key[-4:]}" if len(key) > 8 else "*****"
            raise _Reply(
                401,
                wo.error_body(
                    f"Incorrect API key provided: {shown}. You can find your API key at "
                    "https://platform.openai.com/account/api-keys.",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
            )

    def _select(
        self, headers: Headers, counted: int, provider: str, request_id: str
    ) -> tuple[int, ScriptTurn]:
        """The turn to answer: ``x-railings-turn``, else ``counted`` (the assistant turns
        the request's conversation holds)."""
        forced = _header_int(headers, "x-railings-turn", minimum=0)
        index = forced if forced is not None else counted
        turn = self.script.select(index)
        if turn is None:
            raise self._error(
                provider,
                400,
                (
                    f"railings scripted server: the script has {len(self.script.turns)} turns and "
                    f"this request asks for turn {index}"
                ),
                request_id,
            )
        return index, turn

    # -- writing --------------------------------------------------------------------
    async def _send_stream(
        self,
        writer: asyncio.StreamWriter,
        events: Iterable[bytes],
        headers: list[tuple[str, str]],
        provider: str,
        delay: float,
    ) -> None:
        extra = (
            [("openai-version", "2020-10-01"), ("openai-processing-ms", "1")]
            if provider != "anthropic"
            else []
        )
        writer.write(
            render_head(
                200,
                [
                    ("content-type", SSE_CONTENT_TYPE),
                    ("cache-control", "no-cache"),
                    ("transfer-encoding", "chunked"),
                    *headers,
                    *extra,
                    ("connection", "close"),
                ],
            )
        )
        for event in events:
            writer.write(encode_chunk(event))
            await writer.drain()
            if delay:
                await asyncio.sleep(delay)
        writer.write(LAST_CHUNK)
        await writer.drain()


def _header_int(headers: Headers, name: str, minimum: int = 1) -> int | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if number >= minimum else None
