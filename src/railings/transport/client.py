"""The async provider client: one turn per request, proof before ending.

Theory of operation. ``stream_turn`` returns a :class:`TurnStream` whose events
come from one loop of *attempts*. Each attempt POSTs the body, maps whatever
goes wrong before the body to a railings error (one place:
:mod:`~railings.transport.errors_map`), then feeds every body chunk to the
sans-IO :class:`~railings.turn.attempt.Attempt` and passes its events on.
The reader alone decides how the stream ended; this module never makes up a
stop event. The per-chunk work (the clocks, the bounds, the held events) is
:class:`~railings.turn.attempt.Attempt`'s.

How the attempt ended -- **COMPLETE** (the proof arrived), **PARTIAL** (content
but no proof: kept, never resent) or **Empty** (nothing to keep) -- goes to the
sans-IO :class:`~railings.transport.machine.AttemptMachine`, which decides:
finish, retry after a wait (the countdown on the retry banner), replay over
HTTP/1.1, resend without ``stream_options``, or raise. This module only carries
the decision out; the rules, and their tests, are the machine's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import httpx2

from railings import __version__
from railings._extras import require
from railings.errors import (
    ConfigurationError,
    RailingsError,
)
from railings.events import StreamEvent
from railings.messages import Message, ToolSpec
from railings.providers import EncodeRequest, spec
from railings.redact import SECRET_HEADERS, register_secret, register_url_secrets
from railings.secrets import install_log_redaction
from railings.transport.banner import countdown
from railings.transport.body import STOPS, bounded_read, clocks, stopped
from railings.transport.config import ClientConfig, resumption
from railings.transport.context import DEFAULT_CONTEXT, ClientContext
from railings.transport.gaps import GapWatch
from railings.transport.kept import Kept
from railings.transport.machine import (
    AttemptMachine,
    AttemptOutcome,
    Complete,
    Decision,
    Empty,
    Finish,
    Raise,
    ReplayOverHTTP1,
    ResendWithoutUsage,
    Resume,
    Retry,
)
from railings.transport.opening import cancel_kept, open_stream
from railings.transport.response import body_chunks
from railings.transport.shards import pooled
from railings.transport.stream import TurnStream
from railings.transport.tracing import recording, traced
from railings.turn.attempt import Attempt
from railings.turn.ending import Partial
from railings.turn.limit import requested_limit
from railings.turn.resume import unresumed
from railings.turn.usage import request_chars

__all__ = ["AsyncProviderClient", "TransportFactory", "signer"]

# An error's ``received`` keeps the first 16 MiB of the body, no more: a server that
# streams keep-alive comments until the total deadline must not grow memory with time.
_RECEIVED_LIMIT = 16 * 1024 * 1024

# The transport for HTTP/2 (True) or HTTP/1.1 (False): the client asks once per version.
TransportFactory = Callable[[bool], httpx2.AsyncBaseTransport]


class AsyncProviderClient:
    """Streams turns from one endpoint of any wire in :mod:`railings.providers` (OpenAI
    Chat Completions or Responses, Anthropic, Gemini, Bedrock ConverseStream, Ollama).

    ``transport`` replaces the default httpx2 transports: one transport (the HTTP/2
    fallback is then the transport's business), or a function that returns the
    transport for HTTP/2 (``True``) or HTTP/1.1 (``False``), which keeps the fallback
    the client's. ``httpx2.MockTransport`` runs a client without a socket.
    ``context`` holds what outlives a turn -- the HTTP/2 fallback flag, the retry
    banner, the testing switch (:mod:`~railings.transport.context`); None: the
    process-wide default. Use ``async with`` or :meth:`aclose`.
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        transport: httpx2.AsyncBaseTransport | TransportFactory | None = None,
        tracer: Any = None,
        context: ClientContext | None = None,
    ) -> None:
        self.config = config
        self.context = DEFAULT_CONTEXT if context is None else context
        self._tracer = tracer  # OpenTelemetry (railings.telemetry): None is the global one
        # Its key is a secret from now on: redacted in errors, the journal and logs; so are
        # a password in the base URL and the value of every secret header configured.
        register_secret(config.api_key)
        register_url_secrets(config.base_url)
        for name, value in config.headers.items():
            if name.lower() in SECRET_HEADERS:
                register_secret(value)
        install_log_redaction()
        # How each request authenticates: the config's httpx2.Auth, else the key's header
        # (request_headers), else -- Bedrock without a key -- SigV4 (the ``bedrock`` extra;
        # without it, MissingDependency here, before any request).
        self._auth = config.auth or signer(config)
        self._transport = transport
        self._clients: dict[bool, httpx2.AsyncClient] = {}
        self._include_usage = config.include_usage is not False
        t = config.timeouts
        # read = first_byte until the headers are in; then the GapWatch times the gaps.
        # Waiting for a pooled connection has its own limit: a turn queued behind
        # max_connections others is not an unreachable server.
        self._timeout = httpx2.Timeout(
            connect=t.connect, read=t.first_byte, write=t.write, pool=t.pool
        )

    # -- lifecycle ---------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP clients opened so far (one per HTTP version used), and with them
        their connections."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()

    async def __aenter__(self) -> AsyncProviderClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _http(self, http2: bool) -> httpx2.AsyncClient:
        client = self._clients.get(http2)
        if client is None:
            size = self.config.max_connections
            given = self._transport
            if isinstance(given, httpx2.AsyncBaseTransport):
                transport = given
            elif given is not None:
                transport = given(http2)
            else:
                tls = self.config.url.startswith("https://")  # HTTP/2 only ever over TLS
                transport = pooled(http2, self.config.verify, size, tls=tls)
            client = httpx2.AsyncClient(
                transport=transport,
                timeout=self._timeout,
                # Secrets never leave their origin: a redirect is not followed (httpx2 would
                # strip only Authorization when it leaves the origin, not x-api-key, api-key
                # or a configured header, and would resend the body); _open raises instead.
                follow_redirects=False,
                headers={"user-agent": f"railings/{__version__}"},
                auth=self._auth,
            )
            self._clients[http2] = client
        return client

    def _use_http2(self) -> bool:
        own = not isinstance(self._transport, httpx2.AsyncBaseTransport)
        return own and self.config.http2 and not self.context.fallback.broken

    # -- the turn ----------------------------------------------------------------------

    def stream_turn(
        self,
        messages: Iterable[Message],
        tools: Iterable[ToolSpec] = (),
        *,
        background: bool | None = None,
        resume: bool | None = None,
    ) -> TurnStream:
        """Stream one assistant turn for ``messages``. ``background`` overrides the config:
        background work never updates the foreground retry banner. ``resume`` overrides
        the config's: ask the provider to keep the response and read a broken stream
        again (:class:`~railings.transport.config.ClientConfig`)."""
        cfg = self.config
        history, specs = tuple(messages), tuple(tools)
        keep = cfg.resume if resume is None else resume
        if keep and not cfg.resume:
            resumption(cfg.provider)  # a wire that keeps nothing: ConfigurationError
        self._body(history, specs, keep)  # a bad history fails here, not at the first event
        quiet = cfg.background if background is None else background
        machine = AttemptMachine(
            cfg.retry,
            raise_on_partial=cfg.raise_on_partial,
            # An endpoint that rejects stream_options gets the request again without it.
            drop_usage=(
                cfg.include_usage is None
                and self._include_usage
                and spec(cfg.provider).asks_for_usage
            ),
            zero_waits=self.context.zero_waits,
        )
        kept = Kept(spec(cfg.provider).resumption)
        events = self._run(self._attempts(machine, history, specs, quiet, keep, kept), kept)
        if not recording(self._tracer):  # no span to record: no extra layer per event
            return TurnStream(machine, lambda stream: events)
        return TurnStream(machine, lambda stream: traced(stream, events, self.config, self._tracer))

    def _body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], keep: bool = False
    ) -> dict[str, Any]:
        cfg = self.config
        wire = spec(cfg.provider)
        body = wire.encode(
            EncodeRequest(
                model=cfg.model,
                messages=messages,
                max_tokens=cfg.max_tokens,
                tools=tools,
                extra=cfg.extra_body,
                include_usage=self._include_usage,
                max_tokens_field=cfg.max_tokens_field,
            )
        )
        return wire.resumption.ask(body) if keep and wire.resumption else body

    async def _run(
        self, attempts: AsyncGenerator[StreamEvent, None], kept: Kept
    ) -> AsyncGenerator[StreamEvent, None]:
        """The events of ``attempts``, passed on. A kept response the caller abandons
        (closes the stream, cancels the task) is cancelled."""
        try:
            async for event in attempts:
                yield event
        except (GeneratorExit, asyncio.CancelledError):
            live = kept.live
            await attempts.aclose()  # the response closed now, not when collected
            if live is not None:
                await cancel_kept(self._http(self._use_http2()), self.config, live)
            raise
        finally:
            await attempts.aclose()

    async def _attempts(
        self,
        machine: AttemptMachine,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        background: bool,
        keep: bool,
        kept: Kept,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Drive ``machine``: one attempt per turn of the loop, its events passed on, then
        what the machine decides about the attempt's outcome done."""
        result: AttemptOutcome | None = None
        while True:
            machine.begin()
            use_h2 = self._use_http2()
            try:
                request = self._body(messages, tools, keep)
                http = self._http(use_h2)
                response, deadline = await open_stream(
                    http, self.config, request, kept.path(), own_pool=self._transport is None
                )
            except RailingsError as exc:
                live = kept.live
                if kept.point is not None and isinstance(result, Partial | Empty):
                    result = unresumed(result, exc)
                else:
                    result = Empty(error=exc, over_http2=self._maybe_h2(use_h2, None))
            else:
                machine.responded(response.http_version)
                # The limit the request carries (extra_body may set it): the verdict reads
                # billed output that reached it as truncation (railings.turn.limit).
                cfg = self.config
                time = asyncio.get_running_loop().time
                attempt = Attempt(
                    cfg.provider,
                    now=time(),
                    clocks=clocks(cfg.timeouts, deadline),
                    max_tokens=requested_limit(request),
                    request_chars=request_chars(request),  # for an input never reported
                    limits=cfg.limits,
                    keep=_RECEIVED_LIMIT,
                    profile=cfg.judged_by,
                    keeps=kept.keeps(request),
                    resuming=kept.point,
                )
                kept.attempt = attempt
                chunks = body_chunks(response)
                watch = GapWatch()
                try:
                    # Until the turn ended, and on a wire whose usage follows its proof
                    # (Bedrock's metadata after messageStop), until EOF.
                    done = False
                    while not done:
                        try:
                            chunk = await bounded_read(watch, chunks, attempt, time())
                        except StopAsyncIteration:
                            break
                        events, _, done = attempt.feed(chunk, time())
                        for event in events:
                            yield event
                except STOPS as exc:
                    stopped(attempt, exc, cfg.timeouts, time())
                finally:
                    watch.close()
                    await chunks.aclose()
                    await response.aclose()
                result = attempt.close(over_http2=self._maybe_h2(use_h2, response))
                # The kept response this attempt read, resumable or not: a resend cancels it.
                live, kept.attempt = kept.live, None
                if isinstance(result, Complete):
                    for event in attempt.held():
                        yield event
            decision = machine.decide(result, kept=live)
            kept.point = decision.point if isinstance(decision, Resume) else None
            if not await self._carry_out(decision, background):
                return

    async def _carry_out(self, decision: Decision, background: bool) -> bool:
        """Do what the attempt machine decided; True: send the request again."""
        if decision.http2_failure is not None:
            self.context.fallback.mark(decision.http2_failure)  # later requests: HTTP/1.1
        match decision:
            case Finish():
                return False
            case Raise(error=error):
                raise error
            case ResendWithoutUsage():
                self._include_usage = False
            case Resume(wait=wait, attempt=attempt, attempts=attempts, point=point):
                await countdown(
                    wait,
                    attempt=attempt,
                    attempts=attempts,
                    reason=f"response {point.response_id} after event {point.after}",
                    background=background,
                    banner=self.context.banner,
                    resuming=True,
                )
            case Retry(cancel=cancel) | ReplayOverHTTP1(cancel=cancel) if cancel is not None:
                # A resend must not pay for the kept response too.
                await cancel_kept(self._http(self._use_http2()), self.config, cancel)
                return await self._carry_out(replace(decision, cancel=None), background)
            case Retry(wait=wait, attempt=attempt, attempts=attempts, reason=reason):
                await countdown(
                    wait,
                    attempt=attempt,
                    attempts=attempts,
                    reason=reason,
                    background=background,
                    banner=self.context.banner,
                )
        return True

    def _maybe_h2(self, use_h2: bool, response: httpx2.Response | None) -> bool:
        """Could this attempt have failed in HTTP/2? Only over TLS (h2 is negotiated by
        ALPN) and, once a response arrived, only if it came over HTTP/2."""
        if not use_h2 or not self.config.url.startswith("https://"):
            return False
        return response is None or response.http_version == "HTTP/2"


def signer(config: ClientConfig) -> httpx2.Auth | None:
    """SigV4 for a wire that signs requests (Bedrock) when no key is configured."""
    service = spec(config.provider).sigv4_service
    if not service or config.api_key:
        return None
    from railings.transport.sigv4 import SigV4

    title = spec(config.provider).title
    require(f"{title} without {config.key_variable} (SigV4 signing)", "botocore")
    if not config.region:
        raise ConfigurationError(
            f"{title}: no region for SigV4 signing: set AWS_REGION "
            f"(or region=...), or set {config.key_variable} to use an API key instead"
        )
    return SigV4(config.region, service=service)
