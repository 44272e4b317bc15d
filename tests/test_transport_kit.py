"""The client and the guard through the test kit: ScriptedServer behind the FaultProxy.

One fault per request, chosen with the ``x-railings-fault`` header. Each cell
states the acceptance rule: a faulted stream is detected (Empty
resent, Partial returned as-is and marked), a clean one returns the full text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest

from railings import guard
from railings.errors import IdleTimeout, StreamInterrupted
from railings.messages import User
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.transport import (
    FALLBACK,
    AsyncProviderClient,
    ClientConfig,
    Timeouts,
    TurnStream,
    no_waits,
)
from railings.turn.model import Outcome

TEXT = "The refund is processed within five to seven business days, with an email."
SCRIPT = Script.from_dict({"chunk_size": 8, "turns": [{"text": TEXT}]})


@pytest.fixture(autouse=True)
def _zero_waits() -> Iterator[None]:
    FALLBACK.reset()
    with no_waits():
        yield


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    with ScriptedServer(SCRIPT) as server, FaultProxy(server.url) as running:
        yield running


def turn_through(proxy: FaultProxy, provider: str, fault: str, **timeouts: float) -> TurnStream:
    base = proxy.url + "/v1" if provider == "openai" else proxy.url
    cfg = ClientConfig(
        provider,
        "scripted",
        max_tokens=200,
        base_url=base,
        api_key="k",  # type: ignore[arg-type]
        headers={"x-railings-fault": fault},
        timeouts=Timeouts(connect=2, first_byte=5, idle=timeouts.get("idle", 2.0)),
    )

    async def go() -> TurnStream:
        async with AsyncProviderClient(cfg) as client:
            stream = client.stream_turn([User("refund?")])
            await stream.result()
            return stream

    return asyncio.run(go())


PROVIDERS = ["openai", "anthropic"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", ["none", "close_after_terminator", "drip:delay=0"])
def test_clean_cells_return_the_full_text(proxy: FaultProxy, provider: str, fault: str) -> None:
    stream = turn_through(proxy, provider, fault)
    assert stream.turn.outcome is Outcome.COMPLETE and stream.turn.text == TEXT


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "fault",
    [
        "truncate:events=1,times=1",
        "status:code=529,times=1",
        "status:code=429,times=1",
        "status:code=503,times=1",
        "error_event:events=1,times=1",
        "reset:events=1,times=1",
    ],
)
def test_faults_before_content_are_resent(proxy: FaultProxy, provider: str, fault: str) -> None:
    stream = turn_through(proxy, provider, fault)
    assert stream.turn.outcome is Outcome.COMPLETE and stream.turn.text == TEXT
    assert stream.attempts == 2 and stream.retries[0].error.retryable


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "fault",
    [
        "drop_terminator",
        "truncate:events=6",
        "reset:events=6",
        "error_event:events=6",
        "corrupt:event=6,kind=json",
    ],
)
def test_faults_after_content_give_partial(proxy: FaultProxy, provider: str, fault: str) -> None:
    stream = turn_through(proxy, provider, fault)
    assert stream.turn.outcome is Outcome.PARTIAL and stream.interrupted
    assert stream.turn.text and TEXT.startswith(stream.turn.text)
    assert stream.attempts == 1 and stream.retries == []
    assert isinstance(stream.interruption, StreamInterrupted)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_idle_fault(proxy: FaultProxy, provider: str) -> None:
    stream = turn_through(proxy, provider, "idle:events=6,seconds=3", idle=0.3)
    assert stream.turn.outcome is Outcome.PARTIAL
    assert isinstance(stream.interruption, IdleTimeout)


@pytest.mark.parametrize("fault", ["drop_terminator", "truncate:events=6", "reset:events=6"])
def test_openai_sdk_through_the_guard(proxy: FaultProxy, fault: str) -> None:
    http = httpx2.Client(transport=guard.transport(), headers={"x-railings-fault": fault})
    with openai.OpenAI(
        api_key="k", base_url=proxy.url + "/v1", http_client=http, max_retries=0
    ) as client:
        ask: list[Any] = [{"role": "user", "content": "refund?"}]
        with pytest.raises(openai.APIConnectionError) as raised:
            for _ in client.chat.completions.create(model="m", messages=ask, stream=True):
                pass
    assert guard.interruption(raised.value) is not None
