"""The scripted model server: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages,
Gemini, Bedrock Converse and Ollama on loopback.

::

    with ScriptedServer(Script.text("Hello!")) as server:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="x")
        client.responses.create(model="m", input="Hi", stream=True)   # the Responses API
        client_a = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="x")

Endpoints: ``POST /v1/chat/completions`` (also ``/chat/completions``),
``POST /v1/responses`` (also ``/responses``) and ``POST /v1/messages``, streamed
(``"stream": true``) or not; Gemini's ``POST /v1beta/models/{model}:streamGenerateContent``
(SSE with ``?alt=sse``, else one JSON array) and ``:generateContent``; Bedrock's
``POST /model/{modelId}/converse-stream`` (event-stream frames) and ``/converse``;
Ollama's ``POST /api/chat`` and ``/api/generate`` (NDJSON unless ``"stream": false``).
What the model says comes from a :class:`~railings.testing.script.Script`; the wire shapes from
:mod:`~railings.testing.wires`, one per provider spec (:mod:`~railings.testing.wire_openai`,
:mod:`~railings.testing.wire_responses`, :mod:`~railings.testing.wire_anthropic`).
The server is stateless: a Responses request must carry the whole conversation in
``input`` (a ``previous_response_id`` is answered 400), and which turn answers it is
counted from its ``input`` items (see :mod:`~railings.testing.script`). Errors come in
each provider's own format (the Responses API's are OpenAI's): 401 without (or with a
wrong) key when the script requires one, 400 for a malformed request (Anthropic: also
without ``anthropic-version``, and for an assistant prefill the script's model
refuses), 404 for an unknown path, 405 for a wrong method. Every response carries
``x-request-id`` (OpenAI) or ``request-id`` (Anthropic).

Only a Responses request with ``background: true`` is kept (it needs ``store``): its
response can be streamed again from any event (``GET
/v1/responses/{id}?stream=true&starting_after=N``), retrieved, or cancelled (``POST
/v1/responses/{id}/cancel``), as :mod:`~railings.testing.background` describes (any
other stored response is remembered by its id alone).
:attr:`ScriptedServer.generations` counts the answers generated, so a test can tell a
resumed stream from a second generation; :attr:`ScriptedServer.cancelled` holds the
ids of the responses cancelled. A request's query string is in
:attr:`ReceivedRequest.query`, key parameters redacted.

Test-only request headers: ``x-railings-turn: N`` answers with turn N,
``x-railings-chunk-size: N`` overrides the characters per delta, and
``x-railings-cut-after: K`` ends a stream right after its event K (counted from 0 over
the whole response, so on the Responses API it is the event's ``sequence_number``, on a
POST and on a GET that resumes it alike) by closing the connection without the last
chunk: the client must resume. A GET that starts past K is cut before its first event.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from railings.testing import wire_openai as wo
from railings.testing.background import Replay, ResponseStore, rendered, route
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
from railings.testing.kitwire import SSE_CONTENT_TYPE
from railings.testing.quirks import KEEP_ALIVE, Quirks
from railings.testing.received import SECRET_HEADERS, ReceivedRequest, query_of, redacted
from railings.testing.script import Script, ScriptTurn
from railings.testing.service import Service
from railings.testing.wires import Answer, KitWire, wire_for_request

LOG = logging.getLogger("railings.testing.server")

__all__ = ["SECRET_HEADERS", "ReceivedRequest", "ScriptedServer"]


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
        self._responses = ResponseStore()
        self._generations = 0

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

    @property
    def generations(self) -> int:
        """How many requests the server generated an answer for (a stream sent again from
        a kept background response is no generation)."""
        with self._lock:
            return self._generations

    @property
    def cancelled(self) -> frozenset[str]:
        """The ids of the background responses cancelled so far."""
        return self._responses.cancelled

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
        wire, known = wire_for_request(request.path, request.headers)
        request_id = wire.request_id(self._ids)
        id_headers = [(wire.spec.request_id_header, request_id)]
        body: Any = None
        with contextlib.suppress(ValueError):
            body = json.loads(request.body) if request.body else None
        record = ReceivedRequest(
            request.method,
            request.path,
            redacted(request.headers),
            body,
            wire.spec.name,
            query=query_of(request.target),
        )
        first = 0
        kept = None if known else route(request.path)
        try:
            if kept is not None:
                self._check_key(request.headers, wire, request_id)
                turn_index, stream, events, delay, quirks, first = self._kept(request, kept)
            else:
                turn_index, stream, events, delay, quirks = self._respond(
                    request, wire, known, body, request_id
                )
        except _Reply as reply:
            self._record(dataclasses.replace(record, status=reply.status))
            headers = [*id_headers, *wire.error_headers(reply.status, reply.body)]
            await send_json(writer, reply.status, reply.body, headers)
            return
        self._record(dataclasses.replace(record, status=200, turn=turn_index, stream=stream))
        if isinstance(events, dict | list):
            await send_json(writer, 200, events, id_headers)
            return
        if not quirks.sends_proof:  # what the drop_terminator fault does, from the server
            events = itertools.takewhile(lambda event: not wire.is_proof(event), events)
        if wire.stream_content_type != SSE_CONTENT_TYPE:
            quirks = dataclasses.replace(quirks, keepalives=None)  # comments are SSE's
        await self._send_stream(
            writer,
            events,
            [*id_headers, *wire.stream_headers],
            delay,
            wire.stream_content_type,
            quirks,
            (first, _header_int(request.headers, "x-railings-cut-after", minimum=0)),
        )

    def _kept(
        self, request: Request, kept: tuple[str, bool]
    ) -> tuple[int | None, bool, dict[str, Any] | list[Any] | Iterator[bytes], float, Quirks, int]:
        """A retrieval, a stream or a cancel of a kept response (testing/background.py)."""
        answer = self._responses.answer(request.method, request.target, *kept)
        if isinstance(answer, Replay):
            return None, True, answer.events, answer.delay, Quirks(), answer.first
        status, obj = answer
        if status != 200:
            raise _Reply(status, obj)
        return None, False, obj, 0.0, Quirks(), 0

    def _respond(
        self, request: Request, wire: KitWire, known: bool, body: Any, request_id: str
    ) -> tuple[int, bool, dict[str, Any] | list[Any] | Iterator[bytes], float, Quirks]:
        if not known:
            raise _Reply(
                404,
                wire.status_error(404, wire.not_found(request.method, request.path), request_id),
            )
        if request.method != "POST":
            raise _Reply(
                405, wire.status_error(405, f"Method {request.method} not allowed", request_id)
            )
        self._check_key(request.headers, wire, request_id)
        missing = wire.missing_header(request.headers)
        if missing is not None:
            raise _Reply(400, wire.status_error(400, missing, request_id))
        if body is None:
            raise _Reply(400, wire.status_error(400, wire.invalid_json, request_id))
        ask = wire.parse_ask(body, self._reasoned, request.target)
        if isinstance(ask, str):
            raise _Reply(400, wire.status_error(400, ask, request_id))
        ask = wire.admit(ask, self.script)
        if isinstance(ask, str):
            raise _Reply(400, wire.status_error(400, ask, request_id))
        counted = wire.turn_index(ask, self.script)
        turn_index, turn = self._select(request.headers, counted, wire, request_id)
        quirks = self.script.quirks_of(turn)
        turn = dataclasses.replace(turn, quirks=quirks)
        chunk_size = (
            _header_int(request.headers, "x-railings-chunk-size")
            or turn.chunk_size
            or self.script.chunk_size
        )
        delay = turn.delay if turn.delay is not None else self.script.delay
        at = Answer(
            ids=self._ids,
            model=self.script.model or ask.model,
            chunk_size=chunk_size,
            ping=self.script.ping,
            new_item_ids=self._item_ids,
        )
        answer = self._responses.keep(
            ask,
            wire.answer(rendered(ask), turn, at),
            delay=delay,
            is_proof=wire.is_proof,
            sends_proof=quirks.sends_proof,
        )
        with self._lock:
            self._generations += 1
        return turn_index, bool(ask.stream), answer, delay, quirks

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

    def _check_key(self, headers: Headers, wire: KitWire, request_id: str) -> None:
        script = self.script
        if not script.key_required:
            return
        key = wire.key(headers)
        if not key:
            raise _Reply(wire.key_status, wire.missing_key(request_id))
        if script.api_key is not None and key != script.api_key:
            raise _Reply(wire.key_status, wire.wrong_key(key, request_id))

    def _select(
        self, headers: Headers, counted: int, wire: KitWire, request_id: str
    ) -> tuple[int, ScriptTurn]:
        """The turn to answer: ``x-railings-turn``, else ``counted`` (the assistant turns
        the request's conversation holds)."""
        forced = _header_int(headers, "x-railings-turn", minimum=0)
        index = forced if forced is not None else counted
        turn = self.script.select(index)
        if turn is None:
            message = (
                f"railings scripted server: the script has {len(self.script.turns)} turns and "
                f"this request asks for turn {index}"
            )
            raise _Reply(400, wire.status_error(400, message, request_id))
        return index, turn

    # -- writing --------------------------------------------------------------------
    async def _send_stream(
        self,
        writer: asyncio.StreamWriter,
        events: Iterable[bytes],
        headers: list[tuple[str, str]],
        delay: float,
        content_type: str,
        quirks: Quirks,
        cut: tuple[int, int | None] = (0, None),
    ) -> None:
        """Write the head and each event as one chunk. ``cut`` is (the index of the first
        event, the index after which to stop without the last chunk, or None)."""
        writer.write(
            render_head(
                200,
                [
                    ("content-type", content_type),
                    ("cache-control", "no-cache"),
                    ("transfer-encoding", "chunked"),
                    *headers,
                    ("connection", "close"),
                ],
            )
        )
        for _ in range(quirks.keepalives or 0):  # a server that waits before its first event
            writer.write(encode_chunk(KEEP_ALIVE))
            await writer.drain()
            if quirks.keepalive_delay:
                await asyncio.sleep(quirks.keepalive_delay)
        first, cut_after = cut
        if cut_after is not None and cut_after < first:
            return  # the cut is behind this stream: not one event
        for index, event in enumerate(events, start=first):
            writer.write(encode_chunk(event))
            await writer.drain()
            if index == cut_after:
                return  # the connection closes without the last chunk
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
