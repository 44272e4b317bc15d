"""``railings.guard.install(client)``: a client already built is guarded in place, and
keeps everything it was built with -- proxies, limits, HTTP/2, custom transports.

Told through behaviour only: whatever route a request takes (the default transport, a
mount, a proxy mount, a ``NO_PROXY`` host), a cut stream raises the httpx2 error the
SDK handles with railings' verdict attached, and a complete one passes unchanged; and
the route is the one the client was built with (the proxy saw the tunnel, the user's
transport answered, the pool's limit and HTTP/2 still hold). The proxy is a real
CONNECT proxy on 127.0.0.1 (``tests/_proxy.py``), in front of a TLS server on
127.0.0.1 with a certificate made for the test run.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from _proxy import ConnectProxy
from _server import CannedServer, Reply, anthropic_text, make_certificate, openai_text
from railings import guard
from railings.errors import ConfigurationError, StreamInterrupted, TurnTooLarge
from railings.limits import TurnLimits
from railings.transport import verified

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


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


WHOLE = openai_text(["all", " of", " it"])
CUT = openai_text(["half"], finish=None, done=False)
SSE = {"content-type": "text/event-stream"}


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


def _messages(client: anthropic.Anthropic) -> str:
    with client.messages.stream(
        model="c", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        return stream.get_final_text()


async def _amessages(client: anthropic.AsyncAnthropic) -> str:
    async with client.messages.stream(
        model="c", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        return await stream.get_final_text()


def assert_judged(error: BaseException, *, empty: bool = False) -> StreamInterrupted:
    """``error`` carries railings' verdict: the stream ended without its proof."""
    verdict = guard.interruption(error)
    assert isinstance(verdict, StreamInterrupted), error
    assert verdict.empty is empty
    return verdict


def read(http: httpx2.Client, url: str) -> bytes:
    with http.stream("POST", url, json={}) as response:
        return b"".join(response.iter_bytes())


class Canned:
    """A user's own transport (httpx2.MockTransport) answering each request with the
    next body queued, and recording what it served."""

    def __init__(self) -> None:
        self.bodies: list[list[bytes]] = []
        self.served: list[str] = []
        self.transport = httpx2.MockTransport(self._answer)

    def push(self, *bodies: list[bytes]) -> Canned:
        self.bodies.extend(bodies)
        return self

    def _answer(self, request: httpx2.Request) -> httpx2.Response:
        self.served.append(str(request.url))
        # A streamed body, as every network transport gives (bytes given whole are read
        # by httpx2 before any transport wrapper sees them).
        return httpx2.Response(200, headers=SSE, content=iter(self.bodies.pop(0)))


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
    client = openai.OpenAI(
        api_key="k", base_url=tls_server.url + "/v1", http_client=http, max_retries=0
    )
    tls_server.push(Reply(chunks=CUT))
    assert _chat(client) == "half"  # the plain SDK, through the proxy: half an answer
    assert len(proxy.tunnels) == 1

    assert guard.install(client) is client
    tls_server.push(Reply(chunks=CUT), Reply(chunks=WHOLE))
    with pytest.raises(openai.APIConnectionError) as raised:
        _chat(client)
    assert_judged(raised.value)
    assert _chat(client) == "all of it"
    # Through the proxy again, each time: the proxy mount is what the guard wraps.
    assert proxy.tunnels == [f"127.0.0.1:{tls_server.port}"] * 3
    client.close()


def test_an_async_client_from_the_environment_is_guarded_through_its_proxy(
    tls_server: CannedServer,
    proxy: ConnectProxy,
    certificate: tuple[Path, Path],
    no_proxy_env: pytest.MonkeyPatch,
) -> None:
    no_proxy_env.setenv("HTTPS_PROXY", proxy.url)
    verify = ssl.create_default_context(cafile=str(certificate[0]))
    tls_server.push(Reply(chunks=WHOLE), Reply(chunks=CUT))

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
        return whole, raised.value

    whole, error = asyncio.run(go())
    assert whole == "all of it"
    assert_judged(error)
    assert len(proxy.tunnels) == 2


