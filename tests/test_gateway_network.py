"""The gateway's upstream network backends: the opt-in asyncio one answers as the stock one.

Each case runs one request against a real server on 127.0.0.1 twice, through httpx2's
stock transport (httpcore2 on anyio, the gateway's default) and through the opt-in one
(httpcore2 on AsyncioBackend), and asserts the two saw the same bytes and the same
exception class. The TLS edge cases are in tests/test_gateway_tls.py.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import ssl
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import httpcore2
import httpx2
import pytest
import uvloop

from _server import CannedServer, Reply, make_certificate
from railings.errors import ConfigurationError
from railings.gateway import app, upstream
from railings.gateway.network import AsyncioBackend
from railings.gateway.upstream import (
    ASYNCIO_VERIFIED,
    POOLS,
    VERIFIED_VERSIONS,
    Clients,
    asyncio_transport,
)
from railings.transport.config import Timeouts

Runner = Callable[[Coroutine[Any, Any, Any]], Any]
LIMITS = httpx2.Limits(max_connections=None, max_keepalive_connections=4)
EVENTS = [b'data: {"i": %d}\n\n' % i for i in range(40)]


@pytest.fixture(autouse=True)
def collected() -> Iterator[None]:
    # Each case's connections are collected within the case: a transport left unclosed
    # would warn here, in the case that left it, not in a later test.
    yield
    gc.collect()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Runner:
    """Each case on asyncio's own loop and on uvloop (which ``railings gateway`` runs on)."""
    return asyncio.run if request.param == "asyncio" else uvloop.run


def _read(
    run: Runner, url: str, transport: httpx2.AsyncBaseTransport | None, *, read: float = 5.0,
    verify: ssl.SSLContext | bool = True, slow: bool = False,
) -> tuple[bytes, str | None]:  # fmt: skip
    """The body bytes that arrived and the exception class that ended it (None: clean)."""

    async def go() -> tuple[bytes, str | None]:
        got = bytearray()
        timeout = httpx2.Timeout(connect=2.0, read=read, write=2.0, pool=2.0)
        async with httpx2.AsyncClient(transport=transport, timeout=timeout, verify=verify) as c:
            try:
                async with c.stream("POST", url + "/v1/chat/completions", content=b"{}") as r:
                    if slow:
                        await asyncio.sleep(0.3)  # the server fills the socket meanwhile
                    async for chunk in r.aiter_raw():
                        got += chunk
            except httpx2.HTTPError as exc:
                return bytes(got), type(exc).__name__
        return bytes(got), None

    result: tuple[bytes, str | None] = run(go())
    return result


def _both(
    run: Runner, reply: Reply, *, tls: tuple[Path, Path] | None = None, **options: object
) -> tuple[tuple[bytes, str | None], ...]:
    """The same reply read through the stock transport, then through the asyncio one."""
    trust = ssl.create_default_context(cafile=str(tls[0])) if tls else _context()
    outcomes = []
    for ours in (False, True):
        with CannedServer(tls=tls) as server:
            server.push(reply)
            transport = (
                asyncio_transport(trust, http2=False, limits=LIMITS)
                if ours
                else httpx2.AsyncHTTPTransport(verify=trust, http2=False, limits=LIMITS)
            )
            outcomes.append(_read(run, server.url, transport, **options))  # type: ignore[arg-type]
    return tuple(outcomes)


def _context() -> ssl.SSLContext:
    return httpx2.create_ssl_context(trust_env=False)


def test_the_gateway_pools_run_on_the_stock_backend_by_default() -> None:
    clients = Clients(Timeouts())
    assert len(clients.pools) == POOLS
    for pool in clients.pools:
        inner = pool._transport._pool  # type: ignore[attr-defined]
        assert not isinstance(inner._network_backend, AsyncioBackend)
    asyncio.run(clients.aclose())


def test_the_asyncio_backend_is_used_on_the_verified_versions_only() -> None:
    # A canary for httpx2 upgrades: the backend goes in through the transport's private
    # pool, so only on the versions these tests verified; a new httpx2 fails here first,
    # and gets the stock transport until the suite is run against it and the gate moved.
    assert ASYNCIO_VERIFIED, (VERIFIED_VERSIONS, httpx2.__version__)
    clients = Clients(Timeouts(), network="asyncio")
    for pool in clients.pools:
        inner = pool._transport._pool  # type: ignore[attr-defined]
        assert isinstance(inner._network_backend, AsyncioBackend)
    asyncio.run(clients.aclose())


def test_an_unverified_httpx2_gets_the_stock_transport(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(upstream, "ASYNCIO_VERIFIED", False)
    upstream._unverified.cache_clear()
    transport = asyncio_transport(_context(), http2=False, limits=LIMITS)
    assert not isinstance(transport._pool._network_backend, AsyncioBackend)  # type: ignore[attr-defined]
    assert "using 'stock'" in caplog.text
    asyncio.run(transport.aclose())


def test_an_unknown_network_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="network must be one of stock, asyncio"):
        app("http://127.0.0.1:9", journal=False, network="trio")  # type: ignore[arg-type]


def test_a_whole_stream_arrives_byte_for_byte(run: Runner) -> None:
    stock, ours = _both(run, Reply(chunks=EVENTS))
    assert ours == stock == (b"".join(EVENTS), None)


