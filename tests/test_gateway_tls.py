"""The gateway's upstream TLS against a hostile network: an attacker on the path.

A person on the path between the gateway and the provider can write bytes ahead of the
server's TLS handshake. Those bytes were never inside TLS: a client that hands them up
after a valid handshake hands up the attacker's answer as the provider's (the STARTTLS
injection class, CVE-2011-0411). Each case runs on asyncio's loop and on uvloop (which
``railings gateway`` runs on).
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

from _server import DONE, make_certificate, openai_text
from _tls_server import TLSProcess, TLSServer, inject
from railings.gateway.network import AsyncioBackend
from railings.gateway.upstream import client
from railings.transport.config import Timeouts

Runner = Callable[[Coroutine[Any, Any, Any]], Any]
LOOPS: dict[str, Runner] = {"asyncio": asyncio.run, "uvloop": uvloop.run}


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


def _trust(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certificate[0]))


def _ask(runner: Runner, url: str, trust: ssl.SSLContext) -> tuple[int | None, bytes, str | None]:
    """One streamed request through the gateway's upstream client."""

    async def go() -> tuple[int | None, bytes, str | None]:
        upstream = client(Timeouts(connect=5.0, first_byte=5.0), http2=False, tls=trust)
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

    result: tuple[int | None, bytes, str | None] = runner(go())
    return result


@pytest.mark.parametrize("loop", LOOPS)
def test_bytes_written_before_the_handshake_never_reach_the_caller(
    loop: str, certificate: tuple[Path, Path]
) -> None:
    with TLSProcess(certificate, "inject") as url:
        status, got, error = _ask(LOOPS[loop], url, _trust(certificate))
    assert b"INJECTED" not in got
    assert DONE not in got
    assert (status, error) == (None, "ConnectError")


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("backend", ["anyio", "asyncio"])
def test_start_tls_refuses_bytes_that_arrived_before_it(
    loop: str, backend: str, certificate: tuple[Path, Path]
) -> None:
    # Deterministic: the injected bytes are known to be waiting before start_tls runs.
    trust = _trust(certificate)

    async def go() -> str:
        network = httpcore2.AnyIOBackend() if backend == "anyio" else AsyncioBackend()
        port = int(url.rsplit(":", 1)[1])
        stream = await network.connect_tcp("127.0.0.1", port, timeout=5.0)
        for _ in range(100_000):
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
        return got[:40].decode("latin-1")

    with TLSServer(certificate, inject) as url:
        assert LOOPS[loop](go()) == "ConnectError"
