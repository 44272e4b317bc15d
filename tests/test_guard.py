"""The guard under the real openai and anthropic SDKs, against a real local server."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from _server import CannedServer, Reply, anthropic_text, json_reply, openai_text
from railings import guard
from railings.errors import IdleTimeout, StreamInterrupted


@pytest.fixture
def server() -> Iterator[CannedServer]:
    with CannedServer() as running:
        yield running


def openai_client(server: CannedServer, guarded: bool = True, **kw: Any) -> openai.OpenAI:
    http = httpx2.Client(transport=guard.transport(**kw)) if guarded else httpx2.Client()
    return openai.OpenAI(
        api_key="sk-test", base_url=server.openai_base_url, http_client=http, max_retries=0
    )


def anthropic_client(server: CannedServer, guarded: bool = True, **kw: Any) -> anthropic.Anthropic:
    http = httpx2.Client(transport=guard.transport(**kw)) if guarded else httpx2.Client()
    return anthropic.Anthropic(
        api_key="sk-test", base_url=server.anthropic_base_url, http_client=http, max_retries=0
    )


def openai_text_of(client: openai.OpenAI) -> str:
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    with stream:
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def anthropic_text_of(client: anthropic.Anthropic) -> str:
    stream = client.messages.create(
        model="claude", max_tokens=64, messages=[{"role": "user", "content": "hi"}], stream=True
    )
    with stream:
        return "".join(
            e.delta.text
            for e in stream
            if e.type == "content_block_delta" and e.delta.type == "text_delta"
        )


# -- the problem, and the guard's answer ----------------------------------------------------


def test_openai_sdk_alone_returns_half_an_answer(server: CannedServer) -> None:
    """The silent stop, reproduced: no [DONE], and the plain SDK ends quietly."""
    server.push(Reply(chunks=openai_text(["Your refund", " will be"], finish=None, done=False)))
    with openai_client(server, guarded=False) as client:
        assert openai_text_of(client) == "Your refund will be"


def test_openai_sdk_with_guard_raises_on_a_dropped_terminator(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text(["Your refund", " will be"], finish=None, done=False)))
    with openai_client(server) as client, pytest.raises(openai.APIConnectionError) as raised:
        openai_text_of(client)
    cause = guard.interruption(raised.value)
    assert isinstance(cause, StreamInterrupted) and not cause.empty


def test_openai_sdk_with_guard_on_a_clean_stream(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text(["all", " of", " it"])))
    with openai_client(server) as client:
        assert openai_text_of(client) == "all of it"


def test_sdk_default_client_factories_take_the_guard(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text(["cut"], finish=None, done=False)))
    server.push(Reply(chunks=anthropic_text(["cut"], stop=False)))
    http = openai.DefaultHttpx2Client(transport=guard.transport())
    with (
        openai.OpenAI(
            api_key="k", base_url=server.openai_base_url, http_client=http, max_retries=0
        ) as client,
        pytest.raises(openai.APIConnectionError),
    ):
        openai_text_of(client)
    ahttp = anthropic.DefaultHttpxClient(transport=guard.transport())
    with (
        anthropic.Anthropic(
            api_key="k", base_url=server.anthropic_base_url, http_client=ahttp, max_retries=0
        ) as aclient,
        pytest.raises(httpx2.RemoteProtocolError),
    ):
        anthropic_text_of(aclient)


def test_anthropic_sdk_alone_returns_half_an_answer(server: CannedServer) -> None:
    server.push(Reply(chunks=anthropic_text(["half"], stop=False)))
    with anthropic_client(server, guarded=False) as client:
        assert anthropic_text_of(client) == "half"


def test_anthropic_sdk_with_guard_raises_on_a_dropped_terminator(server: CannedServer) -> None:
    server.push(Reply(chunks=anthropic_text(["half"], stop=False)))
    with anthropic_client(server) as client, pytest.raises(httpx2.RemoteProtocolError) as raised:
        anthropic_text_of(client)
    assert isinstance(raised.value.__cause__, StreamInterrupted)


def test_anthropic_stream_helper_with_guard(server: CannedServer) -> None:
    server.push(Reply(chunks=anthropic_text(["fine"])))
    server.push(Reply(chunks=anthropic_text(["cut"], stop=False)))
    with anthropic_client(server) as client:
        kwargs: dict[str, Any] = {
            "model": "claude",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
        }
        with client.messages.stream(**kwargs) as stream:
            assert stream.get_final_text() == "fine"
        with pytest.raises(Exception) as raised, client.messages.stream(**kwargs) as stream:
            stream.get_final_text()
        assert isinstance(guard.interruption(raised.value), StreamInterrupted)


def test_empty_cut_is_marked_empty(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text([], finish=None, done=False), end="reset"))
    with openai_client(server) as client, pytest.raises(openai.APIConnectionError) as raised:
        openai_text_of(client)
    cause = guard.interruption(raised.value)
    assert cause is not None and cause.empty and cause.retryable


def test_idle_stream_raises_idle_timeout(server: CannedServer) -> None:
    words = openai_text(["a", "b"])
    # The gap outlasts the suite's timeout: only the idle clock can end this stream.
    server.push(Reply(chunks=[*words[:2], 3600.0, *words[2:]], end="hang"))
    with openai_client(server, idle=0.3) as client, pytest.raises(openai.APITimeoutError) as raised:
        openai_text_of(client)
    assert isinstance(guard.interruption(raised.value), IdleTimeout)


def test_anthropic_idle_stream(server: CannedServer) -> None:
    events = anthropic_text(["a"])
    server.push(Reply(chunks=[*events[:4], 5.0, *events[4:]], end="hang"))
    with anthropic_client(server, idle=0.3) as client, pytest.raises(httpx2.ReadTimeout) as raised:
        anthropic_text_of(client)
    assert isinstance(guard.interruption(raised.value), IdleTimeout)


# -- nothing else changes -------------------------------------------------------------------


def test_bytes_pass_through_unchanged(server: CannedServer) -> None:
    chunks = openai_text(["same", " bytes"])
    server.push(Reply(chunks=chunks))
    with httpx2.Client(transport=guard.transport()) as http:
        url = server.openai_base_url + "/chat/completions"
        with http.stream("POST", url, json={}) as response:
            assert b"".join(response.iter_bytes()) == b"".join(chunks)


def test_non_streaming_and_error_responses_pass_through(server: CannedServer) -> None:
    completion = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "whole"},
            }
        ],
    }
    server.push(json_reply(200, completion))
    server.push(json_reply(429, {"error": {"message": "slow", "type": "rate_limit"}}))
    with openai_client(server) as client:
        ask: list[Any] = [{"role": "user", "content": "x"}]
        result = client.chat.completions.create(model="m", messages=ask)
        assert result.choices[0].message.content == "whole"
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="m", messages=ask)


def test_other_paths_are_not_judged(server: CannedServer) -> None:
    server.push(Reply(chunks=[b"data: no proof here\n\n"]))
    with httpx2.Client(transport=guard.transport()) as http:
        response = http.post(server.url + "/v1/embeddings", json={})
        assert response.content == b"data: no proof here\n\n"


@pytest.mark.parametrize("done", [True, False])
def test_gzip_event_stream_is_read(server: CannedServer, done: bool) -> None:
    body = gzip.compress(b"".join(openai_text(["zip"], done=done)))
    headers = (("content-type", "text/event-stream"), ("content-encoding", "gzip"))
    server.push(Reply(chunks=[body[:20], body[20:]], headers=headers))
    with openai_client(server) as client:
        if done:
            assert openai_text_of(client) == "zip"
        else:
            with pytest.raises(openai.APIConnectionError):
                openai_text_of(client)


@pytest.mark.parametrize(
    ("offered", "sent"),
    [
        ("gzip, deflate, br, zstd", "gzip, deflate"),
        ("br;q=1.0, gzip;q=0.5", "gzip;q=0.5"),
        ("zstd", "identity"),
        (None, "gzip, deflate"),  # no header would allow any coding (RFC 9110)
    ],
)
def test_watched_requests_ask_only_for_codings_the_guard_reads(
    server: CannedServer, offered: str | None, sent: str
) -> None:
    server.push(Reply(chunks=openai_text(["ok"])), Reply(chunks=openai_text(["ok"])))
    with httpx2.Client(transport=guard.transport()) as http:
        headers = {"accept-encoding": offered} if offered else {}
        request = http.build_request(
            "POST", server.url + "/v1/chat/completions", json={}, headers=headers
        )
        if offered is None:
            del request.headers["accept-encoding"]
        http.send(request).read()
        http.post(
            server.url + "/v1/embeddings", json={}, headers={"accept-encoding": "br, zstd"}
        ).read()
    watched, other = server.requests[-2:]
    assert watched.headers["accept-encoding"] == sent
    assert other.headers["accept-encoding"] == "br, zstd"  # not a watched path: untouched


# -- async ----------------------------------------------------------------------------------


def test_async_sdks_with_guard(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text(["ok"])))
    server.push(Reply(chunks=openai_text(["cut"], finish=None, done=False)))
    server.push(Reply(chunks=anthropic_text(["cut"], stop=False)))

    async def go() -> list[BaseException | str]:
        out: list[BaseException | str] = []
        http = httpx2.AsyncClient(transport=guard.async_transport())
        async with openai.AsyncOpenAI(
            api_key="k", base_url=server.openai_base_url, http_client=http, max_retries=0
        ) as client:
            for _ in range(2):
                try:
                    stream = await client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
                    )
                    text = ""
                    async for chunk in stream:
                        text += chunk.choices[0].delta.content or "" if chunk.choices else ""
                    out.append(text)
                except openai.APIConnectionError as exc:
                    out.append(exc)
        http = httpx2.AsyncClient(transport=guard.async_transport())
        async with anthropic.AsyncAnthropic(
            api_key="k", base_url=server.anthropic_base_url, http_client=http, max_retries=0
        ) as aclient:
            try:
                astream = await aclient.messages.create(
                    model="c",
                    max_tokens=8,
                    messages=[{"role": "user", "content": "hi"}],
                    stream=True,
                )
                async for _ in astream:
                    pass
                out.append("no error")
            except httpx2.RemoteProtocolError as exc:
                out.append(exc)
        return out

    ok, cut, anthropic_cut = asyncio.run(go())
    assert ok == "ok"
    assert isinstance(cut, BaseException) and guard.interruption(cut) is not None
    assert isinstance(anthropic_cut, BaseException) and guard.interruption(anthropic_cut)


def test_async_guard_idle(server: CannedServer) -> None:
    events = anthropic_text(["a"])
    server.push(Reply(chunks=[*events[:4], 5.0, *events[4:]], end="hang"))

    async def go() -> BaseException:
        http = httpx2.AsyncClient(transport=guard.async_transport(idle=0.3))
        async with anthropic.AsyncAnthropic(
            api_key="k", base_url=server.anthropic_base_url, http_client=http, max_retries=0
        ) as client:
            stream = await client.messages.create(
                model="c", max_tokens=8, messages=[{"role": "user", "content": "hi"}], stream=True
            )
            with pytest.raises(httpx2.ReadTimeout) as raised:
                async for _ in stream:
                    pass
            return raised.value

    error = asyncio.run(go())
    assert isinstance(guard.interruption(error), IdleTimeout)


def test_anthropic_sdk_keeps_a_proven_answer_when_the_connection_breaks_after(
    server: CannedServer,
) -> None:
    """Proven, then broken: the whole stream and its proof, then an abrupt close. The
    SDK alone reads past message_stop and raises; with the guard the proof stands."""
    server.push(Reply(chunks=anthropic_text(["all of it"]), end="close"))
    with anthropic_client(server, guarded=False) as client, pytest.raises(httpx2.TransportError):
        anthropic_text_of(client)
    server.push(Reply(chunks=anthropic_text(["all of it"]), end="close"))
    with anthropic_client(server) as client:
        assert anthropic_text_of(client) == "all of it"


def test_guard_still_raises_when_the_break_comes_before_the_proof(server: CannedServer) -> None:
    server.push(Reply(chunks=anthropic_text(["half"], stop=False), end="close"))
    with anthropic_client(server) as client, pytest.raises(httpx2.TransportError) as raised:
        anthropic_text_of(client)
    assert isinstance(guard.interruption(raised.value), StreamInterrupted)
