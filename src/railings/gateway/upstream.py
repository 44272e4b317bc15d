"""The upstream side: where a request goes, which headers travel, and one attempt.

The upstream is an origin, optionally with a path prefix; the request path is
appended as it came (``--upstream https://api.openai.com`` and a client base URL
``http://127.0.0.1:PORT/v1``). Request headers go upstream as they came, keys
included, except the hop-by-hop ones (RFC 9110 §7.6.1) and ``host``; on the model
paths ``accept-encoding`` becomes ``identity``, because the judge reads the bytes
it passes on. Response headers come back the same way.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from urllib.parse import urlsplit

import httpcore2
import httpx2

from railings.errors import ConfigurationError
from railings.gateway.network import AsyncioBackend
from railings.redact import MARKER, SECRET_HEADERS, redact
from railings.transport.config import Timeouts

__all__ = [
    "HOP_BY_HOP",
    "POOLS",
    "Clients",
    "asyncio_transport",
    "client",
    "header_secrets",
    "request_headers",
    "response_headers",
    "scrub",
    "upstream_base",
]

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
    }
)

RawHeaders = list[tuple[bytes, bytes]]


def upstream_base(url: str) -> str:
    """``url`` checked and without a trailing slash: an http(s) origin and optional prefix."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(
            f"--upstream must be an http:// or https:// URL with a host, not {url!r}"
        )
    if parts.query or parts.fragment:
        raise ConfigurationError(f"--upstream takes no query or fragment: {url!r}")
    return url.rstrip("/")


POOLS = 16


class Clients:
    """The upstream clients of one gateway: :data:`POOLS` pools, taken in turn.

    httpcore2's pool walks every connection it holds each time a request starts or a
    response closes; under 1,000 open streams one pool would make each stream's start
    and end walk 1,000 connections while every other stream waits. Sixteen pools walk
    about 60 each. With a given ``transport`` (which is its own pool) there is one.
    """

    def __init__(
        self, timeouts: Timeouts, transport: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        count = 1 if transport is not None else POOLS
        tls = httpx2.create_ssl_context(trust_env=False)  # one CA bundle loaded, not 16
        self.pools = [client(timeouts, transport=transport, tls=tls) for _ in range(count)]
        self._turn = 0

    def next(self) -> httpx2.AsyncClient:
        """The client for the next request."""
        self._turn = (self._turn + 1) % len(self.pools)
        return self.pools[self._turn]

    async def aclose(self) -> None:
        """Close every pool."""
        for pool in self.pools:
            await pool.aclose()


def client(
    timeouts: Timeouts,
    *,
    http2: bool = True,
    transport: httpx2.AsyncBaseTransport | None = None,
    tls: ssl.SSLContext | None = None,
) -> httpx2.AsyncClient:
    """One pooled upstream client (a gateway holds :data:`POOLS` of them, :class:`Clients`).

    No connection cap (each open stream holds one HTTP/1.1 connection; HTTP/2 shares
    them), keep-alive for reuse, no environment proxies or redirects: the gateway
    forwards exactly where it was told, and a redirect goes back to the client.
    ``transport`` replaces httpx2's own (a custom TLS setup, a recording tap); ``tls``
    is the context to verify the upstream with (default: httpx2's). httpx2's own
    transport runs on :class:`~railings.gateway.network.AsyncioBackend`.
    """
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=256 // POOLS)
    verify = tls if tls is not None else httpx2.create_ssl_context(trust_env=False)
    return httpx2.AsyncClient(
        http2=http2,
        timeout=httpx2.Timeout(
            connect=timeouts.connect,
            read=timeouts.first_byte,
            write=timeouts.write,
            pool=timeouts.connect,
        ),
        limits=limits,
        follow_redirects=False,
        trust_env=False,
        transport=transport or asyncio_transport(verify, http2=http2, limits=limits),
        verify=verify,
    )


def asyncio_transport(
    tls: ssl.SSLContext, *, http2: bool, limits: httpx2.Limits
) -> httpx2.AsyncHTTPTransport:
    """httpx2's transport with its httpcore2 pool on :class:`AsyncioBackend`.

    httpcore2's pool takes a ``network_backend``; httpx2's transport does not pass one
    on, so the pool it built is replaced by the same pool with the backend. Should a
    later httpx2 keep its pool elsewhere, the transport stays as httpx2 built it: the
    same answers, on anyio (``tests/test_gateway_network.py`` notices). The pool is
    rebuilt from the arguments this function takes only (no retries, local address,
    Unix socket or socket options: the gateway sets none of them).
    """
    transport = httpx2.AsyncHTTPTransport(verify=tls, http2=http2, limits=limits, trust_env=False)
    if isinstance(getattr(transport, "_pool", None), httpcore2.AsyncConnectionPool):
        transport._pool = httpcore2.AsyncConnectionPool(
            ssl_context=tls,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=http2,
            network_backend=AsyncioBackend(),
        )
    return transport


def request_headers(raw: Iterable[tuple[bytes, bytes]], *, watched: bool) -> RawHeaders:
    """The client's headers for the upstream, less the hop-by-hop ones."""
    out: RawHeaders = []
    for name, value in raw:
        lower = name.lower()
        if lower in HOP_BY_HOP or (watched and lower == b"accept-encoding"):
            continue
        out.append((name, value))
    if watched:
        out.append((b"accept-encoding", b"identity"))
    return out


def header_secrets(raw: Iterable[tuple[bytes, bytes]]) -> tuple[str, ...]:
    """The values of the request's key headers (a ``Bearer`` token without its scheme).

    Kept with the request, not in the process-wide redaction registry: a gateway sees a
    new key with every client, and a registry that grew with each would grow without
    bound. Only this request's upstream can echo this request's key into an error.
    """
    found = []
    for name, value in raw:
        if name.lower().decode("latin-1") in SECRET_HEADERS:
            text = value.decode("latin-1")
            found.append(text.split(" ", 1)[1] if " " in text else text)
    return tuple(f for f in found if f)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` redacted, with ``secrets`` (one request's keys) replaced too."""
    for secret in secrets:
        text = text.replace(secret, MARKER)
    return redact(text)


def response_headers(raw: Iterable[tuple[bytes, bytes]], *, keep_length: bool) -> RawHeaders:
    """The upstream's response headers for the client."""
    return [
        (name.lower(), value)
        for name, value in raw
        if name.lower() not in HOP_BY_HOP or (keep_length and name.lower() == b"content-length")
    ]
