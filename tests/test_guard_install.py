"""``railings.guard.install(client)``: a client already built is guarded in place, and
keeps everything it was built with -- proxies, limits, HTTP/2, custom transports.

The proxy is a real CONNECT proxy on 127.0.0.1 (below, in this file), in front of a
TLS server on 127.0.0.1 with a certificate made for the test run.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from _server import CannedServer, Reply, anthropic_text, make_certificate, openai_text
from railings import guard
from railings.errors import ConfigurationError, StreamInterrupted
from railings.guard import AsyncGuardTransport, GuardTransport

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


class ConnectProxy:
    """An HTTP CONNECT proxy on 127.0.0.1 that tunnels to 127.0.0.1 only, and records
    every tunnel it opened."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.tunnels: list[str] = []
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def close(self) -> None:
        """Stop accepting, end every tunnel still open, and wait until each has closed
        both its sockets."""
        with contextlib.suppress(OSError):  # wakes the accept() (close alone does not)
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._accepting.join(30)
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(30)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._sockets.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            self._tunnel(conn)

    def _tunnel(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            data = conn.recv(4096)
            if not data:
                return
            head += data
        method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
        host, _, port = target.rpartition(":")
        if method != "CONNECT" or host != "127.0.0.1":
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
            return
        self.tunnels.append(target)
        with socket.create_connection((host, int(port))) as upstream:
            self._sockets.append(upstream)
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            back = threading.Thread(target=_pump, args=(upstream, conn), daemon=True)
            back.start()
            _pump(conn, upstream)
            back.join(30)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[CannedServer]:
    with CannedServer(tls=certificate) as running:
        yield running


@pytest.fixture
def proxy() -> Iterator[ConnectProxy]:
    running = ConnectProxy()
    yield running
    running.close()


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def _chat(client: openai.OpenAI) -> str:
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    with stream:
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


async def _achat(client: openai.AsyncOpenAI) -> str:
    stream = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text = ""
    async with stream:
        async for chunk in stream:
            text += chunk.choices[0].delta.content or "" if chunk.choices else ""
    return text


# -- through a proxy: from the environment, or proxy= -----------------------------------


@pytest.mark.parametrize("how", ["HTTPS_PROXY", "proxy="])
def test_a_client_behind_a_proxy_is_guarded_through_its_proxy_mount(
    how: str,
    tls_server: CannedServer,
    proxy: ConnectProxy,
    certificate: tuple[Path, Path],
    no_proxy_env: pytest.MonkeyPatch,
) -> None:
    verify = ssl.create_default_context(cafile=str(certificate[0]))
    if how == "HTTPS_PROXY":
        no_proxy_env.setenv("HTTPS_PROXY", proxy.url)
        http = openai.DefaultHttpx2Client(verify=verify)  # the SDK's factory: its limits
    else:
        http = openai.DefaultHttpx2Client(verify=verify, proxy=proxy.url)
    [(pattern, mounted)] = http._mounts.items()  # the proxy mount httpx2 built
    client = openai.OpenAI(
        api_key="k", base_url=tls_server.url + "/v1", http_client=http, max_retries=0
    )
    cut = Reply(chunks=openai_text(["half"], finish=None, done=False))

    tls_server.push(cut)
    assert _chat(client) == "half"  # the plain SDK, through the proxy: half an answer
    assert len(proxy.tunnels) == 1

    assert guard.install(client) is client
    tls_server.push(cut)
    with pytest.raises(openai.APIConnectionError) as raised:
        _chat(client)
    assert isinstance(guard.interruption(raised.value), StreamInterrupted)
    assert proxy.tunnels == [f"127.0.0.1:{tls_server.port}"] * 2  # through the proxy again
    # The very proxy transport, wrapped where it was, with the SDK's limits.
    guarded = http._mounts[pattern]
    assert isinstance(guarded, GuardTransport) and guarded.inner is mounted
    pool = mounted._pool  # type: ignore[union-attr]
    assert (pool._max_connections, pool._max_keepalive_connections) == (1000, 100)
    client.close()


def test_an_async_client_from_the_environment_is_guarded_through_its_proxy(
    tls_server: CannedServer,
    proxy: ConnectProxy,
    certificate: tuple[Path, Path],
    no_proxy_env: pytest.MonkeyPatch,
) -> None:
    no_proxy_env.setenv("HTTPS_PROXY", proxy.url)
    verify = ssl.create_default_context(cafile=str(certificate[0]))
    tls_server.push(Reply(chunks=openai_text(["whole"])))
    tls_server.push(Reply(chunks=openai_text(["half"], finish=None, done=False)))

    async def go() -> tuple[str, BaseException]:
        client = guard.install(
            openai.AsyncOpenAI(
                api_key="k",
                base_url=tls_server.url + "/v1",
                http_client=openai.DefaultAsyncHttpx2Client(verify=verify),
                max_retries=0,
            )
        )
        async with client:
            whole = await _achat(client)
            with pytest.raises(openai.APIConnectionError) as raised:
                await _achat(client)
            [mounted] = client._client._mounts.values()
            assert isinstance(mounted, AsyncGuardTransport)
        return whole, raised.value

    whole, error = asyncio.run(go())
    assert whole == "whole" and guard.interruption(error) is not None
    assert len(proxy.tunnels) == 2


# -- everything else the client was built with stays ------------------------------------


def test_install_wraps_every_transport_in_place_and_only_once(
    no_proxy_env: pytest.MonkeyPatch,
) -> None:
    no_proxy_env.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    no_proxy_env.setenv("NO_PROXY", "internal.example")
    custom = httpx2.HTTPTransport(http2=True, retries=3)
    extra = httpx2.MockTransport(lambda request: httpx2.Response(204))
    http = httpx2.Client(mounts={"http://mock.example": extra})
    http._transport = custom  # a transport of the user's own, with HTTP/2 on
    before = dict(http._mounts)
    assert sum(t is None for t in before.values()) == 1  # NO_PROXY: "use the default"

    guard.install(http)
    assert isinstance(http._transport, GuardTransport) and http._transport.inner is custom
    for pattern, mounted in http._mounts.items():
        if before[pattern] is None:
            assert mounted is None  # routes to the (guarded) default transport
        else:
            assert isinstance(mounted, GuardTransport) and mounted.inner is before[pattern]
    again = dict(http._mounts)
    guard.install(http)
    assert http._mounts == again and http._transport.inner is custom  # not wrapped twice
    assert http.get("http://mock.example/x").status_code == 204  # the mount still answers
    http.close()


def test_install_takes_the_sdks_own_clients(no_proxy_env: pytest.MonkeyPatch) -> None:
    with CannedServer() as server:
        server.push(Reply(chunks=anthropic_text(["cut"], stop=False)))
        client = guard.install(
            anthropic.Anthropic(api_key="k", base_url=server.anthropic_base_url, max_retries=0)
        )
        assert isinstance(client._client._transport, GuardTransport)
        with (
            pytest.raises(httpx2.RemoteProtocolError) as raised,
            client.messages.stream(
                model="c", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            ) as stream,
        ):
            stream.get_final_text()
        assert guard.interruption(raised.value) is not None
        client.close()
    for built in (openai.AsyncOpenAI(api_key="k"), anthropic.AsyncAnthropic(api_key="k")):
        assert isinstance(guard.install(built)._client._transport, AsyncGuardTransport)


@pytest.mark.parametrize("thing", [object(), "https://api.openai.com", httpx2.HTTPTransport()])
def test_install_refuses_what_is_not_a_client(thing: Any) -> None:
    with pytest.raises(ConfigurationError, match="openai or anthropic client or an httpx2"):
        guard.install(thing)
