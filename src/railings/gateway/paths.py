"""Request paths for the upstream: dot segments removed, and nothing that climbs out.

The upstream may carry a path prefix (``--upstream https://host/openai``); a request
path is appended to it. Joined first and normalised after, ``/../../admin`` would
reach ``https://host/admin``, with the client's key. So the request path is made
safe on its own, before the join, the way nginx and Envoy treat a request target:

1. RFC 3986 §5.2.4 ``remove_dot_segments`` on the path, ``.`` and ``..`` removed
   where they are whole segments (``a..b`` is a name). A ``..`` that would climb
   above the request's root is refused, never clamped: what it meant is unknown.
2. Refused outright, because servers read them differently and the gateway cannot
   know how the upstream does: a dot segment spelled with ``%2e`` (``%2e%2e``,
   ``.%2E``), an encoded slash (``%2f``) or backslash (``%5c``, and ``\\`` itself,
   which some servers take for ``/``), an encoded NUL (``%00``), and a dot segment
   with path parameters (``..;x``, which Java servers read as ``..``).

Every other byte is forwarded as the client spelled it. :func:`route` is what the
gateway does with a request target: the cleaned path, the judged wire it speaks
(if any) and the target to append to the upstream.

A judged model call is a ``POST`` to a wire's request path, or the ``GET`` that streams
a response the provider keeps again (``{request path}/{id}?stream=true``, with or
without ``starting_after``: :class:`~railings.providers.base.Resumption`); every other
``GET`` of a kept response (a retrieval) and its cancel are passed through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, unquote

from railings.gateway.shapes import judged
from railings.providers import spec
from railings.transport.config import provider_for_path

__all__ = ["BadPath", "Route", "clean_path", "judged_provider", "route"]

# Encoded slash, backslash and NUL, in either case.
_AMBIGUOUS = re.compile(rb"%(?:2f|5c|00)", re.IGNORECASE)
_ENCODED_DOT = re.compile(rb"%2e", re.IGNORECASE)


class BadPath(Exception):
    """A request path the gateway refuses (400); the message says why."""


def clean_path(raw: bytes) -> bytes:
    """``raw`` (an origin-form path, no query) with its dot segments removed.

    Raises :class:`BadPath` for a path that does not start with ``/``, climbs above
    its root, or holds a form the module docstring refuses.
    """
    if not raw.startswith(b"/"):
        # "@host/..." or "host/...": appended to the upstream's origin, it names another host.
        raise BadPath("the request target is not a path")
    if b"\\" in raw or _AMBIGUOUS.search(raw):
        raise BadPath("the path holds an encoded slash, a backslash or a NUL")
    if b"." not in raw and b"%" not in raw:
        return raw  # the common path: no segment can be a dot segment
    out: list[bytes] = []
    segments = raw[1:].split(b"/")
    for i, segment in enumerate(segments):
        name = segment.partition(b";")[0]
        dots = _ENCODED_DOT.sub(b".", name)
        if dots not in (b".", b".."):
            out.append(segment)
            continue
        if dots != segment:
            raise BadPath("a dot segment is encoded or carries parameters")
        if dots == b"..":
            if not out:
                raise BadPath("the path climbs above its root")
            out.pop()
        if i == len(segments) - 1:
            out.append(b"")  # "/a/b/.." is "/a/": the last segment stays a directory
    return b"/" + b"/".join(out)


def judged_provider(method: str, path: str, query: bytes = b"") -> str | None:
    """The wire of a judged model call on ``path`` (percent-decoded) with ``query``; None
    for all that is passed through (other methods and paths, and wires the gateway
    answers not in)."""
    if method == "POST":
        provider = provider_for_path(path)
    elif method == "GET" and _streams(query):
        provider = _kept_stream(path)
    else:
        return None
    return provider if provider is not None and judged(provider) else None


def _streams(query: bytes) -> bool:
    values = parse_qs(query.decode("latin-1")).get("stream")
    return values is not None and values[-1].lower() == "true"


def _kept_stream(path: str) -> str | None:
    """The wire whose kept response ``path`` streams again (``{request path}/{id}``)."""
    parent, _, response_id = path.rpartition("/")
    provider = provider_for_path(parent) if response_id and parent else None
    if provider is None or spec(provider).resumption is None:
        return None
    return provider


@dataclass(frozen=True, slots=True)
class Route:
    """Where one request goes: its cleaned, percent-decoded ``path`` (the journal's and
    the log's), the judged ``provider`` or None, and the ``target`` (path and query, as
    the client encoded them) appended to the upstream."""

    path: str
    provider: str | None
    target: str


def route(scope: Any) -> Route:
    """The :class:`Route` of an ASGI HTTP ``scope``; raises :class:`BadPath`."""
    path, method = scope["path"], scope["method"]
    raw = scope.get("raw_path") or quote(path).encode()
    clean = clean_path(raw)
    if clean != raw:  # dot segments removed: routed by what goes upstream
        path = unquote(clean.decode("latin-1"))
    query = scope.get("query_string") or b""
    target = (clean + (b"?" + query if query else b"")).decode("latin-1")
    return Route(path, judged_provider(method, path, query), target)
