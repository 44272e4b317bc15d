"""HTTP/2 -> HTTP/1.1 fallback: one protocol crash, and this process stays on HTTP/1.1.

Some CDN edges negotiate HTTP/2 through ALPN and then fail at the protocol
layer (a GOAWAY right after the request, a broken preface). The failure arrives
wrapped several times (h2 -> httpcore2 -> httpx2 -> railings), so detection
walks the whole chain, ``__cause__`` and ``__context__``, and matches markers
in each exception's type name and message. Matching text rather than types is
deliberate: the markers survive any wrapping, and a false positive costs only
one harmless HTTP/1.1 replay.

One hit sets a sticky flag (:class:`Http2Fallback`): the failed request is
replayed once over HTTP/1.1 if nothing of its response had been received (the
attempt machine, :mod:`.machine`, decides), and every later request of the
clients sharing the flag goes straight to HTTP/1.1. The flag is the client's
context's (:mod:`.context`); :data:`FALLBACK` is the process-wide default one.
"""

from __future__ import annotations

import threading

from railings.errors import RailingsError

__all__ = ["FALLBACK", "HTTP2_MARKERS", "Http2Fallback", "http2_failure"]

HTTP2_MARKERS: tuple[str, ...] = (
    "http2",
    "goaway",
    "preface",
    "connectionterminated",
    "protocolerror",
)


def _chain(exc: BaseException) -> list[BaseException]:
    """Every exception reachable through ``__cause__`` and ``__context__`` (cycle-safe)."""
    out: list[BaseException] = []
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        out.append(current)
        for nxt in (current.__cause__, current.__context__):
            if nxt is not None:
                stack.append(nxt)
    return out


def http2_failure(exc: BaseException) -> str | None:
    """The first marker found along ``exc``'s chain, or None: not an HTTP/2 protocol failure."""
    for link in _chain(exc):
        if isinstance(link, RailingsError):
            # Railings' own errors say what the upstream said (a provider's error message,
            # an error body): words it chose, not the protocol's. The failure they map is
            # further down the chain, as the foreign exception it was.
            continue
        kind = type(link)
        text = f"{kind.__module__}.{kind.__qualname__} {link}".lower()
        # "httpx2" and "httpcore2" must not read as "http2": strip the package names.
        text = text.replace("httpx2", "").replace("httpcore2", "")
        for marker in HTTP2_MARKERS:
            if marker in text:
                return marker
    return None


class Http2Fallback:
    """The sticky flag. ``broken`` stays True once set (``reset`` is for tests). Clients
    share it through their :class:`~.context.ClientContext`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason: str | None = None

    @property
    def broken(self) -> bool:
        """True once an HTTP/2 protocol failure was marked: later requests go over HTTP/1.1."""
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        """The marker of the first failure (one of :data:`HTTP2_MARKERS`), or None."""
        return self._reason

    def mark(self, reason: str) -> None:
        """Set the flag for good; only the first reason is kept."""
        with self._lock:
            if self._reason is None:
                self._reason = reason

    def reset(self) -> None:
        """Clear the flag, back to HTTP/2 (for tests: nothing in railings unsets it)."""
        with self._lock:
            self._reason = None


# The flag of the default client context: clients given no context share it.
FALLBACK = Http2Fallback()