def test_a_proxy_mount_keeps_its_pool_limit(
    tls_server: CannedServer,
    proxy: ConnectProxy,
    certificate: tuple[Path, Path],
    no_proxy_env: pytest.MonkeyPatch,
) -> None:
    verify = ssl.create_default_context(cafile=str(certificate[0]))
    http = httpx2.Client(
        verify=verify,
        proxy=proxy.url,
        limits=httpx2.Limits(max_connections=1),
        timeout=httpx2.Timeout(5.0, pool=0.2),
    )
    guard.install(http)
    url = tls_server.url + "/v1/chat/completions"
    tls_server.push(Reply(chunks=[*WHOLE[:2], 30.0, *WHOLE[2:]], end="hang"), Reply(chunks=CUT))
    with http.stream("POST", url, json={}), pytest.raises(httpx2.PoolTimeout):
        http.post(url, json={})  # the one connection is held by the stream
    with pytest.raises(httpx2.RemoteProtocolError) as raised:
        read(http, url)
    assert_judged(raised.value)
    http.close()


# -- every route of a plain httpx2 client ------------------------------------------------


def test_every_mount_and_the_default_transport_judge_their_streams(
    no_proxy_env: pytest.MonkeyPatch,
) -> None:
    routes = {name: Canned() for name in ("default", "a", "b")}
    http = httpx2.Client(
        transport=routes["default"].transport,
        mounts={"all://a.test": routes["a"].transport, "http://b.test": routes["b"].transport},
    )
    guard.install(http)
    for name, route in routes.items():
        host = "x.test" if name == "default" else f"{name}.test"
        url = f"http://{host}/v1/chat/completions"
        route.push(CUT, WHOLE)
        with pytest.raises(httpx2.RemoteProtocolError) as raised:
            read(http, url)
        assert_judged(raised.value)
        assert read(http, url) == b"".join(WHOLE)  # passed unchanged
        assert route.served == [url, url]  # the user's own transport answered, each time
    # Anything else the mounts answer is untouched: no stream, no judgement.
    routes["a"].push([b"data: no proof here\n\n"])
    assert http.post("http://a.test/v1/embeddings").content == b"data: no proof here\n\n"
    http.close()


def test_a_no_proxy_host_uses_the_guarded_default_transport(
    no_proxy_env: pytest.MonkeyPatch,
) -> None:
    # The proxy named here would refuse every connection: only the route NO_PROXY gives
    # (the default transport, guarded) reaches the server.
    no_proxy_env.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    no_proxy_env.setenv("NO_PROXY", "127.0.0.1")
    with CannedServer() as server, httpx2.Client() as http:
        guard.install(http)
        server.push(Reply(chunks=CUT), Reply(chunks=WHOLE))
        url = server.openai_base_url + "/chat/completions"
        with pytest.raises(httpx2.RemoteProtocolError) as raised:
            read(http, url)
        assert_judged(raised.value)
        assert read(http, url) == b"".join(WHOLE)


def test_installing_twice_judges_once() -> None:
    route = Canned().push(CUT, CUT)
    once = httpx2.Client(transport=route.transport)
    guard.install(once)
    with pytest.raises(httpx2.RemoteProtocolError) as first:
        read(once, "http://x.test/v1/chat/completions")
    twice = httpx2.Client(transport=route.transport)
    guard.install(guard.install(twice))
    with pytest.raises(httpx2.RemoteProtocolError) as second:
        read(twice, "http://x.test/v1/chat/completions")
    # A guard around a guard would judge the inner guard's error again, and note it.
    for raised in (first.value, second.value):
        assert_judged(raised)
        assert getattr(raised, "__notes__", []) == []
    assert str(second.value) == str(first.value)


def test_the_guards_settings_reach_every_route(no_proxy_env: pytest.MonkeyPatch) -> None:
    routes = [Canned().push(WHOLE), Canned().push(WHOLE)]
    http = httpx2.Client(
        transport=routes[0].transport, mounts={"all://a.test": routes[1].transport}
    )
    guard.install(http, limits=TurnLimits(text=5))  # "all of it" is 9 characters
    for host in ("x.test", "a.test"):
        with pytest.raises(httpx2.RemoteProtocolError) as raised:
            read(http, f"http://{host}/v1/chat/completions")
        bound = assert_judged(raised.value).__cause__
        assert isinstance(bound, TurnTooLarge) and bound.limit == 5
    http.close()


