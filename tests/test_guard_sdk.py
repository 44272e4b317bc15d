"""The guard changes nothing but what it must, held to the SDKs' own expectations.

* A transport error goes on as the very exception object the SDK wraps (the
  openai suite's ``test_request_errors_are_wrapped``, reproduced here against the
  installed SDK), with railings' verdict attached.
* A model that sends its headers and then thinks in silence is not cut by the
  guard's idle clock: before the first content the SDK's read timeout governs.
* Each reading of a body is judged alone.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import anyio
import httpx2
import openai
import pytest

from _server import CannedServer, Reply, openai_text
from railings import guard
from railings.errors import IdleTimeout, StreamInterrupted
from railings.testing import FaultProxy, Script, ScriptedServer

FIRST = (
    b'data: {"id":"synthetic","object":"chat.completion.chunk","created":0,"model":"synthetic",'
    b'"choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}\n\n'
)
ERRORS: list[tuple[Any, type[openai.APIConnectionError]]] = [
    (httpx2.ReadTimeout, openai.APITimeoutError),
    (httpx2.RemoteProtocolError, openai.APIConnectionError),
    (httpx2.DecodingError, openai.APIConnectionError),
    (ssl.SSLError, openai.APIConnectionError),
    (anyio.EndOfStream, openai.APIConnectionError),
]


# -- the very exception, with the verdict attached --------------------------------------


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize("delivered", [False, True], ids=["before-first-event", "after-first"])
@pytest.mark.parametrize(("error_type", "expected"), ERRORS, ids=lambda e: e.__name__)
def test_request_errors_are_wrapped(
    sync: bool,
    delivered: bool,
    error_type: type[Exception],
    expected: type[openai.APIConnectionError],
) -> None:
    """The openai suite's test, with the guard installed: the SDK wraps the very error
    the transport raised; railings' verdict rides along on it."""
    error = error_type("synthetic stream failure")
    requests: list[httpx2.Request] = []

    def body() -> Iterator[bytes]:
        if delivered:
            yield FIRST
        raise error

    async def async_body() -> AsyncIterator[bytes]:
        for chunk in body():
            yield chunk

    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        content: Any = body() if sync else async_body()
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content)

    received: list[str | None] = []
    transport = httpx2.MockTransport(handler)
    if sync:
        with guard.install(
            openai.OpenAI(
                api_key="synthetic",
                max_retries=2,
                http_client=httpx2.Client(transport=transport, trust_env=False),
            )
        ) as client:
            stream = client.chat.completions.create(model="synthetic", messages=[], stream=True)
            with pytest.raises(expected) as caught:
                for chunk in stream:
                    received.append(chunk.choices[0].delta.content)
            assert stream.response.is_closed
    else:

        async def go() -> pytest.ExceptionInfo[openai.APIConnectionError]:
            async with guard.install(
                openai.AsyncOpenAI(
                    api_key="synthetic",
                    max_retries=2,
                    http_client=httpx2.AsyncClient(transport=transport, trust_env=False),
                )
            ) as client:
                stream = await client.chat.completions.create(
                    model="synthetic", messages=[], stream=True
                )
                with pytest.raises(expected) as caught:
                    async for chunk in stream:
                        received.append(chunk.choices[0].delta.content)
                assert stream.response.is_closed
                return caught

        caught = asyncio.run(go())

    # The SDK's own assertions.
    assert received == (["hello"] if delivered else [])
    assert len(requests) == 1
    # The request it names is the one sent (openai 3.60 names a copy with the key removed).
    named = caught.value.request
    assert (named.method, named.url) == (requests[0].method, requests[0].url)
    assert caught.value.__cause__ is error
    # And the verdict: what arrived, and what broke it, never an idle gap that did not pass.
    verdict = guard.interruption(caught.value)
    assert isinstance(verdict, StreamInterrupted) and not isinstance(verdict, IdleTimeout)
    assert verdict.empty is not delivered
    assert f"({error_type.__name__}: {error})" in verdict.message
    assert error.__notes__ == [f"railings: {verdict.message}"]


def test_a_guard_around_a_guard_attaches_one_verdict() -> None:
    error = httpx2.RemoteProtocolError("gone")

    def body() -> Iterator[bytes]:
        yield FIRST
        raise error

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    twice = guard.transport(guard.transport(httpx2.MockTransport(handler)))
    http = httpx2.Client(transport=twice)
    with http, pytest.raises(httpx2.RemoteProtocolError) as raised:
        http.post("http://127.0.0.1:9/v1/chat/completions", json={}).read()
    assert raised.value is error and len(error.__notes__) == 1


# -- each reading of a body is judged alone ---------------------------------------------


