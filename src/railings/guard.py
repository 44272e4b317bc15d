"""The guard: proof before ending, for the official ``openai`` and ``anthropic`` SDKs.

::

    import anthropic, openai, railings.guard
    client = railings.guard.install(openai.OpenAI())
    aclient = railings.guard.install(anthropic.AsyncAnthropic())

:func:`install` guards a client that is already built -- an ``openai`` or
``anthropic`` client, sync or async, or an ``httpx2.Client`` /
``httpx2.AsyncClient`` -- in place: it wraps the client's transport and every
one of its mounts (the proxies from ``HTTPS_PROXY`` and the like, ``proxy=``,
``mounts=``), so the SDK's connection limits, timeouts, HTTP/2 setting,
proxies and custom transports all stay, and no mount is left unguarded.
:func:`transport` / :func:`async_transport` build one guarding transport for
a client you build yourself (``httpx2.Client(transport=...)``: httpx2 then
reads no proxy from the environment, as it never does with ``transport=``).

The guard wraps an httpx2 transport and watches one kind of response: a
successful ``text/event-stream`` answer to ``.../chat/completions`` (OpenAI wire
format), ``.../responses`` (OpenAI Responses) or ``.../messages`` (Anthropic).
The bytes pass through unchanged. Everything else -- other paths, other content
types, error statuses -- passes through untouched. One request header is
narrowed: on the watched paths, ``Accept-Encoding`` keeps only the codings the
guard can read (gzip, deflate, identity). httpx2 offers ``br`` and ``zstd`` as
soon as their decoders are importable (``zstd`` is in the standard library
from Python 3.14), and a stream in a coding the guard cannot read could not be
judged.

What the SDK sees. When the inner transport raises while the body streams
(a reset, a read timeout, a TLS error), the SDK gets that very exception, as
it would without the guard; the guard only attaches its verdict (a note, and
an attribute :func:`interruption` reads). Where the stream ended *without*
raising but without its provider's proof (``data: [DONE]``,
``response.completed`` / ``response.incomplete``, ``message_stop``), the guard
raises: :class:`httpx2.RemoteProtocolError`, the class the SDK already handles
for a broken connection (the openai SDK raises ``APIConnectionError`` from it),
whose ``__cause__`` is :class:`~railings.errors.StreamInterrupted`. A proof
followed by a connection break is a complete answer: the body ends at the break.

The idle clock starts at the first content (:mod:`railings.transport.watch`):
before it the SDK's own read timeout governs (600 s for both SDKs), so a model
that sends its headers, or ``response.created``, and then thinks for minutes is
never cut. From the first content, a silence of ``idle`` seconds (default 30)
is a read timeout: :class:`httpx2.ReadTimeout`, from which
:func:`interruption` finds :class:`~railings.errors.IdleTimeout`. Keep-alives
keep that clock alive but not the content clock: ``content_idle`` seconds
(default 300; 600 before the first content) of nothing but comments and pings
raise :class:`httpx2.ReadTimeout` from :class:`~railings.errors.IdleTimeout`
(checked as each chunk arrives: at the first keep-alive past the limit, never before).

Fail closed. The guard decodes exactly the codings httpx2 decodes
(:mod:`railings.transport.coding`), so it judges the bytes the SDK reads. A
stream it cannot read -- a coding httpx2 would decode and the guard cannot, more
than five codings, a body that does not decode -- raises
:class:`httpx2.DecodingError` (from :class:`~railings.errors.StreamInterrupted`)
instead of passing unjudged.

Bounded. The guard decodes incrementally, in pieces of at most 1 MiB, and never
holds a whole body (:mod:`railings.transport.watch`). One turn is bounded as in
the client (:mod:`railings.limits`, derived from the ``max_tokens`` the request
body carries, or ``limits=``): past a bound it raises
:class:`httpx2.RemoteProtocolError` from ``StreamInterrupted`` from
:class:`~railings.errors.TurnTooLarge`.

Cost. Every decoded piece is read by the core, as it passes, through one
:class:`~railings.turn.attempt.Attempt` per reading of a body: the termination
proof, the bounds and the content clock are the attempt's, as they are for
railings' own client (:mod:`railings.transport.watch`). A stream that is
abandoned early (the openai SDK stops at ``[DONE]``) is not judged: the reader
stopped, not the stream.

This module is the entry points (:func:`install`, :func:`interruption`); the
transports are built in :mod:`railings.guard_transport`, and re-exported here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import httpx2

from railings.errors import ConfigurationError, StreamInterrupted
from railings.guard_transport import (
    DEFAULT_CONTENT_IDLE,
    DEFAULT_IDLE,
    AsyncGuardTransport,
    GuardTransport,
    async_transport,
    transport,
)
from railings.limits import TurnLimits
from railings.transport import verified
from railings.transport.guarded import VERDICT
from railings.turn.profile import Profile

__all__ = [
    "DEFAULT_CONTENT_IDLE",
    "DEFAULT_IDLE",
    "AsyncGuardTransport",
    "GuardTransport",
    "async_transport",
    "install",
    "interruption",
    "transport",
]

C = TypeVar("C")


def install(
    client: C,
    *,
    idle: float | None = DEFAULT_IDLE,
    limits: TurnLimits | None = None,
    content_idle: float | None = DEFAULT_CONTENT_IDLE,
    profile: Profile | str | Path | None = None,
) -> C:
    """Guard ``client`` in place and return it: an ``openai`` / ``anthropic`` client
    (sync or async; the httpx2 client it holds), or an ``httpx2.Client`` /
    ``httpx2.AsyncClient``.

    Its transport and every mount are wrapped where they are, so everything the
    client was built with stays: proxies (from the environment or ``proxy=``),
    connection limits, HTTP/2, custom transports. A mount that routes to no proxy
    (``NO_PROXY``) uses the guarded transport. Installing twice changes nothing.
    ``profile``: the endpoint profile (:mod:`railings.profiles`; None: the one matching
    each request's URL, so ``api.openai.com`` is held to OpenAI's whole structure).
    Raises :class:`~railings.errors.ConfigurationError` for anything else.
    """
    http = _http_client(client)
    settings = {"idle": idle, "limits": limits, "content_idle": content_idle, "profile": profile}
    sync = isinstance(http, httpx2.Client)
    kind = httpx2.BaseTransport if sync else httpx2.AsyncBaseTransport
    wrapper = GuardTransport if sync else AsyncGuardTransport

    def guard(inner: object) -> object:
        if isinstance(inner, wrapper) or not isinstance(inner, kind):
            return inner
        return wrapper(inner, **settings)  # type: ignore[arg-type]

    # httpx2 keeps the default transport and the mounts (URL pattern -> transport, or
    # None for "no proxy here": the default) in these two attributes.
    http._transport = guard(http._transport)  # type: ignore[assignment]
    http._mounts = {  # type: ignore[assignment]
        pattern: None if mounted is None else guard(mounted)
        for pattern, mounted in http._mounts.items()
    }
    return client


# The httpx2 versions whose client layout install() reaches into (the private
# ``_transport`` and ``_mounts``), as tests/test_guard_install.py verified. On any other,
# install() refuses and names the public route: railings.guard.transport() at build time.
INSTALL_VERSIONS = {"httpx2": "2.16.2"}


def _http_client(client: object) -> httpx2.Client | httpx2.AsyncClient:
    """The httpx2 client ``client`` is, or holds (the SDKs keep theirs in ``_client``)."""
    http = client if isinstance(client, httpx2.Client | httpx2.AsyncClient) else None
    if http is None:
        held = getattr(client, "_client", None)
        http = held if isinstance(held, httpx2.Client | httpx2.AsyncClient) else None
    if http is None:
        raise ConfigurationError(
            f"railings.guard.install takes an openai or anthropic client or an httpx2 "
            f"client, not {type(client).__name__}"
        )
    if not verified.matches(INSTALL_VERSIONS):
        found = verified.installed("httpx2")
        raise ConfigurationError(
            f"railings.guard.install replaces a built client's transports, which it does "
            f"only on the httpx2 it was verified on ({INSTALL_VERSIONS['httpx2']}, not "
            f"{found}): build the client with transport=railings.guard.transport() (for "
            "the SDKs: http_client=httpx2.Client(transport=railings.guard.transport()))"
        )
    if not (hasattr(http, "_transport") and isinstance(getattr(http, "_mounts", None), dict)):
        raise ConfigurationError(
            "this httpx2 keeps its transports where railings.guard.install cannot find "
            "them: build the client with transport=railings.guard.transport()"
        )
    return http


def interruption(exc: BaseException) -> StreamInterrupted | None:
    """The :class:`StreamInterrupted` behind ``exc``, however the SDK wrapped it: the
    railings error in its chain of causes, or the verdict the guard attached to the
    transport error that broke the stream."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, StreamInterrupted):
            return current
        attached = getattr(current, VERDICT, None)
        if isinstance(attached, StreamInterrupted):
            return attached
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
