"""The guard's idle gap on an HTTP/1.1 body, on the verified httpx2 / httpcore2 and off them.

httpcore2 reads an HTTP/1.1 body's read timeout once, when the body starts; the guard
lowers it at the first content, so on the versions the suite verified it makes that
body's reads take the request's read timeout on every read. On any other version
(here: the version lookup answers another version) the body is read the stock way: the
SDK's own read timeout stays, and the content clock still ends a stream of nothing but
keep-alives. Against a real server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpcore2
import httpx2
import pytest

from _server import CannedServer, Reply, openai_text
from railings import guard
from railings.errors import IdleTimeout
from railings.transport import guarded, verified

IDLE = 0.2  # the guard's idle gap in these tests
READ = 5.0  # the client's own read timeout: far beyond every pause here
PAUSE = 3 * IDLE  # a silence after the first content: past the gap, within READ


@pytest.fixture
def server() -> Iterator[CannedServer]:
    with CannedServer() as running:
        yield running


@pytest.fixture
def unverified(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if another httpx2 were installed: the lookup the gate reads at import."""
    monkeypatch.setattr(verified, "installed", lambda name: "0.0.1")
    assert not guarded.verified()
    monkeypatch.setattr(guarded, "READS_FOLLOW", guarded.verified())


def client(**settings: float | None) -> httpx2.Client:
    transport = guard.transport(httpx2.HTTPTransport(), idle=IDLE, **settings)
    return httpx2.Client(transport=transport, timeout=httpx2.Timeout(READ))


def paused() -> Reply:
    """A clean stream with a silence of PAUSE after its first content."""
    role, first, *rest = openai_text(["a", "b"])
    return Reply(chunks=[role, first, PAUSE, *rest])


def read_all(http: httpx2.Client, url: str) -> tuple[bytes, dict[str, object]]:
    seen = b""
    with http.stream("POST", url, json={}) as response:
        for chunk in response.iter_bytes():
            seen += chunk
        timeouts = response.request.extensions["timeout"]
    return seen, timeouts


def test_the_adapter_is_used_on_the_verified_versions() -> None:
    # A canary for upgrades: a new httpx2 or httpcore2 fails here first, and gets the
    # stock reading until the suite is run against it and the table moved.
    assert guarded.READS_FOLLOW, (guarded.VERIFIED_VERSIONS, httpx2.__version__)
    assert httpcore2.__version__ == guarded.VERIFIED_VERSIONS["httpcore2"]


def test_on_the_verified_versions_a_silence_after_content_is_the_idle_gap(
    server: CannedServer,
) -> None:
    server.push(paused())
    with client() as http, pytest.raises(httpx2.ReadTimeout) as raised:
        read_all(http, server.openai_base_url + "/chat/completions")
    verdict = guard.interruption(raised.value)
    assert isinstance(verdict, IdleTimeout) and verdict.idle_seconds == IDLE


@pytest.mark.usefixtures("unverified")
def test_off_them_the_connection_keeps_its_own_reads(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text(["a", "b"])))
    with client() as http:
        url = server.openai_base_url + "/chat/completions"
        with http.stream("POST", url, json={}) as response:
            stream = response.extensions["network_stream"]
            for _ in response.iter_bytes():
                assert "read" not in vars(stream)  # never adapted, before or after content
            assert response.request.extensions["timeout"]["read"] == READ  # never lowered


@pytest.mark.usefixtures("unverified")
def test_off_them_the_sdks_read_timeout_stays_in_force(server: CannedServer) -> None:
    server.push(paused())
    with client() as http:
        seen, timeouts = read_all(http, server.openai_base_url + "/chat/completions")
    assert seen == b"".join(openai_text(["a", "b"]))  # the silence passed, as without it
    assert timeouts["read"] == READ


@pytest.mark.usefixtures("unverified")
def test_off_them_the_async_guard_keeps_the_sdks_read_timeout(server: CannedServer) -> None:
    server.push(paused())

    async def go() -> bytes:
        transport = guard.async_transport(httpx2.AsyncHTTPTransport(), idle=IDLE)
        async with httpx2.AsyncClient(transport=transport, timeout=READ) as http:
            url = server.openai_base_url + "/chat/completions"
            async with http.stream("POST", url, json={}) as response:
                return b"".join([chunk async for chunk in response.aiter_bytes()])

    assert asyncio.run(go()) == b"".join(openai_text(["a", "b"]))


@pytest.mark.usefixtures("unverified")
def test_off_them_the_content_clock_still_ends_keepalives_only(server: CannedServer) -> None:
    role, first, *_ = openai_text(["a"])
    server.push(Reply(chunks=[role, first, *[0.02, b": ping\n\n"] * 500]))
    with client(content_idle=0.3) as http, pytest.raises(httpx2.ReadTimeout) as raised:
        read_all(http, server.openai_base_url + "/chat/completions")
    verdict = guard.interruption(raised.value)
    assert isinstance(verdict, IdleTimeout) and "only keep-alives" in verdict.message
    assert not verdict.empty
