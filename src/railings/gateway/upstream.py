"""The upstream side: where a request goes, which headers travel, and one attempt.

The upstream is an origin, optionally with a path prefix; the request path is
appended as it came (``--upstream https://api.openai.com`` and a client base URL
``http://127.0.0.1:PORT/v1``). Request headers go upstream as they came, keys
included, except the hop-by-hop ones and ``host``; on the model paths
``accept-encoding`` becomes ``identity``, because the judge reads the bytes it passes
on. Response headers come back the same way. Hop-by-hop (RFC 9110 §7.6.1) means
``Connection`` itself, every field a ``Connection`` header names, and the fields the
RFC lists (``Keep-Alive``, ``Proxy-Connection``, ``TE``, ``Trailer``,
``Transfer-Encoding``, ``Upgrade``), in both directions.

Nothing passes from one request to the next: the upstream clients keep no cookies
(:class:`NoCookies`) and have no headers or auth of their own. The connection to the
upstream is httpx2's own transport (httpcore2 on anyio) unless ``network="asyncio"``
asks for :mod:`railings.gateway.network`'s backend (:data:`NETWORKS`).
"""

from __future__ import annotations

import functools
import logging
import re
import ssl
from collections.abc import Iterable
from http.cookiejar import Cookie, CookieJar
from typing import Any, Literal

import httpcore2
import httpx2

from railings.errors import ConfigurationError
from railings.gateway.network import AsyncioBackend
from railings.redact import MARKER, SECRET_HEADERS, redact, register_secret
from railings.transport import verified
from railings.transport.config import Timeouts
from railings.transport.fallback import Http2Fallback

__all__ = [
    "ASYNCIO_VERIFIED",
    "HOP_BY_HOP",
    "NETWORKS",
    "POOLS",
    "VERIFIED_VERSIONS",
    "Clients",
    "Network",
    "NoCookies",
    "asyncio_transport",
    "client",
    "header_secrets",
    "hop_by_hop",
    "request_headers",
    "response_headers",
    "scrub",
    "upstream_base",
    "upstream_shown",
]

log = logging.getLogger("railings.gateway")

Network = Literal["stock", "asyncio"]
NETWORKS: tuple[Network, ...] = ("stock", "asyncio")
"""The upstream network backends: ``stock`` (default), httpx2's own transport on
httpcore2's anyio backend; ``asyncio``, :class:`~railings.gateway.network.AsyncioBackend`
in httpx2's transport, for less CPU per event (docs/GATEWAY.md), used only where
:data:`ASYNCIO_VERIFIED`."""

# The versions whose private layout ``asyncio_transport`` relies on (the transport's
# ``_pool`` and the pool's constructor), as verified by tests/test_gateway_network.py and
# tests/test_gateway_tls.py. Any other version gets the stock transport.
VERIFIED_VERSIONS = {"httpx2": "2.16.2", "httpcore2": "2.16.2"}


ASYNCIO_VERIFIED = verified.matches(VERIFIED_VERSIONS)
"""True when the installed httpx2 and httpcore2 are the :data:`VERIFIED_VERSIONS`:
only then does ``network="asyncio"`` replace httpx2's pool; otherwise it is ``stock``."""

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"proxy-authorization",
        b"proxy-authenticate",
        b"host",
        b"content-length",
    }
)
"""The fields never forwarded as they came (RFC 9110 §7.6.1's list, ``Proxy-Connection``,
the two the gateway sets itself: ``host`` and ``content-length``, and the proxy
authentication fields, which belong to the proxy they are addressed to (RFC 9110
§11.7: a client's credentials for its own proxy are not the upstream's to see); every
field a ``Connection`` header names is dropped too (:func:`hop_by_hop`)."""

RawHeaders = list[tuple[bytes, bytes]]


def upstream_base(url: str) -> str:
    """``url`` as httpx2 reads it, checked, and without a trailing slash: an http(s)
    origin and optional path prefix. Raises ConfigurationError, without quoting the
    user name or password, for a URL that does not parse or is not such an origin.

    The URL is read by :class:`httpx2.URL`, the parser the upstream client uses: a
    user name or password written unencoded (a space, an ``@``) is what httpx2
    authenticates with, and a regex that looks for ``scheme://userinfo@`` would miss
    it. Both are registered as secrets, decoded and as written
    (:func:`~railings.redact.register_secret`, which ignores short values), and the
    base returned carries them percent-encoded, as httpx2 sends them. What is shown
    of the upstream (:func:`upstream_shown`) is built from the parsed parts without
    them, so a password of any length is never shown. A URL whose parse cannot be
    what was meant is refused: no host, a port that is no port (a password with a
    ``/`` in it makes its first part the port), a query or fragment (a ``?`` or ``#``
    in a password), or an ``@`` in the path (a password with a ``/`` whose first part
    read as a port, leaving the rest and the host in the path).
    """
    hint = "; percent-encode '/', '?', '#' and '@' in a user name or password"
    try:
        parsed = httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError, ValueError):
        # httpx2's message quotes the part it could not read: a password's, maybe.
        raise ConfigurationError(f"--upstream is not a URL that parses{hint}") from None
    _register_userinfo(url, parsed)
    # No message quotes the URL: where it is not what was meant, a password may be
    # anywhere in it (the scheme of ``user:pass@host`` is ``user``).
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigurationError(f"--upstream must be an http:// or https:// URL with a host{hint}")
    if parsed.port is not None and not 0 < parsed.port <= 65535:
        raise ConfigurationError(f"--upstream has no valid port{hint}")
    if parsed.query or parsed.fragment:
        raise ConfigurationError(f"--upstream takes no query or fragment{hint}")
    if b"@" in parsed.raw_path:
        raise ConfigurationError(f"--upstream has an '@' in its path{hint}")
    return str(parsed).rstrip("/")


