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

The gateway adds no ``stream_options`` to a request, so the machine's resend without
them is off: a client's own ``stream_options`` that the upstream refuses is passed on
as refused, never silently dropped from what the client asked for.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
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
from railings.transport.config import Timeouts
from railings.transport.context import DEFAULT_CONTEXT
from railings.transport.errors_map import BOUNDARY, error_from_response, map_exception
from railings.transport.machine import AttemptMachine, Empty, Raise, ReplayOverHTTP1, Retry
from railings.transport.response import is_event_stream, read_bounded, within
from railings.transport.retry import RetryPolicy
from railings.turn.ending import AttemptOutcome
from railings.turn.profile import Profile

__all__ = ["ModelCalls"]


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
    ) -> None:
        """Answer the client of ``record``'s call: attempts until the machine finishes."""
        machine = AttemptMachine(self.retry, zero_waits=DEFAULT_CONTEXT.zero_waits)
        stream: JudgedStream | None = None
        tls = url.startswith("https://")  # HTTP/2 only ever over TLS (ALPN)
        while True:
            machine.begin()
            http2 = tls and self.clients.http2
            total = self.timeouts.total
            deadline = asyncio.get_running_loop().time() + total if total else None
            got = await self._send(record, url, headers, body, deadline)
            outcome: AttemptOutcome | None
            if isinstance(got, RailingsError):
                outcome = Empty(error=got, over_http2=http2)
            else:
                machine.responded(got.http_version)
                over_http2 = http2 and got.http_version == "HTTP/2"
                if stream is not None and not is_event_stream(got):
                    # A resend answered with no stream: one more failed attempt.
                    data = await read_bounded(got)
                    refused = error_from_response(got.status_code, got.headers, data)
                    outcome = Empty(error=refused, over_http2=over_http2)
                else:
                    if stream is None:
                        stream = await self._first(record, got, send, gone, asked_stream, machine)
                        if stream is None:
                            return  # answered as it came, or judged whole
                    outcome = await stream.attempt(got, deadline=deadline, over_http2=over_http2)
            if outcome is None:
                break  # the client has its answer
            decision = machine.decide(outcome)
            if decision.http2_failure is not None:
                self.clients.fallback.mark(decision.http2_failure)  # from now on: HTTP/1.1
            match decision:
                case Retry() | ReplayOverHTTP1():
                    # A replay goes over HTTP/1.1 (the fallback is marked); a retry after
                    # its wait. Neither for a client that left meanwhile: no billed
                    # attempt for nobody.
                    if isinstance(decision, Retry):
                        await asyncio.sleep(decision.wait)
                    if gone.is_set():
                        break
                case Raise(error=error):
                    if stream is None:
                        await self._unreachable(record, error, send)
                        return
                    stream.give_up(error, machine.attempt)
                    break
                case _:
                    break  # Finish (never ResendWithoutUsage: drop_usage is off)
        if stream is not None:
            await stream.end()
        elif gone.is_set():
            record.finish("client_gone")

    async def _send(
        self,
        record: TurnRecord,
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
            return await within(open_upstream(pool, "POST", url, headers, body), deadline)
        except TimeoutError as exc:  # before BOUNDARY: TimeoutError is an OSError
            total = self.timeouts.total or 0
            error = TotalTimeout(f"total timeout of {total:g} s passed before the response")
            error.__cause__ = exc
        except BOUNDARY as exc:
            error = map_exception(exc)
            error.__cause__ = exc  # the chain the HTTP/2 fallback reads
        return error

    async def _first(
        self,
        record: TurnRecord,
        response: httpx2.Response,
        send: Send,
        gone: asyncio.Event,
        asked_stream: bool,
        machine: AttemptMachine,
    ) -> JudgedStream | None:
        """The first answer: the client's stream, started; or None once it was answered."""
        record.status = response.status_code
        success = 200 <= response.status_code < 300
        labelled = is_event_stream(response)
        # A 2xx answer to a request that asked to stream is judged as a stream whatever its
        # label: the openai SDK reads such a body as events anyway.
        if labelled or (success and asked_stream):
            record.stream = True
            judged_by = choose(self.profile, str(response.request.url), record.model)
            record.profile = label(judged_by)
            stream = JudgedStream(
                record,
                send,
                gone,
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
