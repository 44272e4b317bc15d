"""HTTP/2 -> HTTP/1.1 fallback: the marker walk, the sticky flag, and a real GOAWAY over TLS.

The server in tests/_server.py speaks TLS with ALPN: a connection that
negotiates h2 is answered with an HTTP/2 GOAWAY (PROTOCOL_ERROR) right after the
request headers, the failure some CDN edges produce; HTTP/1.1 is served normally.
So the exception chain under test is the real one, h2 -> httpcore2 -> httpx2.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path

import h2.events
import httpcore2
import httpx2
import pytest

from _server import CannedServer, Reply, make_certificate, openai_text
from railings.errors import TransportError
from railings.messages import User
from railings.transport import (
    FALLBACK,
    AsyncProviderClient,
    ClientConfig,
    Http2Fallback,
    Timeouts,
    TurnStream,
    http2_failure,
    no_waits,
)
from railings.turn.model import Outcome


@pytest.fixture(autouse=True)
def _fresh_flag() -> Iterator[None]:
    FALLBACK.reset()
    with no_waits():
        yield
    FALLBACK.reset()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


def _raise_chain() -> TransportError:
    """The chain httpcore2 builds for a GOAWAY, then railings' mapping on top."""
    terminated = h2.events.ConnectionTerminated()
    try:
        try:
            try:
                raise httpcore2.RemoteProtocolError(terminated)
            except httpcore2.RemoteProtocolError as exc:
                raise httpx2.RemoteProtocolError(str(exc)) from exc
        except httpx2.RemoteProtocolError as exc:
            raise TransportError(f"connection failed: {exc}") from exc
    except TransportError as exc:
        return exc


# -- detection --------------------------------------------------------------------------------


def test_markers_are_found_anywhere_in_the_chain() -> None:
    error = _raise_chain()
    assert http2_failure(error) in ("connectionterminated", "protocolerror")
    # Through __context__ too (an error raised while handling another).
    try:
        try:
            raise ValueError("GOAWAY received")
        except ValueError:
            raise TransportError("wrapped") from None
    except TransportError as exc:
        exc.__suppress_context__ = False
        assert http2_failure(exc) == "goaway"
    assert http2_failure(RuntimeError("invalid HTTP/2 preface")) in ("http2", "preface")


def test_plain_network_errors_are_not_http2_failures() -> None:
    assert http2_failure(TransportError("connection failed: connection refused")) is None
    # "httpx2" and "httpcore2" in module names do not read as "http2".
    assert http2_failure(httpx2.ConnectError("All connection attempts failed")) is None


def test_cyclic_chains_terminate() -> None:
    a, b = ValueError("a"), ValueError("b")
    a.__context__, b.__context__ = b, a
    assert http2_failure(a) is None


def test_flag_is_sticky() -> None:
    flag = Http2Fallback()
    assert not flag.broken
    flag.mark("goaway")
    flag.mark("preface")
    assert flag.broken and flag.reason == "goaway"
    flag.reset()
    assert not flag.broken


# -- a real HTTP/2 server that sends GOAWAY ---------------------------------------------------


def _config(server: CannedServer, cert: Path, http2: bool = True) -> ClientConfig:
    return ClientConfig(
        "openai",
        "m",
        base_url=server.openai_base_url,
        api_key="k",
        http2=http2,
        verify=ssl.create_default_context(cafile=str(cert)),
        timeouts=Timeouts(connect=2, first_byte=5, idle=2),
    )


def _turns(cfg: ClientConfig, count: int) -> list[TurnStream]:
    async def go() -> list[TurnStream]:
        streams = []
        async with AsyncProviderClient(cfg) as client:
            for _ in range(count):
                stream = client.stream_turn([User("hi")])
                await stream.result()
                streams.append(stream)
        return streams

    return asyncio.run(go())


def test_goaway_replays_over_http11_and_stays(certificate: tuple[Path, Path]) -> None:
    with CannedServer(tls=certificate) as server:
        server.push(Reply(chunks=openai_text(["one"])), Reply(chunks=openai_text(["two"])))
        first, second = _turns(_config(server, certificate[0]), 2)
        assert first.turn.text == "one" and second.turn.text == "two"
        assert [r.protocol for r in server.requests] == ["HTTP/2", "HTTP/1.1", "HTTP/1.1"]
        assert server.h2_connections == 1  # the second turn went straight to HTTP/1.1
        assert FALLBACK.broken and FALLBACK.reason is not None
        (replay,) = first.retries
        assert replay.replay and http2_failure(replay.error) is not None
        assert first.attempts == 1  # the replay is free: not a retry attempt
        assert first.http_version == second.http_version == "HTTP/1.1"


def test_http2_off_never_tries_it(certificate: tuple[Path, Path]) -> None:
    with CannedServer(tls=certificate) as server:
        server.push(Reply(chunks=openai_text(["plain"])))
        (stream,) = _turns(_config(server, certificate[0], http2=False), 1)
        assert stream.turn.text == "plain" and server.h2_connections == 0
        assert not FALLBACK.broken


def test_goaway_after_content_is_not_replayed(certificate: tuple[Path, Path]) -> None:
    partial = b"".join(openai_text(["half"], finish=None, done=False))
    with CannedServer(tls=certificate, h2_partial=partial) as server:
        server.push(Reply(chunks=openai_text(["later"])))
        first, second = _turns(_config(server, certificate[0]), 2)
        assert first.turn.outcome is Outcome.PARTIAL and first.turn.text == "half"
        assert first.retries == [] and first.http_version == "HTTP/2"
        assert FALLBACK.broken  # ... but the next request went over HTTP/1.1
        assert second.turn.text == "later" and second.http_version == "HTTP/1.1"
        assert [r.protocol for r in server.requests] == ["HTTP/2", "HTTP/1.1"]