@pytest.mark.parametrize("done", [True, False])
def test_a_body_read_twice_is_judged_twice_never_appended(done: bool) -> None:
    body = b"".join(openai_text(["half"], finish=None, done=done))

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    transport = guard.transport(httpx2.MockTransport(handler))
    response = transport.handle_request(
        httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions", json={})
    )
    verdicts: list[StreamInterrupted | None] = []
    for _ in range(2):
        seen = b""
        try:
            for chunk in response.stream:  # type: ignore[union-attr]
                seen += chunk
            verdicts.append(None)
        except httpx2.RemoteProtocolError as exc:
            verdicts.append(guard.interruption(exc))
        assert seen == body  # the same bytes each time, passed through unchanged
    first, second = verdicts
    if done:
        assert first is None and second is None  # proven both times
    else:
        assert first is not None and second is not None
        assert second.turn == first.turn  # "half", not "halfhalf"


# -- a silent thinking model is not cut before its first content ------------------------

IDLE = 0.1  # the guard's idle gap in these tests
SILENCE = 10 * IDLE  # far beyond it: only the rule, not timing, decides the outcome
TEXT = "Thought it through: here is the answer."
# Where each wire format's first content comes, and how many events precede it.
BEFORE_CONTENT = [
    ("chat", 1),  # the role chunk, {"role": "assistant", "content": ""}
    ("responses", 2),  # response.created, response.in_progress
    ("responses", 4),  # ... output_item.added, content_part.added
    ("anthropic", 2),  # message_start, content_block_start
]


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedServer]:
    script = Script.from_dict({"seed": 11, "turns": [{"text": TEXT}]})
    with ScriptedServer(script) as server:
        yield server


def _answer(kind: str, base: str, fault: str, guarded: bool) -> str:
    headers = {"x-railings-fault": fault}
    if kind == "anthropic":
        aclient = anthropic.Anthropic(
            api_key="k", base_url=base, max_retries=0, default_headers=headers
        )
        with (
            guard.install(aclient, idle=IDLE) if guarded else aclient,
            aclient.messages.stream(
                model="m", max_tokens=256, messages=[{"role": "user", "content": "x"}]
            ) as stream,
        ):
            return stream.get_final_text()
    client = openai.OpenAI(
        api_key="k", base_url=base + "/v1", max_retries=0, default_headers=headers
    )
    with guard.install(client, idle=IDLE) if guarded else client:
        if kind == "responses":
            with client.responses.stream(model="m", input="x") as rstream:
                return rstream.get_final_response().output_text
        chat = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        )
        return "".join(c.choices[0].delta.content or "" for c in chat if c.choices)


@pytest.mark.parametrize(("kind", "events"), BEFORE_CONTENT)
def test_a_model_silent_before_its_first_content_passes_as_with_the_plain_sdk(
    scripted: ScriptedServer, kind: str, events: int
) -> None:
    fault = f"idle:events={events},seconds={SILENCE}"
    with FaultProxy(scripted.url) as proxy:
        plain = _answer(kind, proxy.url, fault, guarded=False)
        guarded = _answer(kind, proxy.url, fault, guarded=True)
        actions = [record.action for record in proxy.log]
    assert plain == guarded == TEXT
    assert len(actions) == 2 and all(f"silent for {SILENCE:g}s" in a for a in actions)


def test_the_same_silence_after_the_first_content_is_cut(scripted: ScriptedServer) -> None:
    # The control: once content streams, the guard's idle clock runs. The silence is
    # a hundred idle gaps; only the guard can end the stream before it is over.
    fault = f"idle:events=3,seconds={100 * IDLE}"
    with FaultProxy(scripted.url) as proxy:
        client = openai.OpenAI(
            api_key="k",
            base_url=proxy.url + "/v1",
            max_retries=0,
            default_headers={"x-railings-fault": fault},
        )
        with guard.install(client, idle=IDLE), pytest.raises(openai.APITimeoutError) as raised:
            chat = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=True
            )
            for _ in chat:
                pass
    verdict = guard.interruption(raised.value)
    assert isinstance(verdict, IdleTimeout) and verdict.idle_seconds == IDLE
    assert not verdict.empty  # content had arrived: Partial


def test_an_http11_connection_gets_its_own_reads_back(tmp_path: Any) -> None:
    # The guard makes an HTTP/1.1 body's reads follow the request's read timeout
    # (lowered at the first content) and gives the connection its reads back after.
    with CannedServer() as server, httpx2.Client(transport=guard.transport()) as http:
        for close_early in (False, True):
            server.push(Reply(chunks=openai_text(["a", "b"])))
            url = server.openai_base_url + "/chat/completions"
            with http.stream("POST", url, json={}) as response:
                stream = response.extensions["network_stream"]
                chunks = response.iter_bytes()
                next(chunks)
                assert "read" in vars(stream)  # following the request's read timeout
                if not close_early:
                    for _ in chunks:
                        pass
            assert "read" not in vars(stream)  # its own read again
