"""The client side of the gateway's ASGI app: reading a request within its bounds,
answering, and noticing a client that left. No upstream and no judging here.

Every answer the gateway makes of its own tells an SDK whether to send the request
again (``x-should-retry``, which the official SDKs read before their own rules):
``false`` when a resend cannot help or the gateway already resent by the retry
policy, ``true`` with ``retry-after`` when the process is full for now.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Literal

from railings.gateway.limits import Budget, Limits, describe
from railings.gateway.shapes import error_body
from railings.providers import spec
from railings.turn.limit import requested_limit
from railings.turn.usage import request_chars

__all__ = [
    "MAX_PARSED_VALUES",
    "NO_RETRY",
    "Receive",
    "Refusal",
    "RequestFacts",
    "Scope",
    "Send",
    "answer",
    "many_choices",
    "read_body",
    "refuse",
    "request_facts",
    "until_gone",
    "watch_disconnect",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Reason = Literal["too_large", "body_timeout", "too_slow", "overloaded", "bad_path", "choices"]

NO_RETRY = [(b"x-should-retry", b"false")]
_CLOSE = (b"connection", b"close")  # the rest of the body is never read: the connection ends


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused before anything went upstream: the metric's ``reason``, the
    status, the error code of the provider-shaped body and what to tell the client."""

    reason: Reason
    status: int
    code: str
    message: str

    def headers(self) -> list[tuple[bytes, bytes]]:
        """Whether to retry, and the connection's end when the body was left unread."""
        if self.status == 503:
            return [(b"x-should-retry", b"true"), (b"retry-after", b"1"), _CLOSE]
        if self.status == 408:  # a slow or stalled body: the network's, not the request's
            return [(b"x-should-retry", b"true"), _CLOSE]
        return [*NO_RETRY, _CLOSE] if self.status == 413 else list(NO_RETRY)


def _too_large(limits: Limits) -> Refusal:
    return Refusal(
        "too_large",
        413,
        "request_too_large",
        f"railings gateway: the request body is larger than {describe(limits.max_request_body)}",
    )


def many_choices(choices: int) -> Refusal:
    """The refusal of a Chat request for ``n`` > 1 under ``--cut-calls refuse``: the judge
    reads one choice, and a call cut in another would reach the client unjudged."""
    return Refusal(
        "choices",
        400,
        "many_choices_not_judged",
        f"railings gateway: this request asks for n={choices} choices, and the gateway judges "
        "one choice per answer, so a tool call the output limit cut in another choice would "
        "reach the client unjudged; send n=1, or run the gateway with --cut-calls pass to "
        "forward n > 1 unjudged",
    )


async def read_body(
    receive: Receive, scope: Scope, limits: Limits, budget: Budget
) -> bytes | Refusal | None:
    """The whole request body, a :class:`Refusal`, or None when the client left first.

    The bytes of a returned body stay taken from ``budget``: the caller gives them back
    when the call ends. A refusal or a departure has given back what it took.
    """
    for name, value in scope["headers"]:
        announced = name.lower() == b"content-length" and value.isdigit()
        if announced and int(value) > limits.max_request_body:
            return _too_large(limits)  # refused before a byte of it is read
    chunks: list[bytes] = []
    size = 0
    clock = asyncio.get_running_loop().time
    window, window_size = clock(), 0  # the current rate window: its start, its bytes
    whole = False
    try:
        while True:
            try:
                async with asyncio.timeout(limits.body_timeout):
                    message = await receive()
            except TimeoutError:
                return Refusal(
                    "body_timeout",
                    408,
                    "request_body_timeout",
                    f"railings gateway: no request body bytes for {limits.body_timeout:g} s",
                )
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            if size + len(chunk) > limits.max_request_body:
                return _too_large(limits)
            if not budget.take(len(chunk)):
                return Refusal(
                    "overloaded",
                    503,
                    "gateway_overloaded",
                    "railings gateway: overloaded: the request bodies held for all clients "
                    f"reached {describe(budget.cap)}; retry later",
                )
            size += len(chunk)
            window_size += len(chunk)
            chunks.append(chunk)
            if not message.get("more_body", False):
                whole = True
                return b"".join(chunks)
            # Apache mod_reqtimeout's MinRate, measured per window of ``body_timeout`` so
            # that a fast start buys nothing: each window must bring its share of bytes.
            elapsed = clock() - window
            if elapsed >= limits.body_timeout:
                if window_size < limits.min_body_rate * elapsed:
                    return Refusal(
                        "too_slow",
                        408,
                        "request_body_timeout",
                        "railings gateway: the request body arrived slower than "
                        f"{limits.min_body_rate} bytes/s",
                    )
                window, window_size = clock(), 0
    finally:
        if not whole:  # refused, left or cancelled: what was taken goes back
            budget.give(size)