def test_http2_stays_on_and_is_judged(certificate: tuple[Path, Path]) -> None:
    verify = ssl.create_default_context(cafile=str(certificate[0]))
    partial = b"".join(CUT)  # then the server ends the connection (GOAWAY)
    with (
        CannedServer(tls=certificate, h2_partial=partial) as server,
        httpx2.Client(http2=True, verify=verify) as http,
    ):
        guard.install(http)
        url = server.url + "/v1/chat/completions"
        with http.stream("POST", url, json={}) as response:
            assert response.http_version == "HTTP/2"
            with pytest.raises(httpx2.RemoteProtocolError) as raised:
                for _ in response.iter_bytes():
                    pass
        assert_judged(raised.value)


# -- the SDKs' own clients ---------------------------------------------------------------


def test_install_takes_the_sdks_own_sync_clients(no_proxy_env: pytest.MonkeyPatch) -> None:
    with CannedServer() as server:
        chat = openai.OpenAI(api_key="k", base_url=server.openai_base_url, max_retries=0)
        azure = openai.AzureOpenAI(
            api_key="k", api_version="2024-10-21", azure_endpoint=server.url, max_retries=0
        )
        for client in (chat, azure):
            assert guard.install(client) is client
            server.push(Reply(chunks=CUT), Reply(chunks=WHOLE))
            with pytest.raises(openai.APIConnectionError) as raised:
                _chat(client)
            assert_judged(raised.value)
            assert _chat(client) == "all of it"
            client.close()
        messages = guard.install(
            anthropic.Anthropic(api_key="k", base_url=server.anthropic_base_url, max_retries=0)
        )
        server.push(Reply(chunks=anthropic_text(["cut"], stop=False)))
        server.push(Reply(chunks=anthropic_text(["whole"])))
        with pytest.raises(httpx2.RemoteProtocolError) as raised:
            _messages(messages)
        assert_judged(raised.value)
        assert _messages(messages) == "whole"
        messages.close()
        paths = [request.path for request in server.requests]
    assert paths[2].startswith("/openai/deployments/m/chat/completions")  # Azure's route


def test_install_takes_the_sdks_own_async_clients(no_proxy_env: pytest.MonkeyPatch) -> None:
    async def go(server: CannedServer) -> None:
        chat = guard.install(
            openai.AsyncOpenAI(api_key="k", base_url=server.openai_base_url, max_retries=0)
        )
        async with chat:
            server.push(Reply(chunks=CUT), Reply(chunks=WHOLE))
            with pytest.raises(openai.APIConnectionError) as raised:
                await _achat(chat)
            assert_judged(raised.value)
            assert await _achat(chat) == "all of it"
        messages = guard.install(
            anthropic.AsyncAnthropic(api_key="k", base_url=server.anthropic_base_url, max_retries=0)
        )
        async with messages:
            server.push(Reply(chunks=anthropic_text(["cut"], stop=False)))
            server.push(Reply(chunks=anthropic_text(["whole"])))
            with pytest.raises(httpx2.RemoteProtocolError) as error:
                await _amessages(messages)
            assert_judged(error.value)
            assert await _amessages(messages) == "whole"

    with CannedServer() as server:
        asyncio.run(go(server))


@pytest.mark.parametrize("thing", [object(), "https://api.openai.com", httpx2.HTTPTransport()])
def test_install_refuses_what_is_not_a_client(thing: Any) -> None:
    with pytest.raises(ConfigurationError, match="openai or anthropic client or an httpx2"):
        guard.install(thing)


def test_on_an_unverified_httpx2_install_refuses_and_the_public_route_guards(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # install() reaches into a built client's private _transport and _mounts, so only on
    # the httpx2 version it was verified on; the fallback is the public route.
    monkeypatch.setattr(verified, "installed", lambda name: "0.0.1")
    route = Canned().push(CUT)
    built = httpx2.Client(transport=route.transport)
    with pytest.raises(ConfigurationError, match=r"transport=railings\.guard\.transport\(\)"):
        guard.install(built)
    with pytest.raises(ConfigurationError, match=r"not 0\.0\.1\)"):
        guard.install(openai.OpenAI(api_key="k", base_url="http://x.test/v1"))
    public = httpx2.Client(transport=guard.transport(route.transport))
    with pytest.raises(httpx2.RemoteProtocolError) as cut:
        read(public, "http://x.test/v1/chat/completions")
    assert_judged(cut.value)
