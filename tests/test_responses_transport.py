"""The transport speaks the Responses API: config, request, and the same acceptance rules
(proof before ending, Empty resent, Partial returned marked) through the fault proxy."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from railings.errors import (
    AuthenticationError,
    ConfigurationError,
    IdleTimeout,
    StreamInterrupted,
)
from railings.messages import System, ToolSpec, User
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.transport import (
    DEFAULT_BASE_URLS,
    FALLBACK,
    AsyncProviderClient,
    ClientConfig,
    ProviderClient,
    RetryPolicy,
    Timeouts,
    TurnStream,
    no_waits,
)
from railings.turn.model import Outcome

TEXT = "The refund is processed within five to seven business days, with an email."
SCRIPT = Script.from_dict({"chunk_size": 8, "turns": [{"text": TEXT}]})
SHELL = ToolSpec(
    "shell", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}}
)


@pytest.fixture(autouse=True)
def _zero_waits() -> Iterator[None]:
    FALLBACK.reset()
    with no_waits():
        yield


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCRIPT) as running:
        yield running


@pytest.fixture(scope="module")
def proxy(server: ScriptedServer) -> Iterator[FaultProxy]:
    with FaultProxy(server.url) as running:
        yield running


# -- configuration -----------------------------------------------------------------------------


def test_config_follows_the_openai_conventions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-123")
    cfg = ClientConfig("openai-responses", "gpt-5")
    assert DEFAULT_BASE_URLS["openai-responses"] == "https://api.openai.com/v1"
    assert cfg.url == "https://api.openai.com/v1/responses"
    assert cfg.api_key == "sk-env-123" and cfg.key_variable == "OPENAI_API_KEY"
    headers = cfg.request_headers()
    assert headers["authorization"] == "Bearer sk-env-123" and "x-api-key" not in headers
    monkeypatch.setenv("OPENAI_BASE_URL", "https://proxy.example/openai/v1/")
    assert ClientConfig("openai-responses", "m").url == "https://proxy.example/openai/v1/responses"
    # the other two are unchanged
    assert ClientConfig("openai", "m").url == "https://proxy.example/openai/v1/chat/completions"
    assert ClientConfig("anthropic", "m", base_url="https://a.example").url == (
        "https://a.example/v1/messages"
    )


def test_an_unknown_provider_names_all_three() -> None:
    with pytest.raises(ConfigurationError) as info:
        ClientConfig("mistral", "m")  # type: ignore[arg-type]
    assert "'openai-responses'" in str(info.value) and "'anthropic'" in str(info.value)


# -- through the scripted server and the fault proxy ------------------------------------------


def turn_through(proxy: FaultProxy, fault: str, *, idle: float = 2.0) -> TurnStream:
    cfg = ClientConfig(
        "openai-responses",
        "scripted",
        max_tokens=200,
        base_url=proxy.url + "/v1",
        api_key="k",
        headers={"x-railings-fault": fault},
        timeouts=Timeouts(connect=2, first_byte=5, idle=idle),
    )

    async def go() -> TurnStream:
        async with AsyncProviderClient(cfg) as client:
            stream = client.stream_turn([User("refund?")])
            await stream.result()
            return stream

    return asyncio.run(go())


@pytest.mark.parametrize("fault", ["none", "close_after_terminator", "drip:delay=0"])
def test_clean_cells_return_the_full_text(proxy: FaultProxy, fault: str) -> None:
    stream = turn_through(proxy, fault)
    turn = stream.turn
    assert turn.outcome is Outcome.COMPLETE and turn.text == TEXT
    assert turn.stop_reason == "end_turn" and turn.usage is not None
    assert turn.usage.output_tokens == 19 and stream.attempts == 1


@pytest.mark.parametrize(
    "fault",
    [
        "truncate:events=1,times=1",
        "truncate:events=4,times=1",
        "status:code=529,times=1",
        "status:code=429,times=1",
        "status:code=503,times=1",
        "error_event:events=1,times=1",
        "error_event:events=2,type=response.failed,times=1",
        "reset:events=1,times=1",
    ],
)
def test_faults_before_content_are_resent(proxy: FaultProxy, fault: str) -> None:
    # Events 1-4 (created, in_progress, output_item.added, content_part.added) and the
    # empty-text part carry no content: a cut there is Empty.
    stream = turn_through(proxy, fault)
    assert stream.turn.outcome is Outcome.COMPLETE and stream.turn.text == TEXT
    assert stream.attempts == 2 and stream.retries[0].error.retryable


@pytest.mark.parametrize(
    "fault",
    [
        "drop_terminator",
        "truncate:events=6",
        "reset:events=6",
        "error_event:events=6",
        "error_event:events=6,type=response.failed",
        "corrupt:event=6,kind=json",
    ],
)
def test_faults_after_content_give_partial(proxy: FaultProxy, fault: str) -> None:
    stream = turn_through(proxy, fault)
    assert stream.turn.outcome is Outcome.PARTIAL and stream.interrupted
    assert stream.turn.text and TEXT.startswith(stream.turn.text)
    assert stream.attempts == 1 and stream.retries == []
    assert isinstance(stream.interruption, StreamInterrupted)


def test_idle_fault(proxy: FaultProxy) -> None:
    stream = turn_through(proxy, "idle:events=6,seconds=3", idle=0.3)
    assert stream.turn.outcome is Outcome.PARTIAL
    assert isinstance(stream.interruption, IdleTimeout)


def test_the_request_is_a_responses_request(server: ScriptedServer) -> None:
    server.clear()
    cfg = ClientConfig(
        "openai-responses",
        "gpt-5",
        max_tokens=321,
        base_url=server.openai_base_url,
        api_key="sk-secret-abc",
        extra_body={"reasoning": {"effort": "low"}},
        http2=False,
    )
    with ProviderClient(cfg) as client:  # the blocking facade, same logic
        turn = client.stream_turn([System("Be brief."), User("refund?")], [SHELL]).result()
    assert turn.outcome is Outcome.COMPLETE and turn.text == TEXT
    (request,) = server.requests
    assert request.path == "/v1/responses" and request.provider == "openai-responses"
    assert request.headers["authorization"] == "<redacted>"
    body = request.body
    assert body["max_output_tokens"] == 321 and body["stream"] is True
    assert body["store"] is False and body["instructions"] == "Be brief."
    assert body["input"] == [{"role": "user", "content": "refund?"}]
    assert body["tools"][0]["name"] == "shell" and body["reasoning"] == {"effort": "low"}


def test_the_output_limit_is_enforced_and_recognized() -> None:
    script = {"turns": [{"text": "words " * 50}]}
    with ScriptedServer(script) as srv:
        cfg = ClientConfig(
            "openai-responses",
            "m",
            max_tokens=10,
            base_url=srv.openai_base_url,
            api_key="k",
            http2=False,
        )
        with ProviderClient(cfg) as client:
            turn = client.stream_turn([User("talk")]).result()
    assert turn.outcome is Outcome.COMPLETE and turn.stop_reason == "max_tokens"
    assert turn.truncated and len(turn.text) == 40


def test_errors_are_typed() -> None:
    with ScriptedServer({"turns": [{"text": "x"}], "api_key": "sk-right"}) as srv:
        cfg = ClientConfig(
            "openai-responses",
            "m",
            base_url=srv.openai_base_url,
            api_key="sk-wrong-0000",
            http2=False,
            retry=RetryPolicy(attempts=1),
        )
        with ProviderClient(cfg) as client, pytest.raises(AuthenticationError) as info:
            client.stream_turn([User("x")]).result()
    assert info.value.status == 401 and info.value.provider_type == "invalid_api_key"
