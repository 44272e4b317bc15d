"""The async provider client: one turn per request, proof before ending.

Theory of operation. ``stream_turn`` returns a :class:`TurnStream` whose events
come from one loop of *attempts*. Each attempt POSTs the body, maps whatever
goes wrong before the body to a railings error (one place:
:mod:`~railings.transport.errors_map`), then feeds every body chunk to the
sans-IO :class:`~railings.turn.reader.StreamReader` and passes its events on.
The reader alone decides how the stream ended; this module never makes up a
stop event. Then:

* **COMPLETE** (the proof arrived): the turn is the result.
* **PARTIAL** (no proof, content arrived): the turn is returned as-is, marked
  interrupted -- or :class:`~railings.errors.StreamInterrupted` is raised when
  the config says so. Never resent: that content is billed.
* **Empty** (no proof, no content) and errors before any content: resent when
  the retry policy allows (:mod:`~railings.transport.retry`), the countdown on
  the retry banner, counted as an attempt; else raised.
* An HTTP/2 protocol failure (:mod:`~railings.transport.fallback`) sets the
  sticky flag; if nothing was received the request is replayed once over
  HTTP/1.1, free of the attempt count.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, Iterable, Sequence
from types import TracebackType
from typing import Any

import httpx2

from railings import __version__
from railings.errors import (
    BadRequest,
    ConfigurationError,
    EventTooLarge,
    LocalError,
    MalformedStream,
    PoolTimeout,
    RailingsError,
    TotalTimeout,
    TurnTooLarge,
)
from railings.events import StreamEvent, Unknown
from railings.limits import TurnMeter
from railings.messages import (
    Message,
    ToolSpec,
    anthropic_messages_body,
    openai_chat_body,
    openai_responses_body,
)
from railings.redact import (
    SECRET_HEADERS,
    install_log_redaction,
    redact,
    register_secret,
    register_url_secrets,
)
from railings.telemetry import tracing
from railings.transport.attempt import (
    empty_error,
    interrupted,
    is_event_stream,
    read_bounded,
    within,
)
from railings.transport.banner import countdown
from railings.transport.config import ClientConfig
from railings.transport.errors_map import (
    BOUNDARY,
    error_from_response,
    idle_error,
    map_exception,
    map_stream_exception,
)
from railings.transport.fallback import FALLBACK, http2_failure
from railings.transport.gaps import GapWatch, Silence
from railings.transport.idle import set_read_timeout
from railings.transport.retry import Retrier
from railings.transport.stream import RetryRecord, TurnStream
from railings.transport.tracing import traced
from railings.turn.model import Outcome
from railings.turn.reader import StreamReader

__all__ = ["AsyncProviderClient"]

# An error's ``received`` keeps the first 16 MiB of the body, no more: a server that
# streams keep-alive comments until the total deadline must not grow memory with time.
_RECEIVED_LIMIT = 16 * 1024 * 1024


class AsyncProviderClient:
    """Streams turns from one OpenAI-compatible (Chat Completions or Responses) or
    Anthropic endpoint.

    ``transport`` replaces the default httpx2 transports (the HTTP/2 fallback is
    then the transport's business). Use ``async with`` or :meth:`aclose`.
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        tracer: Any = None,
    ) -> None:
        self.config = config
        self._tracer = tracer  # OpenTelemetry (railings.telemetry): None is the global one
        # Its key is a secret from now on: redacted in errors, the journal and logs; so are
        # a password in the base URL and the value of every secret header configured.
        register_secret(config.api_key)
        register_url_secrets(config.base_url)
        for name, value in config.headers.items():
            if name.lower() in SECRET_HEADERS:
                register_secret(value)
        install_log_redaction()
        self._transport = transport
        self._clients: dict[bool, httpx2.AsyncClient] = {}
        self._include_usage = config.include_usage is not False
        t = config.timeouts
        # read = first_byte until the headers are in; then _next_chunk times the gaps.
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

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _http(self, http2: bool) -> httpx2.AsyncClient:
        client = self._clients.get(http2)
        if client is None:
            size = self.config.max_connections
            transport = self._transport or httpx2.AsyncHTTPTransport(
                http2=http2,
                verify=self.config.verify,
                # The official SDKs' pool: 1,000 connections, 100 kept alive when idle.
                limits=httpx2.Limits(
                    max_connections=size, max_keepalive_connections=min(100, size)
                ),
            )
            client = httpx2.AsyncClient(
                transport=transport,
                timeout=self._timeout,
                # Secrets never leave their origin: a redirect is not followed (httpx2 would
                # strip only Authorization when it leaves the origin, not x-api-key, api-key
                # or a configured header, and would resend the body); _open raises instead.
                follow_redirects=False,
                headers={"user-agent": f"railings/{__version__}"},
            )
            self._clients[http2] = client
        return client

    def _use_http2(self) -> bool:
        return self._transport is None and self.config.http2 and not FALLBACK.broken

    # -- the turn ----------------------------------------------------------------------

    def stream_turn(
        self,
        messages: Iterable[Message],
        tools: Iterable[ToolSpec] = (),
        *,
        background: bool | None = None,
    ) -> TurnStream:
        """Stream one assistant turn for ``messages``. ``background`` overrides the config:
        background work never updates the foreground retry banner."""
        history, specs = tuple(messages), tuple(tools)
        self._body(history, specs)  # a bad history fails here, not at the first event
        quiet = self.config.background if background is None else background
        if not tracing(self._tracer):  # no OpenTelemetry: no extra layer on the event path
            return TurnStream(lambda stream: self._run(stream, history, specs, quiet))
        return TurnStream(
            lambda stream: traced(
                stream, self._run(stream, history, specs, quiet), self.config, self._tracer
            )
        )

    def _body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        cfg = self.config
        if cfg.provider == "openai":
            return openai_chat_body(
                cfg.model,
                messages,
                max_tokens=cfg.max_tokens,
                tools=tools,
                include_usage=self._include_usage,
                max_tokens_field=cfg.max_tokens_field,
                extra=cfg.extra_body,
            )
        if cfg.provider == "openai-responses":
            return openai_responses_body(
                cfg.model, messages, max_tokens=cfg.max_tokens, tools=tools, extra=cfg.extra_body
            )
        return anthropic_messages_body(
            cfg.model, messages, max_tokens=cfg.max_tokens, tools=tools, extra=cfg.extra_body
        )

    async def _run(
        self,
        stream: TurnStream,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        background: bool,
    ) -> AsyncGenerator[StreamEvent, None]:
        cfg = self.config
        retrier = Retrier(cfg.retry)
        replayed = False
        while True:
            stream.attempts = retrier.attempt
            use_h2 = self._use_http2()
            reader = StreamReader(cfg.provider, max_tokens=cfg.max_tokens, service=cfg.service)
            received: list[bytes] = []
            room = _RECEIVED_LIMIT
            meter = TurnMeter(cfg.limits, cfg.max_tokens)
            held: list[StreamEvent] = []
            failure: RailingsError | None = None
            response: httpx2.Response | None = None
            try:
                response, deadline = await self._open(self._body(messages, tools), use_h2)
            except RailingsError as exc:
                failure = exc
            if response is not None:
                stream.http_version = response.http_version
                chunks = response.aiter_bytes()
                watch = GapWatch()
                clock = asyncio.get_running_loop().time
                # The content clock: reset by stream events only, never by keep-alives.
                progress = clock()
                try:
                    while not reader.terminated:
                        # Before the first content a model may think in silence: the
                        # generous first-byte limit, for any byte and for the first event.
                        # Once content flows: the idle gap (any byte) and content_idle.
                        t = cfg.timeouts
                        gap = t.idle if reader.content else t.first_byte
                        wait = t.content_idle if reader.content else t.first_byte
                        until = deadline
                        content_due = None if wait is None else progress + wait
                        if content_due is not None and (until is None or content_due < until):
                            until = content_due
                        try:
                            chunk = await watch.read(chunks, gap, until)
                        except StopAsyncIteration:
                            break
                        if room > 0:
                            received.append(chunk if len(chunk) <= room else chunk[:room])
                            room -= len(chunk)
                        meter.received(len(chunk))
                        events = reader.feed(chunk)
                        if any(type(event) is not Unknown for event in events):
                            progress = clock()
                        meter.saw(events)
                        if reader.content:
                            if held:
                                events, held = held + events, []
                            for event in events:
                                yield event
                        else:
                            held.extend(events)  # an Empty attempt may yet be resent
                except Silence as exc:
                    if exc.deadline_passed and until is deadline:
                        failure = TotalTimeout(f"total timeout of {cfg.timeouts.total:g} s passed")
                    elif exc.deadline_passed:
                        failure = idle_error(wait or 0.0, empty=not reader.content, content=True)
                    else:
                        failure = idle_error(gap or 0.0, empty=not reader.content)
                except TurnTooLarge as exc:
                    # The provider ignored max_tokens: end the turn here, abruptly.
                    if not reader.terminated:
                        reader.assembler.fault(exc.message)
                    failure = exc
                except BOUNDARY as exc:
                    # The socket's read timeout is only a backstop behind the GapWatch.
                    failure = map_stream_exception(
                        exc, empty=not reader.content, idle_seconds=self._backstop()
                    )
                    failure.__cause__ = exc
                except EventTooLarge as exc:
                    failure = exc  # the reader already ended the turn abruptly
                finally:
                    watch.close()
                    await chunks.aclose()
                    await response.aclose()
                reader.close()
                if isinstance(failure, LocalError):
                    raise failure
                turn = reader.turn()
                if isinstance(failure, TurnTooLarge) and turn.error is not None:
                    # Resending would be answered the same way: the turn says so too.
                    turn = dataclasses.replace(
                        turn, error=dataclasses.replace(turn.error, retryable=False)
                    )
                    failure.turn = turn
                if turn.outcome is Outcome.COMPLETE:
                    for event in held:
                        yield event
                    stream._finish(turn)
                    return
                if turn.outcome is Outcome.PARTIAL:
                    turn, interruption = interrupted(turn, failure, b"".join(received))
                    h2_used = response.http_version == "HTTP/2"
                    if h2_used and (marker := http2_failure(interruption)):
                        FALLBACK.mark(marker)  # too late to replay this one; the next goes HTTP/1.1
                    stream._finish(turn, interruption)
                    if cfg.raise_on_partial:
                        raise interruption
                    return
                failure = empty_error(turn, failure, b"".join(received))
            assert failure is not None
            # Nothing reached the caller: this attempt may be replayed or retried.
            marker = http2_failure(failure) if self._maybe_h2(use_h2, response) else None
            if marker:
                FALLBACK.mark(marker)
                if not replayed:
                    replayed = True
                    stream.retries.append(RetryRecord(retrier.attempt, failure, 0.0, replay=True))
                    continue
            if self._reject_include_usage(failure):
                stream.retries.append(RetryRecord(retrier.attempt, failure, 0.0, replay=True))
                continue
            wait = retrier.next_wait(failure)
            if wait is None:
                raise failure
            stream.retries.append(RetryRecord(retrier.attempt, failure, wait))
            await countdown(
                wait,
                attempt=retrier.attempt + 1,
                attempts=cfg.retry.attempts,
                reason=failure.message,
                background=background,
            )
            retrier.advance()

    def _maybe_h2(self, use_h2: bool, response: httpx2.Response | None) -> bool:
        """Could this attempt have failed in HTTP/2? Only over TLS (h2 is negotiated by
        ALPN) and, once a response arrived, only if it came over HTTP/2."""
        if not use_h2 or not self.config.url.startswith("https://"):
            return False
        return response is None or response.http_version == "HTTP/2"

    def _reject_include_usage(self, error: RailingsError) -> bool:
        """An endpoint that rejects ``stream_options`` gets the request again without it."""
        if (
            self.config.include_usage is None
            and self._include_usage
            and self.config.provider == "openai"
            and isinstance(error, BadRequest)
            and "stream_options" in error.message
        ):
            self._include_usage = False
            return True
        return False

    def _backstop(self) -> float | None:
        """The socket read timeout while the body streams: the longer of the two gaps."""
        t = self.config.timeouts
        if t.first_byte is None or t.idle is None:
            return None
        return max(t.first_byte, t.idle)

    async def _open(
        self, body: dict[str, Any], use_h2: bool
    ) -> tuple[httpx2.Response, float | None]:
        """Send the request; return the streaming response and the attempt's deadline.
        Raises the typed error for anything but an event stream."""
        cfg = self.config
        http = self._http(use_h2)
        total = cfg.timeouts.total
        deadline = asyncio.get_running_loop().time() + total if total else None
        request = http.build_request("POST", cfg.url, json=body, headers=cfg.request_headers())
        try:
            response = await within(http.send(request, stream=True), deadline)
        except TimeoutError as exc:  # before BOUNDARY: TimeoutError is an OSError
            raise TotalTimeout(f"total timeout of {total:g} s passed before the response") from exc
        except BOUNDARY as exc:
            mapped = map_exception(exc)
            if isinstance(mapped, PoolTimeout) and self._transport is None:
                mapped = PoolTimeout(
                    f"{mapped.message}: more turns in flight than max_connections="
                    f"{cfg.max_connections} (pool timeout {cfg.timeouts.pool} s)",
                    seconds=cfg.timeouts.pool,
                    max_connections=cfg.max_connections,
                )
            raise mapped from exc
        status = response.status_code
        ctype = response.headers.get("content-type", "")
        if is_event_stream(response):
            set_read_timeout(request.extensions, self._backstop())
            return response, deadline
        data = await read_bounded(response)
        if 300 <= status < 400:
            where = redact(response.headers.get("location", "nowhere"))
            raise ConfigurationError(
                f"HTTP {status}: the endpoint redirects to {where}; railings follows no "
                "redirect, so the key and the conversation stay with the origin configured: "
                "set the base URL to where the API is"
            )
        if status >= 300 or b'"error"' in data:
            raise error_from_response(
                status,
                response.headers,
                data,
                key_variable=cfg.key_variable,
                has_key=bool(cfg.api_key),
            )
        raise MalformedStream(
            f"expected an event stream (text/event-stream), got {ctype or 'no content type'}"
        )