def test_a_body_larger_than_the_read_buffer_arrives_whole_while_reading_pauses(run: Runner) -> None:
    # 4 MiB written at once while the client does not read: the backend pauses the
    # socket past its buffer bound and resumes it as the body is read.
    big = [b"x" * (1 << 20)] * 4
    stock, ours = _both(
        run, Reply(chunks=big, headers=(("content-type", "text/plain"),)), slow=True
    )
    assert ours == stock == (b"".join(big), None)


@pytest.mark.parametrize("end", ["reset", "close"])
def test_a_broken_body_raises_what_anyio_raises(run: Runner, end: str) -> None:
    stock, ours = _both(run, Reply(chunks=EVENTS[:3], end=end))  # type: ignore[arg-type]
    assert stock[1] is not None
    assert ours == stock


def test_a_silent_upstream_times_out_as_with_anyio(run: Runner) -> None:
    stock, ours = _both(run, Reply(chunks=[EVENTS[0], 2.0, EVENTS[1]]), read=0.3)
    assert ours == stock == (EVENTS[0], "ReadTimeout")


def test_a_refused_connection_is_a_connect_error(run: Runner) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: refused
        url = f"http://127.0.0.1:{port}"
        stock = _read(run, url, None)
        ours = _read(run, url, asyncio_transport(_context(), http2=False, limits=LIMITS))
    assert ours == stock == (b"", "ConnectError")


def test_tls_streams_through_the_loops_tls(run: Runner, certificate: tuple[Path, Path]) -> None:
    stock, ours = _both(run, Reply(chunks=EVENTS), tls=certificate)
    assert ours == stock == (b"".join(EVENTS), None)


def test_an_untrusted_certificate_is_a_connect_error(
    run: Runner, certificate: tuple[Path, Path]
) -> None:
    outcomes = []
    for ours in (False, True):
        with CannedServer(tls=certificate) as server:
            server.push(Reply(chunks=EVENTS))
            transport = (
                asyncio_transport(_context(), http2=False, limits=LIMITS)
                if ours
                else httpx2.AsyncHTTPTransport(verify=_context(), http2=False, limits=LIMITS)
            )
            outcomes.append(_read(run, server.url, transport))
    assert outcomes[1] == outcomes[0] == (b"", "ConnectError")


def test_http2_is_negotiated_and_read_on_the_backend(
    run: Runner, certificate: tuple[Path, Path]
) -> None:
    # The canned server answers h2 with the start of an event stream, then GOAWAY: the
    # bytes before it arrive, and the break is httpx2's RemoteProtocolError on both
    # backends (the SETTINGS, HEADERS and DATA frames all went through each).
    trust = ssl.create_default_context(cafile=str(certificate[0]))
    outcomes = []
    for ours in (False, True):
        with CannedServer(tls=certificate, h2_partial=EVENTS[0]) as server:
            transport = (
                asyncio_transport(trust, http2=True, limits=LIMITS)
                if ours
                else httpx2.AsyncHTTPTransport(verify=trust, http2=True, limits=LIMITS)
            )
            outcomes.append(_read(run, server.url, transport))
            assert server.h2_connections == 1
    assert outcomes[1] == outcomes[0] == (EVENTS[0], "RemoteProtocolError")


def _listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    return server


def test_closing_after_a_write_timeout_closes_the_socket_at_once() -> None:
    # The peer accepts and never reads: writes fill both buffers and time out. Closing
    # then must not wait to send what is buffered (forever, here): the socket goes now.
    server = _listener()

    async def go() -> tuple[str, int]:
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", server.getsockname()[1], 2.0)
        peer, _ = server.accept()
        raised = ""
        try:
            for _ in range(4096):  # at most 256 MiB: far past any socket buffer
                await stream.write(b"x" * 65536, timeout=0.05)
        except (httpcore2.WriteTimeout, httpcore2.WriteError) as exc:
            raised = type(exc).__name__
        sock = stream.get_extra_info("socket")
        await stream.aclose()
        await asyncio.sleep(0)  # one loop turn: abort() releases the socket on the next
        peer.close()
        return raised, sock.fileno()

    try:
        raised, fileno = asyncio.run(go())
    finally:
        server.close()
    assert raised == "WriteTimeout"
    assert fileno == -1


def test_a_read_without_a_limit_is_not_cut_by_an_earlier_reads_timer() -> None:
    # A first read with a 1 s limit waits for its data (its timer stays scheduled: the
    # data comes at once, the margin is for a busy machine); a second read with no limit
    # must then wait as long as it takes, past that timer, as with anyio.
    server = _listener()

    async def go() -> tuple[bytes, bytes]:
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", server.getsockname()[1], 2.0)
        peer, _ = server.accept()
        loop = asyncio.get_running_loop()
        loop.call_later(0.01, peer.send, b"a")
        first = await stream.read(10, timeout=1.0)
        loop.call_later(1.3, peer.send, b"b")  # past the first read's deadline
        second = await stream.read(10, timeout=None)
        await stream.aclose()
        peer.close()
        return first, second

    try:
        assert asyncio.run(go()) == (b"a", b"b")
    finally:
        server.close()


def test_socket_options_are_set_on_the_connection() -> None:
    server = _listener()

    async def go() -> int:
        option = (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        backend = AsyncioBackend()
        port = server.getsockname()[1]
        stream = await backend.connect_tcp("127.0.0.1", port, 2.0, socket_options=[option])
        peer, _ = server.accept()
        value = stream.get_extra_info("socket").getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)
        await stream.aclose()
        peer.close()
        return int(value)

    try:
        assert asyncio.run(go()) == 1
    finally:
        server.close()
