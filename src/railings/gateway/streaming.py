"""One streamed model answer through the gateway: attempts, the judge, the retry of Empty.

The response head of the first 2xx event stream goes to the client at once (an SDK
waits for it before it reads anything). Each attempt's body then passes through a
fresh :class:`~railings.gateway.judge.StreamJudge`. An attempt that ends **Empty**
(no content, no proof) sent the client nothing of its body, so it is resent with
the retry policy (:class:`~railings.transport.retry.Retrier`: bounded attempts,
backoff with full jitter, ``retry-after`` honoured); a resend that answers with an
error status or fails to connect is one more failed attempt. When the attempts are
spent, the client gets the provider-shaped error event and the end.

A stream in a content coding is decoded before it is judged
(:mod:`railings.gateway.decoding`), and the client gets the decoded bytes without the
``content-encoding`` header. A coding the gateway cannot decode is answered once: a
``502`` in the provider's error shape with ``x-should-retry: false`` when it is the
first attempt's (the head has not gone out), else the error event; never resent.

A 2xx answer to a request that asked to stream is judged here whatever its
``content-type`` says (none, ``text/plain``, ``application/json``): the openai SDK
reads such a body as events, so the gateway judges what its client will read, and
labels it ``text/event-stream``. Such an answer that ends Empty is not resent: its
body was no event stream, and may be an answer the upstream generated, and billed.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, MutableMapping
from typing import Any

import httpx2

from railings.classify import INTERRUPTED_MESSAGE
from railings.errors import RailingsError, StreamInterrupted
from railings.gateway.client_side import answer
from railings.gateway.decoding import (
    UNREADABLE_CODE,
    Unreadable,
    stream_decoder,
    unreadable_message,
)
from railings.gateway.judge import Ending, StreamJudge, cut_calls
from railings.gateway.metrics import Metrics
from railings.gateway.record import TurnRecord
from railings.gateway.shapes import error_body
from railings.gateway.upstream import response_headers
from railings.transport.coding import BodyDecoder
from railings.transport.config import Timeouts
from railings.transport.errors_map import (
    BOUNDARY,
    error_from_response,
    idle_error,
    map_stream_exception,
)
from railings.transport.gaps import GapWatch, Silence
from railings.transport.response import is_event_stream, read_bounded
from railings.transport.retry import Retrier

__all__ = ["Attempt", "forward_stream", "is_event_stream"]

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Attempt = Callable[[], Awaitable[httpx2.Response | RailingsError]]


async def forward_stream(
    record: TurnRecord,
    response: httpx2.Response,
    *,
    retrier: Retrier,
    attempt: Attempt,
    send: Send,
    gone: asyncio.Event,
    refuse_cut_calls: bool,
    timeouts: Timeouts,
    metrics: Metrics,
    labelled: bool = True,
) -> None:
    """Send the client the judged stream of ``response`` (and of any resend).
    ``labelled``: False for a 2xx answer not labelled ``text/event-stream`` (the module
    docstring)."""
    try:
        decoder = _decoder(response)
    except Unreadable as exc:
        await response.aclose()
        await _refuse_unreadable(record, unreadable_message(exc), send, metrics)
        return
    headers = [
        (name, value)
        for name, value in response_headers(response.headers.raw, keep_length=False)
        if name != b"content-encoding"  # the client gets the decoded bytes
        and (labelled or name != b"content-type")
    ]
    if not labelled:
        headers.append((b"content-type", b"text/event-stream; charset=utf-8"))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    judge = StreamJudge(
        record.provider, refuse_cut_calls=refuse_cut_calls, max_tokens=record.max_tokens
    )
    while True:
        tail = await _pump(record, response, judge, decoder, send, gone, timeouts)
        if judge.ending is not Ending.EMPTY or gone.is_set():
            break
        if not labelled:
            tail = judge.give_up(
                "the upstream's answer to a streamed request, not labelled "
                "text/event-stream, held no event; not resent: it may be an answer "
                "already generated"
            )
            break
        resent = await _resend(retrier, attempt, gone)
        if isinstance(resent, str):
            tail = judge.give_up(resent)
            break
        response = resent
        judge = StreamJudge(
            record.provider, refuse_cut_calls=refuse_cut_calls, max_tokens=record.max_tokens
        )
        try:
            decoder = _decoder(response)
        except Unreadable as exc:
            await response.aclose()
            tail = judge.unreadable(unreadable_message(exc))
            break
    if tail and not gone.is_set():
        record.sent_first_byte()
        await send({"type": "http.response.body", "body": tail, "more_body": True})
    await send({"type": "http.response.body", "body": b""})
    ending = judge.ending or Ending.PARTIAL
    turn = judge.turn()
    if ending is Ending.REFUSED and turn is not None:
        record.rejected = tuple(v.call.name for v in cut_calls(turn))
    if gone.is_set():
        metrics.inc("railings_gateway_client_disconnects_total", provider=record.provider)
        record.finish("client_gone", turn=turn)
        return
    error = turn.error.message if turn is not None and turn.error is not None else None
    record.finish(ending.value, turn=turn, error=error)
    metrics.inc("railings_gateway_streams_total", provider=record.provider, outcome=ending.value)


def _decoder(response: httpx2.Response) -> BodyDecoder | None:
    return stream_decoder(response.headers.get_list("content-encoding"))


async def _refuse_unreadable(
    record: TurnRecord, message: str, send: Send, metrics: Metrics
) -> None:
    """The first attempt's stream is in a coding the gateway cannot read: one answer in
    the provider's error shape, which tells the SDKs not to retry (each retry would be
    generated, and billed, into the same unreadable coding)."""
    record.status = 502
    record.finish(Ending.UNREADABLE.value, error=message)
    metrics.inc(
        "railings_gateway_streams_total", provider=record.provider, outcome=Ending.UNREADABLE.value
    )
    payload = error_body(record.provider, UNREADABLE_CODE, f"railings gateway: {message}")
    await answer(send, 502, payload, "application/json", [(b"x-should-retry", b"false")])


async def _resend(retrier: Retrier, attempt: Attempt, gone: asyncio.Event) -> httpx2.Response | str:
    """The next attempt's event stream, or why there is none (the attempts are spent, or
    the client left during the wait: no billed attempt is made for nobody)."""
    error: RailingsError = StreamInterrupted(INTERRUPTED_MESSAGE, empty=True)
    while True:
        wait = retrier.next_wait(error)
        if wait is None:
            detail = INTERRUPTED_MESSAGE if isinstance(error, StreamInterrupted) else error.message
            return f"{detail} (after {retrier.attempt} attempts)"
        await asyncio.sleep(wait)
        if gone.is_set():
            return "the client left"
        retrier.advance()
        got = await attempt()
        if isinstance(got, RailingsError):
            error = got
        elif is_event_stream(got):
            return got
        else:
            data = await read_bounded(got)
            error = error_from_response(got.status_code, got.headers, data)


async def _pump(
    record: TurnRecord,
    response: httpx2.Response,
    judge: StreamJudge,
    decoder: BodyDecoder | None,
    send: Send,
    gone: asyncio.Event,
    timeouts: Timeouts,
) -> bytes:
    """Forward one attempt's body through ``judge``; returns its last bytes.

    A coded body (``decoder``) is judged in the decoder's pieces (at most 1 MiB each,
    decoded as they are judged and sent); a body that stops decoding ends the attempt
    as :meth:`StreamJudge.unreadable` says.

    The silences are timed as the transport times them (one lazy timer,
    :class:`~railings.transport.gaps.GapWatch`): before the first content a model may
    think in silence for up to ``first_byte``; once content flows, ``idle``. A
    silence past either ends the attempt (Empty: resent; Partial: the error event).
    """
    chunks = response.aiter_raw()
    watch = GapWatch()
    reason = broken = None
    gap: float | None = None
    try:
        while True:
            gap = timeouts.idle if judge.committed else timeouts.first_byte
            try:
                chunk: bytes | None = await watch.read(chunks, gap, None)
            except StopAsyncIteration:
                chunk = None
            if decoder is None:
                if chunk is None:
                    break
                pieces: Iterable[bytes] = (chunk,)
            else:  # the pieces are made (and inflated) one at a time, as they are sent
                pieces = decoder.close() if chunk is None else decoder.feed(chunk)
            for piece in pieces:
                out = judge.feed(piece)
                if out:
                    record.sent_first_byte()
                    await send({"type": "http.response.body", "body": out, "more_body": True})
                if judge.done or gone.is_set():
                    break
            if chunk is None or judge.done or gone.is_set():
                break
    except zlib.error as exc:
        broken = f"the body does not decode as its content-encoding says ({exc})"
    except Silence:
        reason = idle_error(gap or 0.0, empty=not judge.committed).message
    except BOUNDARY as exc:
        # The socket's read timeout (first_byte) is only a backstop behind the GapWatch.
        reason = map_stream_exception(exc, empty=not judge.committed, idle_seconds=gap).message
    finally:
        watch.close()
        if isinstance(chunks, AsyncGenerator):
            await chunks.aclose()
        await response.aclose()
    if broken is not None:
        return judge.unreadable(broken)
    return judge.close(reason)