async def refuse(send: Send, refusal: Refusal, provider: str | None) -> None:
    """Answer ``refusal``: in the provider's error shape on a judged model path, else
    as one line of text."""
    if provider is not None:
        body = error_body(provider, refusal.code, refusal.message)
        await answer(send, refusal.status, body, "application/json", refusal.headers())
    else:
        text = (refusal.message + "\n").encode()
        await answer(send, refusal.status, text, "text/plain; charset=utf-8", refusal.headers())


async def watch_disconnect(receive: Receive, gone: asyncio.Event) -> None:
    """Set ``gone`` when the client disconnects (run as a task once the body is read)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


async def until_gone(work: Callable[[asyncio.Event], Awaitable[None]], receive: Receive) -> bool:
    """Run ``work(gone)`` while watching the client; True when the client left first.

    ASGI servers drop what is sent after a disconnect without a word, so the work is
    cancelled the moment the client leaves, wherever it waits: on a silent upstream,
    a resend's backoff, or a body being relayed. Its cleanup (closing the upstream
    response, and with it the connection) runs before this returns. ``gone`` is also
    set for work that checks it between steps. A server's own ``http.disconnect``
    after a completed response comes when the work has ended, and changes nothing.
    """
    gone = asyncio.Event()
    task = asyncio.ensure_future(work(gone))
    watcher = asyncio.ensure_future(watch_disconnect(receive, gone))
    try:
        await asyncio.wait((task, watcher), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait((task,))
    if task.cancelled():
        return True
    task.result()  # the work's own exception, if it raised
    return False


async def answer(
    send: Send,
    status: int,
    body: bytes,
    content_type: str,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """A whole answer of the gateway's own, with its length."""
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": body})


# The most JSON values a request body may hold for the gateway to parse it. A parse builds
# one Python object per value: a body of one long string costs about its size, one of
# empty objects twenty times its size, so the bound is on values, counted before parsing.
MAX_PARSED_VALUES = 2**19


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What the gateway reads of a request body, parsed once: its ``model`` (for the
    journal, the span and the log), the output limit it asks for, whether it asks for a
    stream, how many choices (Chat's ``n``), the size of its text (what an input count
    the upstream never reports is estimated from: :mod:`railings.turn.usage`), and
    whether it asks the provider to keep the response (``keeps``: the wire's
    :class:`~railings.providers.base.Resumption` says, e.g. Responses' ``background:
    true``). ``read`` is False for a body that is not
    a JSON object or is too large to parse (:data:`MAX_PARSED_VALUES`): it goes upstream
    unread, and the answer is judged by its own labels."""

    model: str | None = None
    max_tokens: int | None = None
    stream: bool = False
    choices: int = 1
    keeps: bool = False
    read: bool = False
    request_chars: int | None = None


def request_facts(body: bytes, provider: str | None = None) -> RequestFacts:
    """The :class:`RequestFacts` of ``body``, a request of the wire ``provider``; bounded
    in time and memory by the body's size (a body nested deeper than the JSON decoder
    recurses is unread, not an error)."""
    # Every value follows a ":", a "," or a "[" (counted at C speed, strings included, so
    # never fewer than the parse would build), and every key precedes a ":".
    values = 2 * body.count(b":") + body.count(b",") + body.count(b"[")
    if not body or values > MAX_PARSED_VALUES:
        return RequestFacts()
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return RequestFacts()
    if not isinstance(data, dict):
        return RequestFacts()
    model, n = data.get("model"), data.get("n")
    resumption = spec(provider).resumption if provider is not None else None
    return RequestFacts(
        model=model if isinstance(model, str) else None,
        max_tokens=requested_limit(data),
        stream=data.get("stream") is True,
        choices=n if isinstance(n, int) and not isinstance(n, bool) and n > 1 else 1,
        keeps=resumption is not None and resumption.keeps(data),
        read=True,
        request_chars=request_chars(data),
    )
