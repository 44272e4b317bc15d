"""The gateway's upstream TLS against a hostile network, on both network backends.

A person on the path between the gateway and the provider can write bytes ahead of the
server's TLS handshake. Those bytes were never inside TLS: a client that hands them up
after a valid handshake hands up the attacker's answer as the provider's (the STARTTLS
injection class, CVE-2011-0411). The other TLS edge cases (a close without
``close_notify``, mid-body and after a whole body; a renegotiation the server asks for;
a handshake cut short) must end the same on the stock backend (httpx2 on httpcore2's
anyio) and on the opt-in asyncio one. Each case runs on asyncio's loop and on uvloop
(which ``railings gateway`` runs on).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import httpcore2
import httpx2
import pytest
import uvloop

from _server import DONE, make_certificate
from _tls_server import (
    GENUINE,
    INJECTED,
    WHOLE_EVENTS,
    Renegotiating,
    TLSProcess,
    TLSServer,
    inject,
)
from gateway_kit import NO_WAITS, body
from railings.gateway import app
from railings.gateway.network import AsyncioBackend
from railings.gateway.serve import ServingThread
from railings.gateway.upstream import NETWORKS, Network, client
from railings.transport.config import Timeouts

Runner = Callable[[Coroutine[Any, Any, Any]], Any]
LOOPS: dict[str, Runner] = {"asyncio": asyncio.run, "uvloop": uvloop.run}
Outcome = tuple[int | None, bytes, str | None]  # status, body bytes, the exception's class


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


def _trust(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certificate[0]))


def _ask(runner: Runner, url: str, trust: ssl.SSLContext, network: Network) -> Outcome:
    """One streamed request through the gateway's upstream client."""

    async def go() -> Outcome:
        timeouts = Timeouts(connect=5.0, first_byte=5.0)
        upstream = client(timeouts, http2=False, tls=trust, network=network)
        status, got = None, b""
        try:
            async with upstream.stream("POST", url + "/v1/chat/completions", content=b"{}") as r:
                status = r.status_code
                async for chunk in r.aiter_raw():
                    got += chunk
        except httpx2.HTTPError as exc:
            return status, got, type(exc).__name__
        finally:
            await upstream.aclose()
        return status, got, None

    result: Outcome = runner(go())
    return result


# -- bytes before the handshake ------------------------------------------------------------


@pytest.mark.parametrize("network", NETWORKS)
@pytest.mark.parametrize("loop", LOOPS)
def test_bytes_written_before_the_handshake_never_reach_the_caller(
    loop: str, network: Network, certificate: tuple[Path, Path]
) -> None:
    # The attacker's server runs in a process of its own, as quick to write as a network.
    with TLSProcess(certificate, "inject") as url:
        status, got, error = _ask(LOOPS[loop], url, _trust(certificate), network)
    assert b"INJECTED" not in got
    assert DONE not in got
    assert (status, error) == (None, "ConnectError")


@pytest.mark.parametrize("backend", ["anyio", "asyncio"])
@pytest.mark.parametrize("loop", LOOPS)
def test_start_tls_refuses_bytes_that_arrived_before_it(
    loop: str, backend: str, certificate: tuple[Path, Path]
) -> None:
    # Deterministic: the injected bytes are known to be waiting before start_tls runs.
    trust = _trust(certificate)

    async def go(port: int) -> str:
        network = httpcore2.AnyIOBackend() if backend == "anyio" else AsyncioBackend()
        stream = await network.connect_tcp("127.0.0.1", port, timeout=5.0)
        for _ in range(10_000):  # bounded: the server writes them as it accepts
            if stream.get_extra_info("is_readable"):
                break
            await asyncio.sleep(0.001)
        try:
            tls = await stream.start_tls(trust, server_hostname="127.0.0.1", timeout=5.0)
        except httpcore2.ConnectError:
            await stream.aclose()
            return "ConnectError"
        got = await tls.read(65536, timeout=5.0)
        await tls.aclose()
        return got[:15].decode("latin-1")

    with TLSServer(certificate, inject) as url:
        assert LOOPS[loop](go(int(url.rsplit(":", 1)[1]))) == "ConnectError"


@pytest.mark.parametrize("network", NETWORKS)
@pytest.mark.parametrize("loop", LOOPS)
def test_the_gateway_never_answers_with_bytes_injected_before_the_handshake(
    loop: str, network: Network, certificate: tuple[Path, Path]
) -> None:
    # Every attempt (the first and the resends of the Empty rule) meets the injection.
    with TLSProcess(certificate, "inject") as upstream:
        served = app(upstream, journal=False, retry=NO_WAITS, network=network,
                     verify=_trust(certificate))  # fmt: skip
        with ServingThread(served, loop=loop) as url, httpx2.Client(timeout=30) as c:
            got = c.post(url + "/v1/chat/completions", json=body("openai"))
    assert b"INJECTED" not in got.content
    assert got.status_code == 502


# -- the other edge cases: the same on both backends ----------------------------------------


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    "script, expected",
    [
        ("cut_handshake", (None, b"", "ConnectError")),
        ("mid_body", (200, None, "RemoteProtocolError")),
        ("whole_body", (200, b"".join(WHOLE_EVENTS), None)),
        ("whole_body_notified", (200, b"".join(WHOLE_EVENTS), None)),
    ],
)
def test_tls_edge_cases_end_the_same_on_both_backends(
    loop: str, script: str, expected: Outcome, certificate: tuple[Path, Path]
) -> None:
    outcomes = []
    for network in NETWORKS:
        with TLSProcess(certificate, script) as url:
            outcomes.append(_ask(LOOPS[loop], url, _trust(certificate), network))
    stock, ours = outcomes
    assert ours == stock
    status, got, error = stock
    assert (status, error) == (expected[0], expected[2])
    if expected[1] is not None:
        assert got == expected[1]
    else:
        assert DONE not in got and b"whole" in got  # the half that arrived, no proof


@pytest.mark.parametrize("loop", LOOPS)
def test_a_renegotiation_the_server_asks_for_ends_the_same_on_both_backends(
    loop: str, certificate: tuple[Path, Path]
) -> None:
    outcomes = []
    for network in NETWORKS:
        server = Renegotiating(certificate, GENUINE)
        with server as url:
            outcomes.append(_ask(LOOPS[loop], url, _trust(certificate), network))
        assert server.renegotiated.is_set()  # the HelloRequest went out before the answer
    stock, ours = outcomes
    assert ours == stock == (200, GENUINE.split(b"\r\n\r\n", 1)[1], None)


def test_the_injected_answer_is_a_whole_proven_answer() -> None:
    # What the attacker writes would pass as finished if it were read: the tests above
    # refuse a forgery, not a malformed answer.
    assert INJECTED.startswith(b"HTTP/1.1 200 OK") and INJECTED.endswith(DONE)
