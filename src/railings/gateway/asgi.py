"""The gateway as an ASGI application: railings' proof rule in front of any client.

``railings.gateway.app(upstream)`` returns the app; ``railings gateway`` runs it on
uvicorn, and any ASGI server can run it too. What it does with each request:

* ``GET /_railings/health``: 200. ``GET /_railings/metrics``: the Prometheus text.
* ``POST`` to a model path (``.../chat/completions``, ``.../responses``,
  ``.../messages``): one model call (:mod:`railings.gateway.calls`), its attempts as
  railings' attempt machine decides them; a streamed answer is judged as it passes
  (:mod:`railings.gateway.judge`), a JSON answer whole, and any other answer passes
  through as it came. With ``cut_calls="refuse"`` a Chat request for ``n`` > 1 is
  answered 400: the judge reads one choice. A kept response (Responses'
  ``background: true``) whose stream breaks is resumed for the client.
* ``GET .../responses/{id}?stream=true``: a client's own resume of a kept response,
  judged like any stream.
* Anything else: passed through untouched, body and headers.

Before anything goes upstream the request path loses its dot segments and a path
that would climb out of the upstream's prefix is refused (:mod:`.paths`), and the
body is read within the bounds of :class:`~railings.gateway.limits.Limits`
(413, 408, 503). The request's work then runs beside a watch on the client: a
client that leaves cancels it wherever it waits, which closes the upstream read
on every path. Every error the gateway answers of its own says whether to retry
(``x-should-retry``; ``retry-after`` on a 503), so an SDK's retries never
multiply the gateway's resends.

The app keeps no state shared between requests but its pooled upstream clients,
its counters, the count of request bytes held (:class:`~.limits.Budget`) and its
journal writer: replicas behind a load balancer need nothing in common.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from pathlib import Path
from typing import Any, Literal

import httpx2

from railings.errors import ConfigurationError
from railings.gateway.calls import ModelCalls
from railings.gateway.client_side import (
    Receive,
    Refusal,
    Scope,
    Send,
    answer,
    many_choices,
    read_body,
    refuse,
    request_facts,
    until_gone,
)
from railings.gateway.limits import Budget, Limits
from railings.gateway.metrics import Metrics, count_usage
from railings.gateway.paths import BadPath, judged_provider, route
from railings.gateway.record import INTERRUPTED, GatewayJournal, TurnRecord
from railings.gateway.relay import UpstreamBroke as UpstreamBroke
from railings.gateway.relay import pass_through
from railings.gateway.telemetry import record_span
from railings.gateway.upstream import (
    NETWORKS,
    Clients,
    Network,
    header_secrets,
    request_headers,
    upstream_base,
    upstream_shown,
)
from railings.profiles import choose, read_directory
from railings.redact import register_url_secrets
from railings.secrets import RedactingFilter, install_log_redaction
from railings.transport.config import Timeouts
from railings.transport.retry import RetryPolicy
from railings.turn.profile import Profile

__all__ = ["HEALTH_PATH", "METRICS_PATH", "Gateway", "app"]

_DRAIN = 5.0  # seconds aclose() waits for the requests it ended to write their rows
HEALTH_PATH = "/_railings/health"
METRICS_PATH = "/_railings/metrics"
log = logging.getLogger("railings.gateway")


def app(
    upstream: str | None = None,
    *,
    cut_calls: Literal["refuse", "pass"] = "refuse",
    journal: bool | str | os.PathLike[str] = True,
    limits: Limits | None = None,
    retry: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
    tracer: Any = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    network: Network = "stock",
    verify: ssl.SSLContext | None = None,
    profile: Profile | str | os.PathLike[str] | None = None,
) -> Gateway:
    """The gateway ASGI app in front of ``upstream`` (default ``$RAILINGS_GATEWAY_UPSTREAM``).

    ``journal``: True for the default journal file, a path for another, False for
    none. ``limits``: the bounds on request bodies, stalls, what all clients hold at
    once and non-streamed answers (default :class:`~railings.gateway.limits.Limits`).
    ``retry``: how Empty attempts are resent (default :class:`RetryPolicy`).
    ``timeouts``: connect, first byte, idle and content idle (a stream's clocks, as
    the client's), total (one attempt) and write. ``tracer``: an OpenTelemetry tracer
    (default: the global provider's). ``transport``: the upstream client's httpx2
    transport. ``network``: its backend (:data:`~railings.gateway.upstream.NETWORKS`,
    default ``"stock"``).
    ``verify``: the SSL context that checks the upstream's certificate (default httpx2's).
    ``profile``: the upstream's endpoint profile (:mod:`railings.profiles`; None: the
    one matching the upstream URL and each request's model).
    """
    target = upstream or os.environ.get("RAILINGS_GATEWAY_UPSTREAM")
    if not target:
        raise ConfigurationError("the gateway needs an upstream URL")
    if cut_calls not in ("refuse", "pass"):
        raise ConfigurationError(f"cut_calls must be 'refuse' or 'pass', not {cut_calls!r}")
    if network not in NETWORKS:
        raise ConfigurationError(f"network must be one of {', '.join(NETWORKS)}, not {network!r}")
    base = upstream_base(target)
    if profile is None:
        read_directory()  # a profile file that cannot be used fails here, not per call
    book = None
    if journal is not False:
        book = GatewayJournal(None if journal is True else journal, upstream_shown(base))
    return Gateway(
        base,
        refuse_cut_calls=cut_calls == "refuse",
        journal=book,
        limits=limits or Limits(),
        retry=retry or RetryPolicy(),
        timeouts=timeouts or Timeouts(),
        tracer=tracer,
        transport=transport,
        network=network,
        verify=verify,
        profile=None if profile is None else choose(_named(profile), base),
    )


def _named(profile: Profile | str | os.PathLike[str]) -> Profile | str | Path:
    return profile if isinstance(profile, Profile | str) else Path(profile)


class Gateway:
    """The ASGI app (build it with :func:`app`). ``metrics`` holds its counters."""

    def __init__(
        self,
        upstream: str,
        *,
        refuse_cut_calls: bool,
        journal: GatewayJournal | None,
        retry: RetryPolicy,
        timeouts: Timeouts,
        tracer: Any = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        limits: Limits | None = None,
        network: Network = "stock",
        verify: ssl.SSLContext | None = None,
        profile: Profile | None = None,
    ) -> None:
        register_url_secrets(upstream)  # its user name and password: in no output
        self.upstream = upstream
        self.refuse = refuse_cut_calls
        self.journal = journal
        self.limits = limits or Limits()
        self.budget = Budget(self.limits.max_buffered)
        self.tracer = tracer
        self.metrics = Metrics()
        self.clients = Clients(timeouts, transport, network=network, verify=verify)
        self.calls = ModelCalls(
            clients=self.clients,
            metrics=self.metrics,
            retry=retry,
            timeouts=timeouts,
            refuse_cut_calls=refuse_cut_calls,
            max_answer=self.limits.max_answer,
            profile=profile,
        )
        self._closed = False
        self._active: set[asyncio.Task[Any]] = set()  # the requests being answered
        install_log_redaction()
        # A logger's filters see only its own records: the gateway's lines get their own.
        if not any(isinstance(f, RedactingFilter) for f in log.filters):
            log.addFilter(RedactingFilter())

    @property
    def buffered(self) -> int:
        """Request body bytes the gateway holds now, all clients together."""
        return self.budget.held

    @property
    def closed(self) -> bool:
        """True once :meth:`aclose` ran (the server's lifespan shutdown calls it)."""
        return self._closed

    async def aclose(self) -> None:
        """Close the upstream pool and the journal (the lifespan shutdown does it too)."""
        if self._closed:
            return
        self._closed = True
        # A request still in flight when the gateway stops (a server whose graceful wait
        # ran out, or a stop before it started) is ended first, so that its row reaches
        # the journal before the journal closes.
        pending = self._active - {asyncio.current_task()}
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=_DRAIN)
        await self.clients.aclose()
        if self.journal is not None:
            await asyncio.to_thread(self.journal.close)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point: lifespan, then each HTTP request routed and judged."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            task = asyncio.current_task()
            if task is not None:
                self._active.add(task)
            try:
                await self._http(scope, receive, send)
            finally:
                if task is not None:
                    self._active.discard(task)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- one request ---------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        if path == HEALTH_PATH and method in ("GET", "HEAD"):
            await answer(send, 200, b"ok\n", "text/plain; charset=utf-8")
            return
        if path == METRICS_PATH and method in ("GET", "HEAD"):
            text = self.metrics.render().encode()
            await answer(send, 200, text, "text/plain; version=0.0.4; charset=utf-8")
            return
        try:
            where = route(scope)
        except BadPath as exc:
            why = f"railings gateway: bad request path: {exc}"
            refusal = Refusal("bad_path", 400, "bad_request_path", why)
            await self._refuse(send, refusal, judged_provider(method, path))
            return
        provider = where.provider
        got = await read_body(receive, scope, self.limits, self.budget)
        if got is None:
            return  # the client left before its request was whole: nothing goes upstream
        if isinstance(got, Refusal):
            await self._refuse(send, got, provider)
            return
        body = got
        try:
            url = self.upstream + where.target
            headers = request_headers(scope["headers"], watched=provider is not None)
            if provider is None:
                await until_gone(
                    lambda gone: pass_through(
                        self.clients.next(), method, url, headers, body, send
                    ),
                    receive,
                )
                return
            facts = request_facts(body, provider)  # the body's one parse
            # The judge reads one choice: a request for more (Chat's ``n``) is refused
            # rather than passed with its other choices unjudged.
            if self.refuse and facts.choices > 1:
                await self._refuse(send, many_choices(facts.choices), provider)
                return
            secrets = header_secrets(scope["headers"])
            record = TurnRecord(
                provider, method, where.path, facts.model, stream=False, secrets=secrets
            )
            record.max_tokens = facts.max_tokens
            record.request_chars = facts.request_chars
            try:
                left = await until_gone(
                    lambda gone: self.calls.run(
                        record,
                        url,
                        headers,
                        body,
                        send,
                        gone,
                        # A judged GET streams a kept response again: its query asked.
                        asked_stream=facts.stream or method == "GET",
                        keeps=facts.keeps,
                    ),
                    receive,
                )
                if left:  # cancelled where it waited: the upstream read is closed
                    self.metrics.inc("railings_gateway_client_disconnects_total", provider=provider)
                    record.finish("client_gone")
            except asyncio.CancelledError:  # the gateway is stopping: the call was cut
                record.finish(INTERRUPTED)
                raise
            finally:
                self._finish(record)
        finally:
            self.budget.give(len(body))

    async def _refuse(self, send: Send, refusal: Refusal, provider: str | None) -> None:
        self.metrics.inc("railings_gateway_rejected_requests_total", reason=refusal.reason)
        await refuse(send, refusal, provider)

    def _finish(self, record: TurnRecord) -> None:
        if record.duration is None:
            record.finish(record.outcome or "error")
        labels = {"provider": record.provider}
        if record.first_byte is not None:
            self.metrics.observe(
                "railings_gateway_time_to_first_byte_seconds", record.first_byte, **labels
            )
        if record.duration is not None:
            self.metrics.observe(
                "railings_gateway_stream_duration_seconds", record.duration, **labels
            )
        if record.turn is not None:  # a judged turn: its tokens, by their source
            count_usage(self.metrics, record.provider, record.turn.usage)
        if self.journal is not None:
            self.journal.write(record)
        try:
            record_span(record, self.tracer)
        except Exception as exc:  # a broken exporter must not break the answer
            log.warning("span not recorded: %s", exc)
        log.info("%s", record.log_line())
