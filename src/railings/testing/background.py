"""Background responses (the Responses API's ``background: true``), as the scripted
server keeps them.

Theory of operation. A background request is generated once, at its POST, exactly as
a stream of it would be, and its events are kept under the response id
(:class:`Kept`; at most ``LIMIT`` responses and ``MAX_BYTES`` of events, the oldest
dropped first). Every later stream of it, ``GET /v1/responses/{id}?stream=true``
(``&starting_after=N``), sends the same bytes again from event 0 (from event
``N + 1``): nothing is generated twice. A non-streamed background POST is answered
with the response object, ``status: "queued"``; ``GET /v1/responses/{id}`` without
``stream`` retrieves the response as it ended.

A kept response runs at the pace it is read: it is *in progress* until some stream has
sent its last event or a client has retrieved it, and *finished* from then on.
``POST /v1/responses/{id}/cancel`` cuts an in-progress response where the furthest
stream had got: its status becomes ``cancelled`` (the answer is the response object
with that status and no output), a stream still sending it stops there, and a later
stream of it sends the kept events up to that point, then ends its body cleanly with
no terminal event: the API has no ``response.cancelled`` event, and a cancelled turn
was never finished. Cancelling a finished response answers it as it is (idempotent,
as the API's cancel is).

A response created without ``background`` (and without ``store: false``) is
remembered by its id alone: streaming, retrieving or cancelling it is answered 400.
An unknown id is answered 404, in OpenAI's error shape.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qs

from railings.testing import wire_openai as wo
from railings.testing.wire_responses_ask import ResponsesAsk

__all__ = ["LIMIT", "MAX_BYTES", "Kept", "Replay", "ResponseStore", "rendered", "route"]

LIMIT = 256
MAX_BYTES = 64 * 1024 * 1024

_ROUTE = re.compile(r"(?:/v1)?/responses/([^/]+)(/cancel)?")


def route(path: str) -> tuple[str, bool] | None:
    """``(response id, is a cancel)`` for a path of one kept response, else None."""
    match = _ROUTE.fullmatch(path)
    return None if match is None else (match.group(1), match.group(2) is not None)


def rendered(ask: Any) -> Any:
    """The request as the server renders it: a background response is always generated
    as a stream, so that a later stream of it can send the same events."""
    if isinstance(ask, ResponsesAsk) and ask.background and not ask.stream:
        return replace(ask, stream=True)
    return ask


@dataclass(slots=True)
class Kept:
    """One response the server keeps. ``sent``: how many of its events the furthest
    stream has sent (how far it has run)."""

    id: str
    background: bool
    events: list[bytes] = field(default_factory=list)
    opened: dict[str, Any] = field(default_factory=dict)  # the response.created object
    final: dict[str, Any] = field(default_factory=dict)  # the terminal event's object
    delay: float = 0.0
    sent: int = 0
    finished: bool = False
    cancelled: bool = False

    def replay(self, start: int) -> Iterator[bytes]:
        """The kept events from index ``start``, as far as a cancel lets them go."""
        index = start
        while index < len(self.events):  # a cancel shortens the list under this stream
            self.sent = max(self.sent, index + 1)
            self.finished = self.finished or (self.sent == len(self.events) and not self.cancelled)
            yield self.events[index]
            index += 1

    def as_it_is(self) -> dict[str, Any]:
        """The response object now: as it ended, or cancelled with no output."""
        if self.cancelled:
            return {**self.opened, "status": "cancelled"}
        return self.final


@dataclass(frozen=True, slots=True)
class Replay:
    """A stream of a kept response: its events from index ``first`` on."""

    events: Iterator[bytes]
    first: int
    delay: float


def _object_of(event: bytes) -> dict[str, Any]:
    data = event.partition(b"\ndata: ")[2]
    obj = json.loads(data)
    response = obj.get("response")
    return response if isinstance(response, dict) else {}


def _error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    return status, wo.error_body(message, "invalid_request_error")


class ResponseStore:
    """The responses the scripted server keeps, by id (see the module docstring)."""

    def __init__(self, limit: int = LIMIT, max_bytes: int = MAX_BYTES) -> None:
        self._limit, self._max_bytes = limit, max_bytes
        self._kept: OrderedDict[str, tuple[Kept, int]] = OrderedDict()  # with its size
        self._bytes = 0
        self._cancelled: set[str] = set()
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> frozenset[str]:
        """The ids of the responses cancelled so far."""
        with self._lock:
            return frozenset(self._cancelled)

    def _keep(self, kept: Kept) -> None:
        size = sum(len(event) for event in kept.events)
        with self._lock:
            self._kept[kept.id] = (kept, size)
            self._bytes += size
            while len(self._kept) > 1 and (
                len(self._kept) > self._limit or self._bytes > self._max_bytes
            ):
                _, (_, dropped) = self._kept.popitem(last=False)
                self._bytes -= dropped

    def keep(
        self,
        ask: Any,
        answer: dict[str, Any] | list[Any] | Iterator[bytes],
        *,
        delay: float,
        is_proof: Callable[[bytes], bool],
        sends_proof: bool,
    ) -> dict[str, Any] | list[Any] | Iterator[bytes]:
        """Keep the answer to ``ask`` when it is a stored Responses request, and return
        what the POST sends: the same answer, or the first stream of a kept one."""
        if not isinstance(ask, ResponsesAsk) or ask.echo.get("store") is False:
            return answer
        if not ask.background:
            if isinstance(answer, dict):
                self._keep(Kept(str(answer.get("id")), background=False))
                return answer
            first = None if isinstance(answer, list) else next(answer, None)
            if first is None or isinstance(answer, list):
                return answer
            self._keep(Kept(_object_of(first).get("id", ""), background=False))
            return itertools.chain([first], answer)
        if isinstance(answer, dict | list):  # rendered() makes it a stream
            return answer
        events = list(answer)
        opened, final = _object_of(events[0]), _object_of(events[-1])
        if not sends_proof:  # the quirk is the response's own: every stream of it has it
            events = list(itertools.takewhile(lambda event: not is_proof(event), events))
        kept = Kept(opened.get("id", ""), True, events, opened, final, delay)
        self._keep(kept)
        if ask.stream:
            return kept.replay(0)
        return {**opened, "status": "queued"}

    def answer(
        self, method: str, target: str, response_id: str, cancel: bool
    ) -> tuple[int, dict[str, Any]] | Replay:
        """What a retrieval, a stream or a cancel of ``response_id`` is answered: a status
        and a JSON body, or the stream to send."""
        if method != ("POST" if cancel else "GET"):
            return 405, wo.status_error(405, f"Method {method} not allowed")
        with self._lock:
            found = self._kept.get(response_id)
        if found is None:
            return _error(404, f"Response with id '{response_id}' not found.")
        kept = found[0]
        if not kept.background:
            doing = "cancelled" if cancel else "streamed or retrieved"
            return _error(
                400,
                f"Response '{response_id}' was not created with background=true, so it "
                f"cannot be {doing}.",
            )
        if cancel:
            if not kept.finished and not kept.cancelled:
                kept.cancelled = True
                del kept.events[kept.sent :]
                with self._lock:
                    self._cancelled.add(response_id)
            return 200, kept.as_it_is()
        query = parse_qs(target.partition("?")[2])
        if query.get("stream", [""])[-1].lower() != "true":
            kept.finished = kept.finished or not kept.cancelled  # retrieved: it has run
            return 200, kept.as_it_is()
        after = query.get("starting_after", ["-1"])[-1]
        if not re.fullmatch(r"-1|[0-9]{1,9}", after):
            return _error(
                400,
                f"Invalid 'starting_after': expected an integer >= 0, but got {after!r} instead.",
            )
        first = int(after) + 1
        return Replay(kept.replay(first), first, kept.delay)