def upstream_shown(url: str | httpx2.URL) -> str:
    """``url`` (an upstream base) as it may be printed or journaled: scheme, host, port
    and path, built from httpx2's parse; a user name and password, whatever their
    length, are one marker (``http://[REDACTED]@host/v1``)."""
    parsed = url if isinstance(url, httpx2.URL) else httpx2.URL(url)
    userinfo = f"{MARKER}@" if parsed.userinfo else ""
    netloc = parsed.netloc.decode("ascii", "backslashreplace")
    path = parsed.raw_path.split(b"?", 1)[0].decode("ascii", "backslashreplace")
    return f"{parsed.scheme}://{userinfo}{netloc}{path.rstrip('/')}"


def _register_userinfo(url: str, parsed: httpx2.URL) -> None:
    """Register ``url``'s user name and password as secrets: as httpx2 decodes them, as
    it sends them (percent-encoded), and as written (httpx2's userinfo is what the
    authority holds before its last ``@``)."""
    written = url.partition("://")[2] if "://" in url else url
    written = re.split(r"[/?#]", written, maxsplit=1)[0].rpartition("@")[0]
    sent = parsed.userinfo.decode("ascii", "backslashreplace")
    for value in (parsed.username, parsed.password, *written.split(":", 1), *sent.split(":", 1)):
        register_secret(value)


POOLS = 16


class Clients:
    """The upstream clients of one gateway: :data:`POOLS` pools, taken in turn.

    httpcore2's pool walks every connection it holds each time a request starts or a
    response closes; under 1,000 open streams one pool would make each stream's start
    and end walk 1,000 connections while every other stream waits. Sixteen pools walk
    about 60 each. With a given ``transport`` (which is its own pool) there is one,
    used as given: whether it speaks HTTP/2 is its own business.

    The pools offer HTTP/2 (by ALPN, over TLS) until one request failed in the protocol
    (``fallback``, marked by the attempt machine's decision, :mod:`railings.gateway.calls`):
    from then on every request goes over HTTP/1.1, on pools made at that moment, as
    railings' own client does (:mod:`railings.transport.fallback`).
    """

    def __init__(
        self,
        timeouts: Timeouts,
        transport: httpx2.AsyncBaseTransport | None = None,
        *,
        network: Network = "stock",
        verify: ssl.SSLContext | None = None,
    ) -> None:
        count = 1 if transport is not None else POOLS
        # One CA bundle loaded, not 16.
        tls = verify if verify is not None else httpx2.create_ssl_context(trust_env=False)
        self._make = functools.partial(
            client, timeouts, transport=transport, tls=tls, network=network
        )
        self.pools = [self._make() for _ in range(count)]
        self._http1: list[httpx2.AsyncClient] = []
        self._own = transport is None
        self.fallback = Http2Fallback()
        self._turn = 0

    @property
    def http2(self) -> bool:
        """True while the next request may go over HTTP/2 (the gateway's own pools, and no
        HTTP/2 failure marked yet)."""
        return self._own and not self.fallback.broken

    def next(self) -> httpx2.AsyncClient:
        """The client for the next request (over HTTP/1.1 once :attr:`fallback` is marked)."""
        self._turn = (self._turn + 1) % len(self.pools)
        if not self.fallback.broken:
            return self.pools[self._turn]
        if not self._http1:
            self._http1 = [self._make(http2=False) for _ in self.pools]
        return self._http1[self._turn]

    async def aclose(self) -> None:
        """Close every pool."""
        for pool in self.pools + self._http1:
            await pool.aclose()


