"""The official Python SDKs through the gateway: what each kind of stream does to them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from railings.testing import FaultProxy, Script, ScriptedServer
from tests.gateway_kit import KEY, TEXT, running
from tests.test_gateway import CUT_SCRIPT

# Empty: cut before any content, once; Partial: cut after some text.
EMPTY = {"chat": "truncate:events=1,times=1", "responses": "truncate:events=2,times=1"}
EMPTY["messages"] = "truncate:events=2,times=1"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(Script.from_dict({"api_key": KEY, "turns": [{"text": TEXT}]})) as s:
        yield s


@pytest.fixture()
def gateway_url(server: ScriptedServer, tmp_path: Path) -> Iterator[str]:
    with FaultProxy(server.url) as proxy, running(proxy.url, tmp_path) as (url, _, _):
        yield url


# Each client is closed before it is dropped: a kept-alive connection left in its pool would
# warn (an unclosed socket) whenever the collector reaches the client, in some later test.
def chat(url: str, fault: str, **kw: Any) -> str:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as client:
        stream = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            extra_headers={"x-railings-fault": fault},
            **kw,
        )
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def responses(url: str, fault: str, **kw: Any) -> str:
    with (
        openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as client,
        client.responses.stream(
            model="m", input="hi", extra_headers={"x-railings-fault": fault}, **kw
        ) as stream,
    ):
        return stream.get_final_response().output_text


def messages(url: str, fault: str, **kw: Any) -> str:
    kw.setdefault("max_tokens", 1024)
    with (
        anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0) as client,
        client.messages.stream(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-railings-fault": fault},
            **kw,
        ) as stream,
    ):
        return stream.get_final_text()


CLIENTS = {"chat": chat, "responses": responses, "messages": messages}
ERRORS = (openai.APIError, anthropic.APIError)


@pytest.mark.parametrize("api", CLIENTS)
@pytest.mark.parametrize("fault", ["none", "close_after_terminator", "drip:delay=0,size=5"])
def test_a_proven_stream_reaches_the_sdk_whole(gateway_url: str, api: str, fault: str) -> None:
    assert CLIENTS[api](gateway_url, fault) == TEXT


@pytest.mark.parametrize("api", CLIENTS)
def test_an_empty_stream_is_resent_and_the_sdk_sees_only_the_resend(
    gateway_url: str, api: str
) -> None:
    assert CLIENTS[api](gateway_url, EMPTY[api]) == TEXT


@pytest.mark.parametrize("api", CLIENTS)
@pytest.mark.parametrize(
    "fault", ["truncate:events=5", "reset:events=5", "drop_terminator", "corrupt:event=5"]
)
def test_a_partial_stream_makes_the_sdk_raise(gateway_url: str, api: str, fault: str) -> None:
    with pytest.raises(ERRORS) as info:
        CLIENTS[api](gateway_url, fault)
    assert "termination proof" in str(info.value)


@pytest.mark.parametrize("api", CLIENTS)
def test_a_cut_tool_call_makes_the_sdk_raise_naming_the_call(tmp_path: Path, api: str) -> None:
    limit = {"max_output_tokens": 40} if api == "responses" else {"max_tokens": 40}
    with (
        ScriptedServer(Script.from_dict(CUT_SCRIPT)) as upstream,
        running(upstream.url, tmp_path) as (url, _, _),
    ):
        with pytest.raises(ERRORS) as info:
            CLIENTS[api](url, "none", **limit)
        message = str(info.value)
        assert "write_file" in message and "cut by the output limit" in message


def test_with_cut_calls_pass_the_sdk_gets_the_cut_call(tmp_path: Path) -> None:
    with (
        ScriptedServer(Script.from_dict(CUT_SCRIPT)) as upstream,
        running(upstream.url, tmp_path, cut_calls="pass") as (url, _, _),
        openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as client,
    ):
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True, max_tokens=40
        )
        finish = [c.choices[0].finish_reason for c in stream if c.choices]
    assert finish[-1] == "length"
