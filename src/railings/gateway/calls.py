"""One model call through the gateway: its attempts, as the attempt machine decides them.

Theory of operation. As in railings' own client (:mod:`railings.transport.client`),
each attempt's ending -- Complete, Partial, or Empty (a connection that failed is
Empty too) -- goes to the sans-IO :class:`~railings.transport.machine.AttemptMachine`,
and this module carries out its decision: finish, retry after a wait (the
:class:`~railings.transport.retry.RetryPolicy`: attempts, deadline, jitter, the
upstream's ``retry-after``), replay over HTTP/1.1 after an HTTP/2 protocol failure
(and every later request too, :class:`~.upstream.Clients`), or give up. The
gateway's own part is what its I/O requires. The first answer says what the client
gets: a 2xx event stream, or any 2xx answer to a request that asked to stream, is
the client's stream, head first (:mod:`.streaming`); a 2xx JSON answer is judged
whole (:mod:`.answer`); any other answer passes through as it came (:mod:`.relay`),
with ``x-should-retry: false`` once the gateway resent. A stream reports its ending
only while nothing of it reached the client: only then can it be resent. Giving up
is a ``502`` in the provider's shape with ``x-should-retry: false``, or, once the
head went out, the stream's error event.

A request that asks the provider to keep its response (Responses' ``background: true``,
:class:`~railings.providers.base.Resumption`) is resumed when its stream breaks, Partial
or Empty alike, as the machine decides (``Resume``, within the policy's attempts): ``GET
{url}/{id}?stream=true&starting_after=N`` with the client's headers, and the client's
stream goes on where it stopped (:mod:`.streaming`). A refused resume ends the turn as it
was (:func:`~railings.turn.resume.unresumed`); a resend first cancels the kept response
(``cancel``), and so does a client that leaves before it got the response's id.

The gateway adds no ``stream_options`` to a request, so the machine's resend without
them is off: a client's own ``stream_options`` that the upstream refuses is passed on
as refused, never silently dropped from what the client asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from dataclasses import dataclass, field
from pathlib import Path

import httpx2

from railings.errors import RailingsError, TotalTimeout
from railings.gateway.answer import forward_answer
from railings.gateway.client_side import NO_RETRY, Send, answer
from railings.gateway.metrics import Metrics
from railings.gateway.record import TurnRecord
from railings.gateway.relay import open_upstream, relay
from railings.gateway.shapes import INTERRUPTED_CODE, error_body
from railings.gateway.streaming import JudgedStream
from railings.gateway.upstream import Clients
from railings.profiles import choose, label
from railings.providers import spec
from railings.providers.base import Resumption
from railings.transport.config import Timeouts
from railings.transport.context import DEFAULT_CONTEXT
from railings.transport.errors_map import BOUNDARY, error_from_response, map_exception
from railings.transport.machine import (
    AttemptMachine,
    Complete,
    Decision,
    Empty,
    Partial,
    Raise,
    ReplayOverHTTP1,
    Resume,
    Retry,
)
from railings.transport.response import is_event_stream, read_bounded, within
from railings.transport.retry import RetryPolicy
from railings.turn.ending import AttemptOutcome
from railings.turn.profile import Profile
from railings.turn.resume import ResumePoint, unresumed

__all__ = ["ModelCalls"]


class _Answered(enum.Enum):
    ANSWERED = "answered"  # the client was answered whole: no stream to end


_ANSWERED = _Answered.ANSWERED

# How long cancelling a kept response nobody will read may take (less than the gateway's
# own drain at shutdown, after which its upstream clients close).
_CANCEL_WAIT = 3.0


@dataclass(slots=True)
class _Reading:
    """One model call's reading across its attempts: the request and the client it
    answers (``send``, ``gone``), the client's ``stream`` once it started, and the
    ``point`` the next attempt resumes a kept response from (None: it sends the
    request), with the ``previous`` outcome that carried it."""

    record: TurnRecord
    url: str
    headers: list[tuple[bytes, bytes]]
    body: bytes
    send: Send
    gone: asyncio.Event
    asked_stream: bool
    keeps: bool
    stream: JudgedStream | None = None
    point: ResumePoint | None = None
    previous: Partial | Empty | None = None
    given_up: bool = False  # the attempts ran out: nobody will read what is kept
    cancelling: asyncio.Future[None] | None = None  # the one cancel of the kept response
    bodiless: list[tuple[bytes, bytes]] = field(init=False)  # for a GET or a cancel

    def __post_init__(self) -> None:
        self.bodiless = [(n, v) for n, v in self.headers if n.lower() != b"content-type"]

    @property
    def resumption(self) -> Resumption:
        """How the wire reads a kept response again (a point exists only where it has one)."""
        resumption = spec(self.record.provider).resumption
        assert resumption is not None
        return resumption

    def below(self, path: str) -> str:
        """The URL of ``path`` below the request URL (:meth:`Resumption.below`)."""
        return Resumption.below(self.url, path)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCalls:
    """How a gateway makes its model calls: its upstream clients, its counters, the
    retry policy, the timeouts, the cut-call rule and the bound on a whole answer."""

    clients: Clients
    metrics: Metrics
    retry: RetryPolicy
    timeouts: Timeouts
    refuse_cut_calls: bool
    max_answer: int
    profile: Profile | str | Path | None = None

    async def run(
        self,
        record: TurnRecord,
        url: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        send: Send,
        gone: asyncio.Event,
        *,
        asked_stream: bool,
        keeps: bool = False,
    ) -> None:
        """Answer the client of ``record``'s call: attempts until the machine finishes.
        ``keeps``: the request asked the provider to keep the response, which is then
        resumed when its stream breaks, and cancelled when nobody will read it."""
        reading = _Reading(record, url, headers, body, send, gone, asked_stream, keeps)
        try:
            await self._attempts(reading)
            if gone.is_set() or reading.given_up:
                await self._abandon(reading)
        except asyncio.CancelledError:
            # The client left (or the gateway stops) mid-call, or once it had its answer
            # while the cancel above was on its way: that one cancel is waited for.
            await self._abandon(reading)
            raise

    async def _attempts(self, reading: _Reading) -> None:
        machine = AttemptMachine(self.retry, zero_waits=DEFAULT_CONTEXT.zero_waits)
        while True:
            machine.begin()
            outcome = await self._attempt(reading, machine)
            if outcome is _ANSWERED:
                return  # answered as it came, judged whole, or a 502
            if outcome is None:
                break  # the client has its answer
            judge = reading.stream.judge if reading.stream is not None else None
            kept = judge.kept if reading.keeps and judge is not None else None
            decision = machine.decide(outcome, kept=kept)
            if decision.http2_failure is not None:
                self.clients.fallback.mark(decision.http2_failure)  # from now on: HTTP/1.1
            reading.point = None
            again = await self._carry_out(reading, decision, outcome, machine)
            if again is _ANSWERED:
                return
            if not again:
                break
        if reading.stream is not None:
            await reading.stream.end()
        elif reading.gone.is_set():
            reading.record.finish("client_gone")

    async def _attempt(
        self, reading: _Reading, machine: AttemptMachine
    ) -> AttemptOutcome | _Answered | None:
        """One attempt: the request (or, to resume, the GET that streams the kept response
        again), then its body judged. Its outcome for the machine; None: the client has
        its answer; ``_ANSWERED``: it was answered whole."""
        record, url = reading.record, reading.url
        http2 = url.startswith("https://") and self.clients.http2  # HTTP/2 only over TLS
        total = self.timeouts.total
        deadline = asyncio.get_running_loop().time() + total if total else None
        point = reading.point
        if point is None:
            got = await self._send(
                record, record.method, url, reading.headers, reading.body, deadline
            )
        else:  # the same generation, streamed again after the point: no body
            path = reading.below(reading.resumption.stream_path(point.response_id, point.after))
            got = await self._send(record, "GET", path, reading.bodiless, b"", deadline)
        if isinstance(got, RailingsError):
            return self._failed(reading, got, http2)
        machine.responded(got.http_version)
        over_http2 = http2 and got.http_version == "HTTP/2"
        stream = reading.stream
        if stream is not None and not is_event_stream(got):
            # A resend (or a resume) answered with no stream: one more failed attempt.
            data = await read_bounded(got)
            refused = error_from_response(got.status_code, got.headers, data)
            return self._failed(reading, refused, over_http2)
        if stream is None:
            stream = await self._first(reading, got, machine)
            if stream is None:
                return _ANSWERED
            reading.stream = stream
        if point is not None:
            self._resumed(record, "streamed")
        return await stream.attempt(
            got, deadline=deadline, over_http2=over_http2, keeps=reading.keeps, resuming=point
        )

    async def _carry_out(
        self,
        reading: _Reading,
        decision: Decision,
        outcome: AttemptOutcome,
        machine: AttemptMachine,
    ) -> bool | _Answered:
        """Do what the machine decided; True: another attempt follows."""
        stream = reading.stream
        match decision:
            case Resume(point=point, wait=wait) if stream is not None:
                # Nothing is generated twice: the broken attempt's error event is dropped,
                # and the kept response is read again on the client's behalf.
                stream.resuming()
                assert not isinstance(outcome, Complete)
                reading.point, reading.previous = point, outcome
                await asyncio.sleep(wait)
            case Retry() | ReplayOverHTTP1():
                # A replay goes over HTTP/1.1 (the fallback is marked); a retry after its
                # wait, a kept response cancelled first: it would be paid for twice.
                if decision.cancel is not None:
                    await self._cancel(reading, decision.cancel)
                if stream is not None and stream.committed:
                    return False  # what reached the client stays the client's: no resend
                if isinstance(decision, Retry):
                    await asyncio.sleep(decision.wait)
            case Raise(error=error):
                if stream is None:
                    await self._unreachable(reading.record, error, reading.send)
                    return _ANSWERED
                stream.give_up(error, machine.attempt)
                reading.given_up = True  # a kept response is cancelled once the client has this
                return False
            case _:
                return False  # Finish (never ResendWithoutUsage: drop_usage is off)
        # No attempt for a client that left meanwhile: nothing billed for nobody.
        return not reading.gone.is_set()

    def _failed(self, reading: _Reading, error: RailingsError, http2: bool) -> AttemptOutcome:
        """An attempt that got no stream: Empty, or, for a resume, the outcome
        :func:`~railings.turn.resume.unresumed` says (refused: the turn ends as it was)."""
        previous = reading.previous
        if reading.point is None or previous is None or reading.stream is None:
            return Empty(error=error, over_http2=http2)
        outcome = unresumed(previous, error)
        self._resumed(reading.record, "failed" if outcome.resume is not None else "refused")
        reading.stream.unresumed(outcome)
        return outcome

    def _resumed(self, record: TurnRecord, outcome: str) -> None:
        self.metrics.inc(
            "railings_gateway_resumes_total", provider=record.provider, outcome=outcome
        )

    async def _cancel(self, reading: _Reading, response_id: str) -> None:
        """Cancel the kept response ``response_id`` (best effort, bounded: the client's
        answer does not depend on it)."""
        target = reading.below(reading.resumption.cancel_path(response_id))
        # RuntimeError: the upstream clients closed under it (the gateway stopping).
        with contextlib.suppress(*BOUNDARY, TimeoutError, RuntimeError):
            async with asyncio.timeout(_CANCEL_WAIT):
                pool = self.clients.next()
                response = await open_upstream(pool, "POST", target, reading.bodiless, b"")
                await response.aclose()

    async def _abandon(self, reading: _Reading) -> None:
        """A kept response still running upstream is cancelled when nobody will read it:
        the attempts ran out before anything reached the client, or the client left
        before it did. A client that got the response's first event has its id, and
        may read it again itself (through the gateway too): the response is its own."""
        if not reading.keeps:
            return
        judge = reading.stream.judge if reading.stream is not None else None
        shown = (judge is not None and judge.committed) or (
            reading.point is not None and reading.point.shown
        )
        if shown and not reading.given_up:
            return
        kept = judge.kept if judge is not None else None
        if kept is None and reading.point is not None:
            kept = reading.point.response_id
        if kept is None:
            return
        # One cancel, whoever asks (the call's end, then the client leaving while it is on
        # its way): shielded, so leaving does not cut it short.
        if reading.cancelling is None:
            reading.cancelling = asyncio.ensure_future(self._cancel(reading, kept))
        await asyncio.shield(reading.cancelling)

    async def _send(
        self,
        record: TurnRecord,
        method: str,
        url: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        deadline: float | None,
    ) -> httpx2.Response | RailingsError:
        """One request upstream: its answer, head read and body not yet, or what failed."""
        record.attempts += 1
        self.metrics.inc("railings_gateway_upstream_attempts_total", provider=record.provider)
        pool = self.clients.next()
        error: RailingsError
        try:
            return await within(open_upstream(pool, method, url, headers, body), deadline)
        except TimeoutError as exc:  # before BOUNDARY: TimeoutError is an OSError
            total = self.timeouts.total or 0
            error = TotalTimeout(f"total timeout of {total:g} s passed before the response")
            error.__cause__ = exc
        except BOUNDARY as exc:
            error = map_exception(exc)
            error.__cause__ = exc  # the chain the HTTP/2 fallback reads
        return error

    async def _first(
        self, reading: _Reading, response: httpx2.Response, machine: AttemptMachine
    ) -> JudgedStream | None:
        """The first answer: the client's stream, started; or None once it was answered."""
        record, send = reading.record, reading.send
        record.status = response.status_code
        success = 200 <= response.status_code < 300
        labelled = is_event_stream(response)
        # A 2xx answer to a request that asked to stream is judged as a stream whatever its
        # label: the openai SDK reads such a body as events anyway.
        if labelled or (success and reading.asked_stream):
            record.stream = True
            judged_by = choose(self.profile, str(response.request.url), record.model)
            record.profile = label(judged_by)
            stream = JudgedStream(
                record,
                send,
                reading.gone,
                refuse_cut_calls=self.refuse_cut_calls,
                timeouts=self.timeouts,
                metrics=self.metrics,
                labelled=labelled,
                profile=judged_by,
            )
            return stream if await stream.start(response) else None
        if success and "json" in response.headers.get("content-type", "").lower():
            await forward_answer(
                record,
                response,
                send,
                refuse_cut_calls=self.refuse_cut_calls,
                limit=self.max_answer,
                metrics=self.metrics,
            )
            return None
        failed = response.status_code >= 400
        record.finish("upstream_status" if failed else "passed")
        # After the gateway's own resends the retry policy is spent: an SDK that retried
        # this error would send the whole sequence again.
        await relay(response, send, record, no_retry=failed and machine.attempt > 1)
        return None

    async def _unreachable(self, record: TurnRecord, error: RailingsError, send: Send) -> None:
        """Every attempt failed before an answer: a 502 in the provider's shape."""
        record.status = 502
        record.finish("error", error=error.message)
        message = f"railings gateway: upstream failed: {error.message}"
        payload = error_body(record.provider, INTERRUPTED_CODE, message)
        # The retry policy was applied here: an SDK's own retries on top would multiply
        # the upstream's requests (and its bills) by theirs.
        await answer(send, 502, payload, "application/json", NO_RETRY)
