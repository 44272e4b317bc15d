"""Scripted server -> fault proxy -> the railings core and the official SDKs."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import openai
import pytest

from railings.replay import replay
from railings.testing import FaultProxy, ScriptedServer
from railings.testing.raw import raw_request
from railings.turn.model import ErrorKind, Outcome, Termination
from railings.turn.verdict import RejectReason

SCRIPT = {
    "seed": 3,
    "turns": [
        {
            "text": "Listing the files now.",
            "tool_calls": [{"name": "shell", "arguments": {"command": "ls -la"}}],
        }
    ],
}
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
BODIES: dict[str, Any] = {
    "openai": {"model": "m", "messages": [{"role": "user", "content": "ls"}], "stream": True},
    "anthropic": {
        "model": "m",
        "max_tokens": 100,
        "stream": True,
        "messages": [{"role": "user", "content": "ls"}],
    },
}


@pytest.fixture(scope="module")
def proxy() -> Iterator[FaultProxy]:
    with ScriptedServer(SCRIPT) as server, FaultProxy(server.url) as p:
        yield p


def fetch(proxy: FaultProxy, provider: str, spec: str) -> bytes:
    resp = raw_request(
        proxy.url,
        PATHS[provider],
        BODIES[provider],
        headers={"x-railings-fault": spec, "anthropic-version": "2023-06-01"},
    )
    return resp.body


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_clean_stream_through_the_proxy_is_complete(proxy: FaultProxy, provider: str) -> None:
    result = replay(fetch(proxy, provider, "none"), provider=provider)
    assert result.turn.outcome is Outcome.COMPLETE
    assert result.turn.text == "Listing the files now."
    assert result.verdicts[0].execute


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "spec",
    [
        "drop_terminator",
        "drop_terminator:end=abrupt",
        "truncate:bytes={proof}",
        "reset:bytes={proof}",
    ],
)
def test_cut_streams_are_partial_and_calls_rejected(
    proxy: FaultProxy, provider: str, spec: str
) -> None:
    clean = fetch(proxy, provider, "none")
    # {proof}: the body offset of the termination proof, so everything else arrives
    proof = clean.rfind(b"data: [DONE]" if provider == "openai" else b"event: message_stop")
    spec = spec.format(proof=proof)
    result = replay(fetch(proxy, provider, spec), provider=provider)
    turn = result.turn
    assert turn.termination is Termination.ABRUPT and turn.outcome is Outcome.PARTIAL
    assert turn.error is not None and turn.error.kind is ErrorKind.INTERRUPTED
    assert [v.reason for v in result.verdicts] == [RejectReason.INTERRUPTED]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_cut_before_content_is_empty(proxy: FaultProxy, provider: str) -> None:
    result = replay(fetch(proxy, provider, "truncate:events=1"), provider=provider)
    assert result.turn.outcome is Outcome.EMPTY and not result.turn.tool_calls


def test_injected_error_event_is_a_provider_error(proxy: FaultProxy) -> None:
    turn = replay(fetch(proxy, "anthropic", "error_event:events=3"), provider="anthropic").turn
    assert turn.termination is Termination.ABRUPT
    assert turn.error is not None and turn.error.kind is ErrorKind.PROVIDER_ERROR
    assert turn.error.provider_type == "overloaded_error"


def test_sdks_through_the_proxy(proxy: FaultProxy) -> None:
    user: list[Any] = [{"role": "user", "content": "ls"}]
    with openai.OpenAI(base_url=proxy.url + "/v1", api_key="x", max_retries=0) as oai:
        with pytest.raises(openai.RateLimitError):
            oai.chat.completions.create(
                model="m", messages=user, extra_headers={"x-railings-fault": "status:429"}
            )
        # The failure railings exists for: without [DONE] the SDK ends quietly.
        chunks = list(
            oai.chat.completions.create(
                model="m",
                messages=user,
                stream=True,
                extra_headers={"x-railings-fault": "drop_terminator"},
            )
        )
        assert chunks and chunks[-1].choices[0].finish_reason == "tool_calls"
    with anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=0) as ant:
        with pytest.raises(anthropic.APIStatusError) as info:
            ant.messages.create(
                model="m",
                max_tokens=100,
                messages=user,
                extra_headers={"x-railings-fault": "status:529"},
            )
        assert info.value.status_code == 529
        with ant.messages.stream(
            model="m",
            max_tokens=100,
            messages=user,
            extra_headers={"x-railings-fault": "idle:events=3,seconds=0.2"},
        ) as stream:
            assert stream.get_final_message().stop_reason == "tool_use"


def test_concurrent_requests(proxy: FaultProxy) -> None:
    specs = ["none", "drop_terminator", "truncate:events=2", "duplicate"] * 6
    with ThreadPoolExecutor(8) as pool:
        bodies = list(pool.map(lambda spec: fetch(proxy, "openai", spec), specs))
    for spec, body in zip(specs, bodies, strict=True):
        assert body.endswith(b"data: [DONE]\n\n") == (spec in ("none", "duplicate")), spec
    assert sum(1 for r in proxy.log if r.fault == "drop_terminator") >= 6