def client(
    timeouts: Timeouts,
    *,
    http2: bool = True,
    transport: httpx2.AsyncBaseTransport | None = None,
    tls: ssl.SSLContext | None = None,
    network: Network = "stock",
) -> httpx2.AsyncClient:
    """One pooled upstream client (a gateway holds :data:`POOLS` of them, :class:`Clients`).

    No connection cap (each open stream holds one HTTP/1.1 connection; HTTP/2 shares
    them), keep-alive for reuse, no environment proxies or redirects: the gateway
    forwards exactly where it was told, and a redirect goes back to the client. No
    state from one request to the next: the cookie jar keeps nothing (:class:`NoCookies`),
    and the client has no headers or auth of its own (auth from the upstream URL's
    userinfo is applied to each request by httpx2, from the request's URL).
    ``transport`` replaces httpx2's own (a custom TLS setup, a recording tap); ``tls``
    is the context to verify the upstream with (default: httpx2's); ``network`` is
    the backend of httpx2's own transport (:data:`NETWORKS`).
    """
    if network not in NETWORKS:
        raise ConfigurationError(f"network must be one of {', '.join(NETWORKS)}, not {network!r}")
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=256 // POOLS)
    verify = tls if tls is not None else httpx2.create_ssl_context(trust_env=False)
    if transport is None and network == "asyncio":
        transport = asyncio_transport(verify, http2=http2, limits=limits)
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
        transport=transport,
        verify=verify,
        cookies=NoCookies(),
    )


class NoCookies(CookieJar):
    """A cookie jar that keeps nothing: a ``Set-Cookie`` answered to one client must never
    go out with another's request. A client's own ``Cookie`` header is forwarded as it
    came, like every other request header."""

    def set_cookie(self, cookie: Cookie) -> None:
        """Keep nothing."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        """Keep nothing."""


def asyncio_transport(
    tls: ssl.SSLContext, *, http2: bool, limits: httpx2.Limits
) -> httpx2.AsyncHTTPTransport:
    """httpx2's transport with its httpcore2 pool on :class:`AsyncioBackend`.

    httpcore2's pool takes a ``network_backend``; httpx2's transport does not pass one
    on, so the pool it built is replaced by the same pool with the backend. That uses a
    private name of httpx2, so it is done only where :data:`ASYNCIO_VERIFIED` (the exact
    versions the tests verified); elsewhere the transport stays as httpx2 built it, on
    anyio, with a warning. The pool is rebuilt from the arguments this function takes
    only (no retries, local address, Unix socket or socket options: the gateway sets
    none of them).
    """
    transport = httpx2.AsyncHTTPTransport(verify=tls, http2=http2, limits=limits, trust_env=False)
    if not ASYNCIO_VERIFIED or not isinstance(
        getattr(transport, "_pool", None), httpcore2.AsyncConnectionPool
    ):
        _unverified()
        return transport
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


@functools.cache
def _unverified() -> None:
    """Say once per process that the asyncio backend gave way to the stock one."""
    log.warning(
        "network 'asyncio' is verified with httpx2 and httpcore2 %s only: using 'stock'",
        VERIFIED_VERSIONS["httpx2"],
    )


def hop_by_hop(raw: Iterable[tuple[bytes, bytes]]) -> frozenset[bytes]:
    """The lower-case names not to forward from ``raw``: :data:`HOP_BY_HOP` and every
    field its ``Connection`` headers name (RFC 9110 §7.6.1: ``Connection: close,
    x-hop`` makes ``x-hop`` hop-by-hop)."""
    named = [
        token.strip().lower()
        for name, value in raw
        if name.lower() == b"connection"
        for token in value.split(b",")
    ]
    return HOP_BY_HOP.union(t for t in named if t) if named else HOP_BY_HOP


def request_headers(raw: Iterable[tuple[bytes, bytes]], *, watched: bool) -> RawHeaders:
    """The client's headers for the upstream, less the hop-by-hop ones."""
    raw = list(raw)
    drop = hop_by_hop(raw) | ({b"accept-encoding"} if watched else set())
    out = [(name, value) for name, value in raw if name.lower() not in drop]
    return [*out, (b"accept-encoding", b"identity")] if watched else out


def header_secrets(raw: Iterable[tuple[bytes, bytes]]) -> tuple[str, ...]:
    """The values of the request's key headers (a ``Bearer`` token without its scheme).

    Kept with the request, not in the process-wide redaction registry: a gateway sees a
    new key with every client, and a registry that grew with each would grow without
    bound. Only this request's upstream can echo this request's key into an error.
    """
    found = (
        value.decode("latin-1").split(" ", 1)[-1]  # the token after a scheme, else the value
        for name, value in raw
        if name.lower().decode("latin-1") in SECRET_HEADERS
    )
    return tuple(f for f in found if f)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` redacted, with ``secrets`` (one request's keys) replaced too."""
    for secret in secrets:
        text = text.replace(secret, MARKER)
    return redact(text)


def response_headers(raw: Iterable[tuple[bytes, bytes]], *, keep_length: bool) -> RawHeaders:
    """The upstream's response headers for the client, less the hop-by-hop ones
    (``content-length`` kept with ``keep_length``: it frames the very bytes relayed)."""
    raw = list(raw)
    drop = hop_by_hop(raw) - ({b"content-length"} if keep_length else set())
    return [(name.lower(), value) for name, value in raw if name.lower() not in drop]
