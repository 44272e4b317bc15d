"""The upstream side: where a request goes, which headers travel, and one attempt.

The upstream is an origin, optionally with a path prefix; the request path is
appended as it came (``--upstream https://api.openai.com`` and a client base URL
``http://127.0.0.1:PORT/v1``). Request headers go upstream as they came, keys
included, except the hop-by-hop ones (RFC 9110 §7.6.1) and ``host``; on the model
paths ``accept-encoding`` becomes ``identity``, because the judge reads the bytes
it passes on. Response headers come back the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

import httpx2

from railings.errors import ConfigurationError
from railings.redact import MARKER, SECRET_HEADERS, redact
from railings.transport.config import Timeouts

__all__ = [
    "HOP_BY_HOP",
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


def client(
    timeouts: Timeouts, *, http2: bool = True, transport: httpx2.AsyncBaseTransport | None = None
) -> httpx2.AsyncClient:
    """The pooled client every request of one gateway shares.

    No connection cap (each open stream holds one HTTP/1.1 connection; HTTP/2 shares
    them), keep-alive for reuse, no environment proxies or redirects: the gateway
    forwards exactly where it was told, and a redirect goes back to the client.
    ``transport`` replaces httpx2's own (a custom TLS setup, a recording tap).
    """
    return httpx2.AsyncClient(
        http2=http2,
        timeout=httpx2.Timeout(
            connect=timeouts.connect,
            read=timeouts.first_byte,
            write=timeouts.write,
            pool=timeouts.connect,
        ),
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=256),
        follow_redirects=False,
        trust_env=False,
        transport=transport,
    )


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
