"""A bound passed near the end of a long body, through the real SDKs and a real server.

Past the first content the guard reads what gathered 64 KiB at a time. An SDK
that stops at the proof and closes the body (the openai SDK stops at ``[DONE]``)
must not take a turn past its bound as complete: the guard reads what gathered
before it hands over a piece that may carry the proof. The server is
:class:`_server.CannedServer` on 127.0.0.1 (a free port chosen at run time); the
bounds are on characters.
"""

from __future__ import annotations

import asyncio

import httpx2
import openai
import pytest

from _server import CannedServer, Reply, openai_text
from railings import guard
from railings.errors import TurnTooLarge
from railings.limits import TurnLimits

BOUND = 4 * 2**20 + 10_000
WORD = "x" * 2000
CHUNKS = openai_text([WORD] * (BOUND // len(WORD) + 3))  # the text passes BOUND by ~4 KB
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def assert_text_bound(exc: BaseException) -> None:
    cause = guard.interruption(exc)
    assert cause is not None and isinstance(cause.__cause__, TurnTooLarge)
    assert cause.__cause__.bound == "text"


def test_the_openai_sdk_never_gets_a_turn_past_its_bound_as_complete() -> None:
    with CannedServer() as server:
        server.push(Reply(chunks=CHUNKS))
        client = guard.install(
            openai.OpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0),
            limits=TurnLimits(text=BOUND),
        )
        finish = None
        with pytest.raises(openai.APIConnectionError) as raised:
            for event in client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            ):
                finish = event.choices[0].finish_reason if event.choices else finish
        client.close()
    assert_text_bound(raised.value)


def test_the_async_openai_sdk_never_gets_a_turn_past_its_bound_as_complete() -> None:
    async def go() -> BaseException:
        with CannedServer() as server:
            server.push(Reply(chunks=CHUNKS))
            client = guard.install(
                openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0),
                limits=TurnLimits(text=BOUND),
            )
            try:
                stream = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=True
                )
                async for _ in stream:
                    pass
            except openai.APIConnectionError as exc:
                return exc
            finally:
                await client.close()
        pytest.fail("the turn past its bound ended as complete")

    assert_text_bound(asyncio.run(go()))


def stops_at_finish(response_chunks: object) -> bool:
    return isinstance(response_chunks, bytes) and b'"finish_reason": "stop"' in response_chunks


def test_a_caller_that_stops_before_the_proof_closes_quietly() -> None:
    # It stops at finish_reason, before [DONE], with the bound passed in bytes the guard
    # has not read yet: it has no proof, so no finished turn to trust; the close raises
    # nothing (pytest runs with unraisable exceptions as errors: none is lost either).
    with CannedServer() as server:
        server.push(Reply(chunks=CHUNKS))
        http = guard.install(httpx2.Client(), limits=TurnLimits(text=BOUND))
        url = server.openai_base_url + "/chat/completions"
        with http.stream("POST", url, json=REQUEST) as response:
            for chunk in response.iter_raw():
                if stops_at_finish(chunk):
                    break
        http.close()
