"""The guard on the Responses API: ``.../responses`` is watched, through the official SDK.

A stream the plain SDK ends quietly without its terminal event raises through the
guard; a clean stream, and one cut at the output limit (``response.incomplete``,
its own proof), pass. That the guard's verdict is the core's on every capture is
``tests/test_guard_differential.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest

from railings import guard
from railings.errors import StreamInterrupted
from railings.testing import FaultProxy, ScriptedServer

TOOL_TURN = {
    "thinking": "first look",
    "text": "Listing.",
    "tool_calls": [{"name": "shell", "arguments": {"command": "ls -la"}}],
}

# -- the guard under the official SDK ------------------------------------------------------

SCRIPT = {"chunk_size": 4, "turns": [TOOL_TURN]}
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "shell",
        "strict": False,
        "parameters": {"type": "object", "properties": {}},
    }
]


@pytest.fixture(scope="module")
def proxy() -> Iterator[FaultProxy]:
    with ScriptedServer(SCRIPT) as server, FaultProxy(server.url) as running:
        yield running


def guarded(proxy: FaultProxy, fault: str) -> openai.OpenAI:
    http = openai.DefaultHttpx2Client(
        transport=guard.transport(idle=5), headers={"x-railings-fault": fault}
    )
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", http_client=http, max_retries=0)


def kinds(client: openai.OpenAI, **extra: Any) -> list[str]:
    stream = client.responses.create(model="m", input="ls", tools=TOOLS, stream=True, **extra)
    with stream:
        return [event.type for event in stream]


@pytest.mark.parametrize(
    "fault",
    [
        "drop_terminator",
        "truncate:events=12",
        "reset:events=12",
        "error_event:events=12",
        "error_event:events=12,type=response.failed",
    ],
)
def test_the_guard_raises_where_the_sdk_alone_ends_quietly(proxy: FaultProxy, fault: str) -> None:
    with openai.OpenAI(
        base_url=proxy.url + "/v1",
        api_key="k",
        max_retries=0,
        default_headers={"x-railings-fault": fault},
    ) as plain:
        try:
            seen = kinds(plain)
            assert "response.completed" not in seen  # quietly short, without the guard
        except openai.APIConnectionError:
            assert fault.startswith("reset")  # a reset is loud either way
    with guarded(proxy, fault) as client, pytest.raises(openai.APIConnectionError) as raised:
        kinds(client)
    cause = guard.interruption(raised.value)
    assert isinstance(cause, StreamInterrupted) and not cause.empty


def test_the_guard_passes_a_clean_and_a_cut_at_the_limit_stream(proxy: FaultProxy) -> None:
    # Both end in their proof: response.completed, and response.incomplete at the limit.
    with guarded(proxy, "none") as client:
        assert kinds(client)[-1] == "response.completed"
        assert kinds(client, max_output_tokens=6)[-1] == "response.incomplete"


def test_an_empty_cut_is_empty(proxy: FaultProxy) -> None:
    with (
        guarded(proxy, "truncate:events=2") as client,
        pytest.raises(openai.APIConnectionError) as raised,
    ):
        kinds(client)
    cause = guard.interruption(raised.value)
    assert isinstance(cause, StreamInterrupted) and cause.empty


def test_only_responses_paths_are_recognized() -> None:
    class Body(httpx2.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield b"data: no proof\n\n"

    class Inner(httpx2.BaseTransport):
        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, stream=Body()
            )

    with httpx2.Client(transport=guard.transport(Inner())) as http:
        assert http.post("http://x/v1/embeddings").content == b"data: no proof\n\n"
        for path in ("/v1/responses", "/openai/v1/responses/"):
            with pytest.raises(httpx2.RemoteProtocolError) as raised:
                http.post("http://x" + path)
            assert guard.interruption(raised.value) is not None
