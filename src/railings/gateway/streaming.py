"""One streamed model answer for the client: its head once, then each attempt's body judged.

The response head of the first 2xx event stream goes to the client at once (an SDK
waits for it before it reads anything). Each attempt's body then passes through a
fresh :class:`~railings.gateway.judge.StreamJudge`, its reads timed by the attempt's
clocks, made as railings' client makes them (:func:`railings.transport.body.clocks`,
on one lazy timer): before the first content a model may think in silence for
``first_byte``; once content flows, a silence past ``idle``, or keep-alives alone
past ``content_idle``, end the attempt. Its ending goes to the attempt machine
(:mod:`railings.gateway.calls`) only while nothing of it reached the client.

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

A kept response that broke is resumed (:mod:`railings.gateway.calls` carries out the
machine's decision): the broken attempt's error event is never sent, and the resumed
attempt's judge reads the transcript first and sends only what the client has not had
(:meth:`~railings.gateway.judge.StreamJudge.resume`), so the client reads one stream.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncGenerator, Iterable
from dataclasses import replace

import httpx2

from railings.classify import interrupted_message
from railings.errors import RailingsError
from railings.gateway.client_side import Send, answer
from railings.gateway.decoding import UNREADABLE_CODE, Unreadable, stream_decoder
from railings.gateway.decoding import unreadable_message as _unreadable
from railings.gateway.judge import Ending, StreamJudge, cut_calls
from railings.gateway.metrics import Metrics
from railings.gateway.record import TurnRecord
from railings.gateway.shapes import INTERRUPTED_CODE, error_body
from railings.gateway.upstream import response_headers
from railings.transport.body import STOPS, bounded_read, clocks, stopped
from railings.transport.coding import BodyDecoder
from railings.transport.config import Timeouts
from railings.transport.gaps import GapWatch
from railings.turn.ending import AttemptOutcome, Complete, Empty, Partial
from railings.turn.profile import WIRE, Profile
from railings.turn.resume import ResumePoint

__all__ = ["JudgedStream"]

_NOT_RESENT = (
    "the upstream's answer to a streamed request, not labelled text/event-stream, held no "
    "event; not resent: it may be an answer already generated"
)


class JudgedStream:
    """The client's response to one streamed model call, across its attempts.
    ``labelled``: False for a 2xx answer not labelled ``text/event-stream`` (the module
    docstring)."""

    def __init__(
        self,
        record: TurnRecord,
        send: Send,
        gone: asyncio.Event,
        *,
        refuse_cut_calls: bool,
        timeouts: Timeouts,
        metrics: Metrics,
        labelled: bool = True,
        profile: Profile = WIRE,
    ) -> None:
        self.record = record
        self._profile = profile
        self.judge: StreamJudge | None = None
        self._send = send
        self._gone = gone
        self._refuse = refuse_cut_calls
        self._timeouts = timeouts
        self._metrics = metrics
        self._labelled = labelled
        self._tail = b""  # the last bytes of the response
        self._ending: Ending | None = None  # when the give-up says more than the judge
        self._error: str | None = None  # when the journal's error is not the judge's
        self.sent = 0  # body bytes sent to the client
        self.resumed: tuple[int, ...] = ()  # the events after which the turn was resumed

    async def start(self, response: httpx2.Response) -> bool:
        """Send the response head of ``response``, the first event stream; False when it
        was answered instead (a coding the gateway cannot read)."""
        try:
            _decoder(response)
        except Unreadable as exc:
            await response.aclose()
            await self._refuse_unreadable(_unreadable(exc))
            return False
        labelled = self._labelled
        headers = [
            (name, value)
            for name, value in response_headers(response.headers.raw, keep_length=False)
            if name != b"content-encoding"  # the client gets the decoded bytes
            and (labelled or name != b"content-type")
        ]
        if not labelled:
            headers.append((b"content-type", b"text/event-stream; charset=utf-8"))
        status = response.status_code
        await self._send({"type": "http.response.start", "status": status, "headers": headers})
        return True

    async def attempt(
        self,
        response: httpx2.Response,
        *,
        deadline: float | None,
        over_http2: bool,
        keeps: bool = False,
        resuming: ResumePoint | None = None,
    ) -> AttemptOutcome | None:
        """Judge one attempt's body, sending the client what may leave. Returns how the
        attempt ended for the attempt machine, or None when the client's answer is
        already what it gets (something of it left, or it must not be resent).
        ``keeps``: the provider keeps the response; ``resuming``: this body streams it
        again after the point."""
        record = self.record
        now = asyncio.get_running_loop().time()
        judge = self.judge = StreamJudge(
            record.provider,
            refuse_cut_calls=self._refuse,
            max_tokens=record.max_tokens,
            request_chars=record.request_chars,
            clocks=clocks(self._timeouts, deadline),
            now=now,
            over_http2=over_http2,
            profile=self._profile,
            keeps=keeps or resuming is not None,
        )
        if resuming is not None:
            record.resumed = self.resumed = (*self.resumed, resuming.after)
            unseen = judge.resume(resuming, self.sent, now)
            if unseen and not self._gone.is_set():
                await self._body(unseen)
        try:
            decoder = _decoder(response)
        except Unreadable as exc:  # a resend's: the first one's was refused by start()
            await response.aclose()
            self._tail = judge.unreadable(_unreadable(exc))
            return None
        self._tail = await self._pump(response, judge, decoder)
        if judge.ending is Ending.EMPTY and not self._labelled:
            self._tail = judge.give_up(_NOT_RESENT)
            return None
        outcome = judge.outcome
        if self._gone.is_set():
            return None
        # Empty while nothing left: the machine may resend. Complete and Partial: it says
        # Finish (and notes an HTTP/2 failure). A kept response that broke: it may say
        # Resume. Anything else is the client's answer.
        if judge.ending is Ending.EMPTY or isinstance(outcome, (Complete, Partial)):
            return outcome
        if isinstance(outcome, Empty) and outcome.resume is not None:
            return outcome  # released, without content: resumed, never resent
        return None

    @property
    def committed(self) -> bool:
        """True once body bytes reached the client: the request is never sent again."""
        return self.sent > 0

    def resuming(self) -> None:
        """The last attempt is resumed: its error event is not sent."""
        self._tail = b""
        self._error = None

    def unresumed(self, outcome: Partial | Empty) -> None:
        """Reading the kept response again failed (``outcome``, from
        :func:`railings.turn.resume.unresumed`): a Partial ends with the error event
        saying so, unless the attempt machine resumes it once more."""
        if isinstance(outcome, Partial) and self.judge is not None:
            message = f"railings gateway: {interrupted_message(outcome.interruption.message)}"
            self._tail = self.judge.error_event(INTERRUPTED_CODE, message)
            self._error = outcome.interruption.message

    def give_up(self, error: RailingsError, attempts: int) -> None:
        """No attempt follows: the stream ends with the provider's own error event, or the
        gateway's saying why."""
        judge = self.judge
        assert judge is not None  # an attempt ran before any decision
        # For the client, every give-up is a stream that ended without its proof.
        detail = interrupted_message(error.message)
        self._tail = judge.give_up(f"{detail} (after {attempts} attempts)")
        if judge.provider_error and not error.retryable:
            self._ending = Ending.ERROR  # the provider's final word, passed on as it came

    async def end(self) -> None:
        """Send the last bytes and end the response; record how it ended."""
        record, judge, gone = self.record, self.judge, self._gone
        if self._tail and not gone.is_set():
            await self._body(self._tail)
        await self._send({"type": "http.response.body", "body": b""})
        turn = judge.turn() if judge is not None else None
        if turn is not None and self.resumed:
            turn = replace(turn, resumed=self.resumed)
        ending = self._ending or (judge.ending if judge is not None else None) or Ending.PARTIAL
        if ending is Ending.REFUSED and turn is not None:
            record.rejected = tuple(v.call.name for v in cut_calls(turn))
        metrics, provider = self._metrics, record.provider
        if gone.is_set():
            metrics.inc("railings_gateway_client_disconnects_total", provider=provider)
            record.finish("client_gone", turn=turn)
            return
        error = turn.error.message if turn is not None and turn.error is not None else None
        record.finish(ending.value, turn=turn, error=self._error or error)
        metrics.inc(
            "railings_gateway_streams_total",
            provider=provider,
            outcome=ending.value,
            profile=record.profile,
        )

    async def _refuse_unreadable(self, message: str) -> None:
        """The first attempt's stream is in a coding the gateway cannot read: one answer in
        the provider's error shape, which tells the SDKs not to retry (each retry would be
        generated, and billed, into the same unreadable coding)."""
        record, outcome = self.record, Ending.UNREADABLE.value
        record.status = 502
        record.finish(outcome, error=message)
        self._metrics.inc(
            "railings_gateway_streams_total", provider=record.provider, outcome=outcome
        )
        payload = error_body(record.provider, UNREADABLE_CODE, f"railings gateway: {message}")
        await answer(self._send, 502, payload, "application/json", [(b"x-should-retry", b"false")])

    async def _pump(
        self, response: httpx2.Response, judge: StreamJudge, decoder: BodyDecoder | None
    ) -> bytes:
        """Forward one attempt's body through ``judge``; returns its last bytes.

        Each read waits as long as the attempt's clocks allow (``read_timeout``); a read
        that found nothing in time ends the attempt (``timed_out``), and so does a body
        that broke (``broke``). A coded body (``decoder``) is judged in the decoder's
        pieces (at most 1 MiB each, decoded as they are judged and sent); a body that
        stops decoding ends the attempt as :meth:`StreamJudge.unreadable` says.
        """
        gone = self._gone
        attempt = judge.attempt
        time = asyncio.get_running_loop().time
        chunks = response.aiter_raw()
        watch = GapWatch()
        broken = None
        try:
            while True:
                try:
                    chunk: bytes | None = await bounded_read(watch, chunks, attempt, time())
                except StopAsyncIteration:
                    chunk = None
                if decoder is None:
                    if chunk is None:
                        break
                    pieces: Iterable[bytes] = (chunk,)
                else:  # the pieces are made (and inflated) one at a time, as they are sent
                    pieces = decoder.close() if chunk is None else decoder.feed(chunk)
                for piece in pieces:
                    out = judge.feed(piece, time())
                    if out:
                        await self._body(out)
                    if judge.done or gone.is_set():
                        break
                if chunk is None or judge.done or gone.is_set():
                    break
        except zlib.error as exc:
            broken = f"the body does not decode as its content-encoding says ({exc})"
        except STOPS as exc:
            stopped(attempt, exc, self._timeouts, time())
        finally:
            watch.close()
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()
            await response.aclose()
        if broken is not None:
            return judge.unreadable(broken)
        return judge.close()

    async def _body(self, data: bytes) -> None:
        """Send ``data``, more of the response body, to the client."""
        self.record.sent_first_byte()
        self.sent += len(data)
        await self._send({"type": "http.response.body", "body": data, "more_body": True})


def _decoder(response: httpx2.Response) -> BodyDecoder | None:
    return stream_decoder(response.headers.get_list("content-encoding"))
