"""The fault proxy: an HTTP- and stream-aware forwarder that breaks streams on purpose.

::

    with FaultProxy(upstream=server.url, fault="truncate:events=3") as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="x")

Each request is read whole (request bodies are small), forwarded to the
upstream with ``accept-encoding: identity`` (a gzipped stream has no events to
act on), and the response is streamed back as it arrives, never buffered.
With no fault, every upstream chunk goes on as it came, in one chunk of its
own (the events are only counted). Under a fault, an event stream is cut into
its events -- SSE blocks, Bedrock's event-stream frames, Ollama's NDJSON lines,
by its content type (:mod:`railings.testing.frames`) -- and re-sent one event per
HTTP chunk, so the fault can act on events. Either way what has arrived leaves in
one write once the proxy has read all of it: nothing waits for bytes still on
their way, and a fast upstream costs one system call per burst, not per chunk.
Any other body passes through as it came, and only the byte-level faults
(``truncate:bytes``, ``reset:bytes``, ``drip``) apply. When the upstream breaks off,
what it did send still reaches the client, an unfinished event included.

Any method is forwarded with its query string: a background Responses stream resumed
by ``GET /v1/responses/{id}?stream=true&starting_after=N`` is a Responses stream like
its POST, and its faults act on the events that GET sends. Which wire a request speaks
is judged by its path without the query, and the query is never logged (it may carry a
key).

The fault comes from the request header ``x-railings-fault: <spec>`` (removed
before forwarding), else from the proxy's own ``fault``. Spec syntax and the
fault classes are in :mod:`railings.testing.faults`. ``proxy.log`` holds one
:class:`ProxyRecord` per request: the fault, what was done, and the events and
body bytes that went in and out.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from railings.errors import ConfigurationError
from railings.testing import faults as F
from railings.testing import wire_openai as wo
from railings.testing.faults import Fault
from railings.testing.frames import framing_for
from railings.testing.http import (
    Headers,
    HTTPFault,
    Request,
    ResponseHead,
    close_writer,
    iter_body,
    read_request,
    read_response_head,
    render_head,
    send_json,
)
from railings.testing.ids import Ids
from railings.testing.proxy_events import Out, Stop, pump_events
from railings.testing.service import Service
from railings.testing.wires import KitWire, wire_for_path

LOG = logging.getLogger("railings.testing.proxy")

__all__ = ["FAULT_HEADER", "FaultProxy", "ProxyRecord"]

FAULT_HEADER = "x-railings-fault"
# RFC 9110 §7.6.1: connection-specific fields are not forwarded; the proxy
# frames each side itself, and asks for an identity body to see the events.
_HOP_BY_HOP = (
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "host",
    "accept-encoding",
    FAULT_HEADER,
)


@dataclass(slots=True)
class ProxyRecord:
    """What the proxy did with one request (updated live; ``done`` once it finished)."""

    method: str
    path: str
    fault: str | None = None  # the spec applied, None when passed through
    source: str | None = None  # "header" | "default"
    upstream_status: int | None = None
    status: int | None = None
    events_in: int = 0
    events_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    action: str = "passed through"
    done: bool = False
    error: str | None = None


class FaultProxy(Service):
    """Forward to ``upstream``, applying ``fault`` (see the module docstring)."""

    def __init__(
        self,
        upstream: str,
        fault: Fault | str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        connect_timeout: float = 10.0,
    ) -> None:
        super().__init__(host, port)
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"upstream must be an http(s) URL, got {upstream!r}")
        self.upstream = upstream
        self._scheme, self._host = parts.scheme, parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._netloc, self._prefix = parts.netloc, parts.path.rstrip("/")
        self.fault = Fault.parse(fault)
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._log: list[ProxyRecord] = []
        self._uses: Counter[str] = Counter()
        self._ids = Ids()

    @property
    def log(self) -> list[ProxyRecord]:
        """A copy of the records so far, one per request in arrival order (each still
        updated live until ``done``)."""
        with self._lock:
            return list(self._log)

    def _choose(self, request: Request, record: ProxyRecord) -> Fault:
        spec = request.headers.get(FAULT_HEADER)
        fault, source = (Fault.parse(spec), "header") if spec else (self.fault, "default")
        if isinstance(fault, F.Passthrough):
            return fault
        with self._lock:
            self._uses[fault.spec] += 1
            if fault.times is not None and self._uses[fault.spec] > fault.times:
                record.action = f"passed through ({fault.spec}: times={fault.times} used up)"
                return F.Passthrough()
        record.fault, record.source = fault.spec, source
        return fault

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read one request, forward it under its fault and log one line; a malformed
        request is answered with its 4xx, never forwarded."""
        try:
            request = await read_request(reader)
        except EOFError:
            return
        except HTTPFault as fault:
            await send_json(writer, fault.status, wo.status_error(fault.status, fault.message))
            return
        record = ProxyRecord(request.method, request.path)
        with self._lock:
            self._log.append(record)
        try:
            await self._proxy(request, writer, record)
        except (ConnectionError, HTTPFault) as exc:
            record.error = f"{type(exc).__name__}: {exc}"
        finally:
            record.done = True
            # One access-log line per request (``railings proxy`` shows them on stderr).
            LOG.info(
                "%s %s -> %s, %s (%d events in, %d out)%s",
                record.method,
                record.path.partition("?")[0],  # a query string may carry a key: never logged
                record.status,
                record.action,
                record.events_in,
                record.events_out,
                f"; {record.error}" if record.error else "",
            )

    async def _proxy(
        self, request: Request, writer: asyncio.StreamWriter, record: ProxyRecord
    ) -> None:
        # The guard's rule: the wire a path ends with, else Chat Completions.
        wire = wire_for_path(request.path)
        try:
            fault = self._choose(request, record)
        except ConfigurationError as exc:
            record.status, record.action = 400, f"bad {FAULT_HEADER}: {exc}"
            record.done = True
            await send_json(writer, 400, wo.status_error(400, str(exc)))
            return
        if isinstance(fault, F.Status):
            await self._answer_status(writer, fault, wire, record)
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(
                    self._host,
                    self._port,
                    ssl=ssl.create_default_context() if self._scheme == "https" else None,
                ),
                self.connect_timeout,
            )
        except (OSError, TimeoutError) as exc:
            record.status, record.error = 502, f"upstream unreachable: {exc}"
            record.done = True
            await send_json(writer, 502, wire.status_error(502, "upstream unreachable"))
            return
        try:
            up_writer.write(self._forward_head(request) + request.body)
            await up_writer.drain()
            head = await read_response_head(up_reader)
            record.upstream_status = record.status = head.status
            body = iter_body(up_reader, head.headers, request=False)
            await self._respond(head, body, writer, fault, record, wire)
        finally:
            await close_writer(up_writer)

    def _forward_head(self, request: Request) -> bytes:
        headers = Headers(list(request.headers.items))
        headers.remove(*_HOP_BY_HOP)
        headers.items[:0] = [("host", self._netloc)]
        headers.items += [
            ("accept-encoding", "identity"),
            ("content-length", str(len(request.body))),
            ("connection", "close"),
        ]
        lines = [f"{request.method} {self._prefix}{request.target} HTTP/1.1"]
        lines += [f"{k}: {v}" for k, v in headers.items]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _answer_status(
        self, writer: asyncio.StreamWriter, fault: F.Status, wire: KitWire, record: ProxyRecord
    ) -> None:
        request_id = wire.request_id(self._ids)
        message = fault.message
        if message is None and fault.code == 429 and (fault.retry_after or fault.retry_after_ms):
            # OpenAI's 429 text names the wait: the same wait the headers give.
            wait = (
                f"{fault.retry_after:g}s"
                if fault.retry_after is not None
                else f"{fault.retry_after_ms}ms"
            )
            message = wire.rate_limit_message(wait)
        body = wire.status_error(fault.code, message, request_id)
        headers = [(wire.spec.request_id_header, request_id), *wire.error_headers(fault.code, body)]
        if fault.retry_after is not None:
            headers.append(("retry-after", f"{fault.retry_after:g}"))
        if fault.retry_after_ms is not None:
            headers.append(("retry-after-ms", str(fault.retry_after_ms)))
        record.status, record.action = fault.code, f"answered {fault.code} without upstream"
        record.done = True
        await send_json(writer, fault.code, body, headers)

    async def _respond(
        self,
        head: ResponseHead,
        body: AsyncIterator[bytes],
        writer: asyncio.StreamWriter,
        fault: Fault,
        record: ProxyRecord,
        wire: KitWire,
    ) -> None:
        events = framing_for(head.headers.get("content-type") or "")
        length = head.headers.get("content-length")
        chunked = events is not None or length is None
        headers = Headers(list(head.headers.items))
        headers.remove(*_HOP_BY_HOP)
        framing = (
            [("transfer-encoding", "chunked")] if chunked else [("content-length", length or "0")]
        )
        tag = [(FAULT_HEADER, record.fault)] if record.fault else []
        writer.write(
            render_head(
                head.status, [*headers.items, *framing, *tag, ("connection", "close")], head.reason
            )
        )
        await writer.drain()
        limit, limit_end = None, "clean"
        if isinstance(fault, F.Truncate) and fault.bytes is not None:
            limit, limit_end = fault.bytes, fault.end
        elif isinstance(fault, F.Reset) and fault.bytes is not None:
            limit, limit_end = fault.bytes, "reset"
        out = Out(
            writer,
            record,
            chunked=chunked,
            limit=limit,
            limit_end=limit_end,
            drip=fault if isinstance(fault, F.Drip) else None,
        )
        if isinstance(fault, F.Drip):
            record.action = f"dripped {fault.size} byte(s) every {fault.delay:g}s"
        try:
            if events is not None:
                await pump_events(body, out, fault, record, wire, self._ids, events)
            else:
                if fault.__class__ not in (F.Passthrough, F.Drip) and limit is None:
                    record.action = f"passed through ({fault.spec} needs an event stream)"
                async for data in body:
                    record.bytes_in += len(data)
                    out.send(data)
                    await out.later()
        except Stop as stop:
            record.action = stop.action
            await out.finish(stop.end)
            return
        if isinstance(fault, F.CloseAfterTerminator):
            record.action = "closed without the chunked terminator after the whole stream"
            await out.finish("abrupt")
            return
        await out.finish("clean")
