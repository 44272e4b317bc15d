"""The guarding transports behind :mod:`railings.guard`: which responses are watched, how.

:class:`GuardTransport` and :class:`AsyncGuardTransport` wrap an httpx2
transport. On the paths the guard watches (:func:`railings.transport.config.provider_for_path`)
a request's ``Accept-Encoding`` is narrowed to the codings the guard reads; a
successful ``text/event-stream`` answer comes back with its body wrapped
(:mod:`railings.transport.guarded`), watched by a fresh
:class:`~railings.transport.watch.StreamWatch` per reading, with the bounds
derived from the ``max_tokens`` the request body carries. Everything else passes
through untouched. :mod:`railings.guard` says what the SDK sees; this module
only builds the wrapping.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Generic, Self, TypeVar

import httpx2

from railings.limits import TurnLimits
from railings.profiles import choose, label, read_directory
from railings.transport.coding import Unreadable, codings
from railings.transport.config import provider_for_path
from railings.transport.guarded import AsyncGuardStream, GuardStream
from railings.transport.response import is_event_stream
from railings.transport.watch import StreamWatch
from railings.turn.limit import limit_in_body
from railings.turn.profile import Profile

__all__ = [
    "DEFAULT_CONTENT_IDLE",
    "DEFAULT_IDLE",
    "PROFILE",
    "AsyncGuardTransport",
    "GuardTransport",
    "async_transport",
    "transport",
]

DEFAULT_IDLE = 30.0
DEFAULT_CONTENT_IDLE = 300.0
# Before the first content the content clock waits as long as the client's first_byte.
_FIRST_CONTENT = 600.0

_Watch = Callable[[], StreamWatch]

PROFILE = "railings.profile"
"""The response extension naming the endpoint profile that judges a watched stream (a
built-in's name, ``wire``, or ``custom``: :func:`railings.profiles.label`)."""


def transport(
    inner: httpx2.BaseTransport | None = None,
    *,
    idle: float | None = DEFAULT_IDLE,
    limits: TurnLimits | None = None,
    content_idle: float | None = DEFAULT_CONTENT_IDLE,
    profile: Profile | str | Path | None = None,
) -> httpx2.BaseTransport:
    """A guarding wrapper around ``inner`` (default: ``httpx2.HTTPTransport()``)."""
    inner = inner if inner is not None else httpx2.HTTPTransport()
    return GuardTransport(
        inner, idle=idle, limits=limits, content_idle=content_idle, profile=profile
    )


def async_transport(
    inner: httpx2.AsyncBaseTransport | None = None,
    *,
    idle: float | None = DEFAULT_IDLE,
    limits: TurnLimits | None = None,
    content_idle: float | None = DEFAULT_CONTENT_IDLE,
    profile: Profile | str | Path | None = None,
) -> httpx2.AsyncBaseTransport:
    """A guarding wrapper around ``inner`` (default: ``httpx2.AsyncHTTPTransport()``)."""
    inner = inner if inner is not None else httpx2.AsyncHTTPTransport()
    return AsyncGuardTransport(
        inner, idle=idle, limits=limits, content_idle=content_idle, profile=profile
    )


def _max_tokens(request: httpx2.Request) -> int | None:
    """The output limit the request asked for, read from its JSON body (None: unknown)."""
    try:
        content = request.content
    except httpx2.RequestNotRead:
        return None
    return limit_in_body(content)  # every wire's spelling (railings.turn.limit)


_ASKED = ("gzip", "deflate")  # what the guard reads, so what it lets a watched request ask for


def _ask_readable(request: httpx2.Request) -> None:
    """Narrow ``Accept-Encoding`` on a watched path to the codings the guard reads."""
    if provider_for_path(request.url.path) is None:
        return
    offered = request.headers.get("accept-encoding")
    if offered is None:
        # RFC 9110 §12.5.3: no Accept-Encoding means any coding is acceptable.
        request.headers["accept-encoding"] = ", ".join(_ASKED)
        return
    kept = [
        item.strip()
        for item in offered.split(",")
        if item.partition(";")[0].strip().lower() in (*_ASKED, "identity")
    ]
    request.headers["accept-encoding"] = ", ".join(kept) or "identity"


T = TypeVar("T", httpx2.BaseTransport, httpx2.AsyncBaseTransport)


class _Guard(Generic[T]):
    """What both guard transports hold: the inner transport and the settings."""

    def __init__(
        self,
        inner: T,
        *,
        idle: float | None = DEFAULT_IDLE,
        limits: TurnLimits | None = None,
        content_idle: float | None = DEFAULT_CONTENT_IDLE,
        profile: Profile | str | Path | None = None,
    ) -> None:
        self.inner: T = inner
        self._idle = idle
        self._limits = limits
        self._content_idle = content_idle
        # A name, a file or the profiles directory is read now: a mistake fails at
        # install, not per request once the upstream has answered.
        if profile is None:
            read_directory()
        self._profile = profile if profile is None else choose(profile, "")

    def _watch(self, request: httpx2.Request, response: httpx2.Response) -> _Watch | None:
        """How to watch a response the guard understands (a fresh watch per reading of
        its body), or None: pass it through."""
        if not is_event_stream(response):
            return None
        provider = provider_for_path(request.url.path)
        if provider is None:
            return None
        # Exactly the codings httpx2 will undo before the SDK reads the body (see coding.py):
        # one the guard cannot read is refused at the first read, never passed unjudged.
        applied: list[str] | Unreadable
        try:
            applied = codings(response.headers.get_list("content-encoding"))
        except Unreadable as exc:
            applied = exc
        timeouts = request.extensions.get("timeout")
        max_tokens = _max_tokens(request)
        content_idle = self._content_idle
        first_content = None if content_idle is None else max(content_idle, _FIRST_CONTENT)
        # By the request's URL: a profile that names models applies only when chosen by name.
        judged = choose(self._profile, str(request.url))
        response.extensions[PROFILE] = label(judged)

        def watch() -> StreamWatch:
            return StreamWatch(
                provider,
                timeouts if isinstance(timeouts, dict) else None,
                self._idle,
                applied,
                max_tokens=max_tokens,
                limits=self._limits,
                content_idle=content_idle,
                first_content=first_content,
                profile=judged,
            )

        return watch


class GuardTransport(_Guard[httpx2.BaseTransport], httpx2.BaseTransport):
    """See the module docstring. ``idle`` is the longest silence once content streams
    (None: the SDK's read timeout stays); ``limits`` the bounds on one turn (default:
    derived from the request's ``max_tokens``); ``content_idle`` the longest run of
    nothing but keep-alives (None: off); ``profile`` the endpoint profile
    (:mod:`railings.profiles`; None: the one matching each request's URL). ``inner`` is
    the transport it guards."""

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through the inner transport; a watched stream comes back
        wrapped, to raise when it ends without its proof. Anything else is untouched."""
        _ask_readable(request)
        response = self.inner.handle_request(request)
        if isinstance(response.stream, httpx2.SyncByteStream):
            watch = self._watch(request, response)
            if watch is not None:
                response.stream = GuardStream(
                    response.stream,
                    watch,
                    response.extensions,
                    request.extensions.get("timeout"),
                )
        return response

    def __enter__(self) -> Self:
        self.inner.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        self.inner.__exit__(exc_type, exc_value, traceback)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


class AsyncGuardTransport(_Guard[httpx2.AsyncBaseTransport], httpx2.AsyncBaseTransport):
    """The async twin of :class:`GuardTransport`, with the same settings."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through the inner transport; a watched stream comes back
        wrapped, to raise when it ends without its proof. Anything else is untouched."""
        _ask_readable(request)
        response = await self.inner.handle_async_request(request)
        if isinstance(response.stream, httpx2.AsyncByteStream):
            watch = self._watch(request, response)
            if watch is not None:
                response.stream = AsyncGuardStream(
                    response.stream,
                    watch,
                    response.extensions,
                    request.extensions.get("timeout"),
                )
        return response

    async def __aenter__(self) -> Self:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.inner.__aexit__(exc_type, exc_value, traceback)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()
