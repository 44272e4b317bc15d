"""The provider client against a real HTTP server on 127.0.0.1 (tests/_server.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from _server import (
    DONE,
    CannedServer,
    Reply,
    anthropic_error,
    anthropic_text,
    json_reply,
    openai_chunk,
    openai_text,
)
from railings.classify import INTERRUPTED_MESSAGE
from railings.errors import (
    AuthenticationError,
    ConfigurationError,
    ConnectError,
    ContextWindowExceeded,
    FirstByteTimeout,
    IdleTimeout,
    MalformedStream,
    Overloaded,
    RateLimited,
    StreamInterrupted,
)
from railings.events import MessageStart, StreamEvent, TextDelta
from railings.messages import System, ToolSpec, User
from railings.transport import (
    BANNER,
    FALLBACK,
    AsyncProviderClient,
    BannerState,
    ClientConfig,
    ProviderClient,
    RetryPolicy,
    Timeouts,
    TurnStream,
    no_waits,
    set_testing,
)
from railings.turn.model import ErrorKind, Outcome
from railings.turn.verdict import RejectReason

FAST = Timeouts(connect=2.0, first_byte=5.0, idle=2.0)


@pytest.fixture(autouse=True)
def _zero_waits() -> Iterator[None]:
    FALLBACK.reset()
    with no_waits():
        yield
    FALLBACK.reset()


@pytest.fixture
def server() -> Iterator[CannedServer]:
    with CannedServer() as running:
        yield running


def config(server: CannedServer, provider: str = "openai", **overrides: Any) -> ClientConfig:
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    options: dict[str, Any] = {
        "model": "m",
        "max_tokens": 64,
        "base_url": base,
        "api_key": "sk-test",
        "timeouts": FAST,
    }
    options.update(overrides)
    return ClientConfig(provider=provider, **options)  # type: ignore[arg-type]


def run(cfg: ClientConfig, **kwargs: Any) -> tuple[TurnStream, list[StreamEvent]]:
    async def go() -> tuple[TurnStream, list[StreamEvent]]:
        async with AsyncProviderClient(cfg) as client:
            stream = client.stream_turn([System("be brief"), User("hi")], **kwargs)
            events = [event async for event in stream]
            return stream, events

    return asyncio.run(go())


def texts(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


# -- clean streams and what goes over the wire ----------------------------------------------


def test_clean_openai_stream_and_request(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text(["Hello", " world"])))
    tool = ToolSpec("shell", "run a command", {"type": "object", "properties": {}})
    stream, events = run(config(server), tools=[tool])
    assert stream.turn.outcome is Outcome.COMPLETE and not stream.interrupted
    assert texts(events) == stream.turn.text == "Hello world"
    assert stream.turn.usage is not None and stream.turn.usage.output_tokens == 2
    assert stream.attempts == 1 and stream.retries == []
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["accept"] == "text/event-stream"
    body = request.json()
    assert body["stream"] is True and body["max_tokens"] == 64
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["tools"][0]["function"]["name"] == "shell"


def test_clean_anthropic_stream_and_request(server: CannedServer) -> None:
    server.push(Reply(chunks=anthropic_text(["Hi", " there"])))
    stream, events = run(config(server, "anthropic"))
    assert stream.turn.outcome is Outcome.COMPLETE
    assert texts(events) == "Hi there"
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.json()
    assert body["system"] == "be brief" and body["max_tokens"] == 64 and body["stream"] is True


def test_comment_keepalives_count_as_activity(server: CannedServer) -> None:
    words = openai_text(["slow", " but", " alive"])
    pings: list[bytes | float] = []
    for _ in range(4):  # 2 s without content, longer than the idle gap; a ping every 0.5 s
        pings += [0.5, b": keep-alive\n\n"]
    server.push(Reply(chunks=[words[0], words[1], *pings, *words[2:]]))
    stream, _ = run(config(server, timeouts=Timeouts(connect=5, first_byte=30, idle=1.5)))
    assert stream.turn.outcome is Outcome.COMPLETE


# -- proof before ending: Empty resent, Partial as-is ---------------------------------------


@pytest.mark.parametrize("end", ["end", "close", "reset"])
def test_empty_cut_is_resent_transparently(server: CannedServer, end: str) -> None:
    framing = "close" if end == "close" else "chunked"
    first = openai_text([], finish=None, done=False)  # only the role chunk: no content
    server.push(Reply(chunks=first, end=end, framing=framing))  # type: ignore[arg-type]
    server.push(Reply(chunks=openai_text(["ok"])))
    stream, events = run(config(server))
    assert stream.turn.outcome is Outcome.COMPLETE and stream.turn.text == "ok"
    assert stream.attempts == 2 and len(server.requests) == 2
    error = stream.retries[0].error
    assert isinstance(error, StreamInterrupted) and error.empty and error.retryable
    # The discarded attempt's events never reached the caller.
    assert sum(isinstance(e, MessageStart) for e in events) == 1


def test_empty_cuts_exhaust_the_attempts(server: CannedServer) -> None:
    for _ in range(3):
        server.push(Reply(chunks=openai_text([], finish=None, done=False)))
    cfg = config(server, retry=RetryPolicy(attempts=3))
    with pytest.raises(StreamInterrupted) as raised:
        run(cfg)
    assert raised.value.empty and len(server.requests) == 3
    assert str(raised.value) == INTERRUPTED_MESSAGE


@pytest.mark.parametrize("end", ["end", "reset"])
def test_partial_is_returned_as_is_and_never_resent(server: CannedServer, end: str) -> None:
    server.push(
        Reply(chunks=openai_text(["Your refund", " will be"], finish=None, done=False), end=end)
    )  # type: ignore[arg-type]
    server.push(Reply(chunks=openai_text(["never sent"])))
    stream, events = run(config(server))
    turn = stream.turn
    assert turn.outcome is Outcome.PARTIAL and stream.interrupted
    assert turn.text == texts(events) == "Your refund will be"
    assert turn.error is not None and turn.error.kind is ErrorKind.INTERRUPTED
    assert turn.stop_reason is None  # no stop event was made up
    assert len(server.requests) == 1
    assert stream.interruption is not None and not stream.interruption.empty
    assert not stream.interruption.retryable


def test_partial_tool_call_is_not_executed(server: CannedServer) -> None:
    chunks = [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "shell", "arguments": ""},
                    }
                ]
            }
        ),
        openai_chunk(
            {
                "tool_calls": [
                    {"index": 0, "function": {"arguments": '{"command": "rm -rf /tmp/leg'}}
                ]
            }
        ),
    ]
    server.push(Reply(chunks=chunks))
    stream, _ = run(config(server))
    (verdict,) = stream.verdicts
    assert not verdict.execute and verdict.reason is RejectReason.INTERRUPTED


def test_partial_raises_when_configured(server: CannedServer) -> None:
    server.push(Reply(chunks=anthropic_text(["half"], stop=False)))
    seen: list[StreamEvent] = []

    async def go() -> None:
        async with AsyncProviderClient(config(server, "anthropic", raise_on_partial=True)) as c:
            async for event in c.stream_turn([User("hi")]):
                seen.append(event)

    with pytest.raises(StreamInterrupted) as raised:
        asyncio.run(go())
    assert not raised.value.empty
    assert getattr(raised.value.turn, "outcome", None) is Outcome.PARTIAL
    assert texts(seen) == "half"


def test_result_without_iterating(server: CannedServer) -> None:
    server.push(Reply(chunks=anthropic_text(["a", "b"])))

    async def go() -> str:
        async with AsyncProviderClient(config(server, "anthropic")) as client:
            return (await client.stream_turn([User("hi")]).result()).text

    assert asyncio.run(go()) == "ab"


def test_abandoned_stream_releases_its_connection(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text(["one", "two"])))

    async def go() -> None:
        async with AsyncProviderClient(config(server)) as client:
            async with client.stream_turn([User("hi")]) as stream:
                async for _ in stream:
                    break
            assert not stream.done

    asyncio.run(go())  # warnings are errors: an unclosed response would fail here


# -- timeouts -----------------------------------------------------------------------------


def test_idle_gap_after_content_gives_partial(server: CannedServer) -> None:
    words = openai_text(["a", "b"])
    # The gap outlasts the suite's timeout: only the idle clock can end this stream.
    server.push(Reply(chunks=[*words[:2], 3600.0, *words[2:]], end="hang"))
    cfg = config(server, timeouts=Timeouts(connect=2, first_byte=5, idle=0.3))
    stream, _ = run(cfg)
    assert stream.turn.outcome is Outcome.PARTIAL
    assert isinstance(stream.interruption, IdleTimeout)
    assert stream.interruption.idle_seconds == 0.3
    assert stream.turn.error is not None and "idle" in stream.turn.error.message


def test_silence_before_content_waits_for_the_first_byte_limit(server: CannedServer) -> None:
    words = openai_text(["thought", " hard"])
    # The role chunk, then thinking for longer than the idle gap (margins wide enough for a
    # busy machine: the rest of the stream comes at once, so only the pause could trip idle).
    server.push(Reply(chunks=[words[0], 3.0, *words[1:]]))
    stream, _ = run(config(server, timeouts=Timeouts(connect=5, first_byte=30, idle=1.0)))
    assert stream.turn.outcome is Outcome.COMPLETE and stream.retries == []


def test_silence_before_content_past_the_limit_is_resent(server: CannedServer) -> None:
    server.push(Reply(chunks=[openai_text([])[0], 5.0], end="hang"))
    server.push(Reply(chunks=openai_text(["ok"])))
    stream, _ = run(config(server, timeouts=Timeouts(connect=2, first_byte=0.3, idle=5)))
    assert stream.turn.text == "ok"
    error = stream.retries[0].error
    assert isinstance(error, IdleTimeout) and error.empty and error.idle_seconds == 0.3


def test_first_byte_timeout(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text(["late"]), before_headers=2.0))
    cfg = config(
        server, timeouts=Timeouts(connect=2, first_byte=0.3, idle=5), retry=RetryPolicy(attempts=1)
    )
    with pytest.raises(FirstByteTimeout):
        run(cfg)


def test_total_timeout_mid_stream(server: CannedServer) -> None:
    words = openai_text(["a", "b", "c"])
    server.push(Reply(chunks=[words[0], words[1], 0.2, words[2], 0.2, 0.2, *words[3:]]))
    cfg = config(server, timeouts=Timeouts(connect=2, first_byte=5, idle=1, total=0.3))
    stream, _ = run(cfg)
    assert stream.turn.outcome is Outcome.PARTIAL
    assert stream.interruption is not None and "total timeout" in stream.interruption.message


def test_connect_error_is_retried_then_raised() -> None:
    with CannedServer() as gone:
        url = gone.openai_base_url
    cfg = ClientConfig(
        "openai", "m", base_url=url, api_key="k", timeouts=FAST, retry=RetryPolicy(attempts=2)
    )
    with pytest.raises(ConnectError) as raised:
        run(cfg)
    assert raised.value.retryable and raised.value.__cause__ is not None


# -- provider errors ----------------------------------------------------------------------


def test_429_retry_after_is_honoured(server: CannedServer) -> None:
    body = {"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}
    server.push(json_reply(429, body, ("retry-after-ms", "40")))
    server.push(Reply(chunks=openai_text(["ok"])))
    set_testing(False)  # this test measures the real wait
    try:
        started = time.monotonic()
        stream, _ = run(config(server))
    finally:
        set_testing(True)
    assert stream.turn.text == "ok"
    record = stream.retries[0]
    assert isinstance(record.error, RateLimited) and record.error.retry_after == 0.04
    assert record.wait == 0.04 and time.monotonic() - started >= 0.04


def test_429_asking_too_long_is_not_waited_for(server: CannedServer) -> None:
    server.push(json_reply(429, {"error": {"message": "later"}}, ("retry-after", "3600")))
    with pytest.raises(RateLimited) as raised:
        run(config(server))
    assert raised.value.retry_after == 3600 and len(server.requests) == 1


def test_529_overloaded_is_retried(server: CannedServer) -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.push(json_reply(529, body), json_reply(529, body))
    server.push(Reply(chunks=anthropic_text(["fine"])))
    stream, _ = run(config(server, "anthropic"))
    assert stream.turn.text == "fine" and stream.attempts == 3
    assert all(isinstance(r.error, Overloaded) for r in stream.retries)
    assert stream.retries[0].error.status == 529  # type: ignore[attr-defined]


def test_529_until_the_attempts_run_out(server: CannedServer) -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    for _ in range(2):
        server.push(json_reply(529, body))
    with pytest.raises(Overloaded) as raised:
        run(config(server, "anthropic", retry=RetryPolicy(attempts=2)))
    assert raised.value.provider_type == "overloaded_error"


def test_error_event_before_content_is_retried(server: CannedServer) -> None:
    start = anthropic_text([])[0]
    server.push(Reply(chunks=[start, anthropic_error("overloaded_error", "Overloaded")]))
    server.push(Reply(chunks=anthropic_text(["ok"])))
    stream, _ = run(config(server, "anthropic"))
    assert stream.turn.text == "ok"
    assert isinstance(stream.retries[0].error, Overloaded)


def test_error_event_mid_stream_gives_partial(server: CannedServer) -> None:
    chunks = anthropic_text(["some", " text"], stop=False)[:5]
    server.push(Reply(chunks=[*chunks, anthropic_error("api_error", "Internal server error")]))
    stream, _ = run(config(server, "anthropic"))
    turn = stream.turn
    assert turn.outcome is Outcome.PARTIAL and turn.text == "some text"
    assert turn.error is not None and turn.error.kind is ErrorKind.PROVIDER_ERROR
    assert turn.error.provider_type == "api_error"
    assert stream.interruption is not None and len(server.requests) == 1
    assert "Internal server error" in stream.interruption.message


def test_authentication_error_is_not_retried(server: CannedServer) -> None:
    body = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    server.push(json_reply(401, body))
    with pytest.raises(AuthenticationError) as raised:
        run(config(server, "anthropic", api_key=""))
    assert "ANTHROPIC_API_KEY" in str(raised.value) and len(server.requests) == 1


def test_context_window_is_a_bad_request(server: CannedServer) -> None:
    body = {
        "error": {
            "message": "maximum context length is 8192 tokens",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    server.push(json_reply(400, body))
    with pytest.raises(ContextWindowExceeded) as raised:
        run(config(server))
    assert not raised.value.retryable and raised.value.status == 400


def test_non_event_stream_answer_is_malformed(server: CannedServer) -> None:
    server.push(json_reply(200, {"id": "x", "choices": []}))
    with pytest.raises(MalformedStream):
        run(config(server))


def test_stream_options_dropped_when_rejected(server: CannedServer) -> None:
    body = {
        "error": {
            "message": "Unrecognized request argument supplied: stream_options",
            "type": "invalid_request_error",
        }
    }
    server.push(json_reply(400, body), Reply(chunks=openai_text(["ok"], done=True)))
    stream, _ = run(config(server))
    assert stream.turn.text == "ok"
    assert "stream_options" in server.requests[0].json()
    assert "stream_options" not in server.requests[1].json()


# -- the retry banner ---------------------------------------------------------------------


def test_retry_banner_foreground_and_background(server: CannedServer) -> None:
    states: list[BannerState | None] = []
    unsubscribe = BANNER.subscribe(states.append)
    try:
        empty = Reply(chunks=openai_text([], finish=None, done=False))
        server.push(empty, Reply(chunks=openai_text(["ok"])))
        run(config(server))
        shown = [s for s in states if s is not None]
        assert shown and shown[0].attempt == 2 and shown[0].attempts == 4
        assert shown[-1].seconds == 0 and INTERRUPTED_MESSAGE in shown[0].reason
        assert states[-1] is None and BANNER.state is None
        states.clear()
        server.push(empty, Reply(chunks=openai_text(["ok"])))
        run(config(server), background=True)
        assert states == []
    finally:
        unsubscribe()


# -- configuration and the sync facade ------------------------------------------------------


def test_config_follows_the_sdk_conventions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    cfg = ClientConfig("openai", "gpt")
    assert cfg.url == "https://api.openai.com/v1/chat/completions"
    assert cfg.api_key == "sk-env" and "sk-env" not in repr(cfg)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy.local:8080/")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    anthropic = ClientConfig("anthropic", "claude", headers={"X-Team": "a"})
    assert anthropic.url == "http://proxy.local:8080/v1/messages"
    assert anthropic.api_key is None
    headers = anthropic.request_headers()
    assert "x-api-key" not in headers and headers["x-team"] == "a"
    with pytest.raises(ConfigurationError):
        ClientConfig("mistral", "m")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Timeouts(idle=0)


def test_sync_facade(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text(["sync", " ok"])))
    server.push(Reply(chunks=openai_text(["cut"], finish=None, done=False)))
    with ProviderClient(config(server)) as client:
        stream = client.stream_turn([User("hi")])
        assert texts(list(stream)) == "sync ok" and stream.turn.complete
        partial = client.stream_turn([User("again")])
        assert partial.result().outcome is Outcome.PARTIAL and partial.interrupted


def test_done_is_not_content(server: CannedServer) -> None:
    # A proof with no content is a complete, empty answer: not an interruption.
    server.push(Reply(chunks=[openai_chunk({"role": "assistant", "content": ""}, "stop"), DONE]))
    stream, _ = run(config(server))
    assert stream.turn.outcome is Outcome.COMPLETE and stream.turn.text == ""


def test_sync_facade_times_the_idle_gap(server: CannedServer) -> None:
    words = openai_text(["a", "b"])
    server.push(Reply(chunks=[*words[:2], 5.0, *words[2:]], end="hang"))
    cfg = config(server, timeouts=Timeouts(connect=2, first_byte=5, idle=0.3))
    with ProviderClient(cfg) as client:
        stream = client.stream_turn([User("hi")])
        assert stream.result().outcome is Outcome.PARTIAL
        assert isinstance(stream.interruption, IdleTimeout)


def test_a_slow_consumer_is_not_an_idle_stream(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text(["one", "two", "three"])))

    async def go() -> TurnStream:
        cfg = config(server, timeouts=Timeouts(connect=5, first_byte=30, idle=0.5))
        async with AsyncProviderClient(cfg) as client:
            stream = client.stream_turn([User("hi")])
            async for event in stream:
                if isinstance(event, TextDelta):
                    await asyncio.sleep(0.75)  # longer than the gap, between reads
            return stream

    assert asyncio.run(go()).turn.outcome is Outcome.COMPLETE


def test_cancellation_from_outside_is_not_swallowed(server: CannedServer) -> None:
    words = openai_text(["a"])
    server.push(Reply(chunks=[*words[:2], 5.0, *words[2:]], end="hang"))

    async def go() -> None:
        cfg = config(server, timeouts=Timeouts(connect=2, first_byte=5, idle=3))
        async with AsyncProviderClient(cfg) as client:
            task = asyncio.create_task(client.stream_turn([User("hi")]).result())
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(go())


def test_a_dropped_connection_over_cleartext_is_no_http2_failure(server: CannedServer) -> None:
    # "Server disconnected" is a RemoteProtocolError ("protocolerror" is a marker), but
    # http:// never negotiates HTTP/2: the sticky fallback flag must stay clear.
    server.push(Reply(end="drop"), Reply(chunks=openai_text(["ok"])))
    stream, _ = run(config(server, http2=True))
    assert stream.turn.text == "ok" and not FALLBACK.broken
    assert not stream.retries[0].replay


def test_the_turn_before_the_stream_ended_says_what_to_do() -> None:
    from railings.errors import StreamNotRead
    from railings.testing import Script, ScriptedServer

    with ScriptedServer(Script.text("hello")) as scripted:
        cfg = ClientConfig(
            provider="openai", model="m", base_url=scripted.openai_base_url, api_key="x"
        )

        async def go() -> str:
            async with AsyncProviderClient(cfg) as client:
                stream = client.stream_turn([User("hi")])
                with pytest.raises(StreamNotRead, match=r"await stream\.result\(\)"):
                    _ = stream.turn
                return (await stream.result()).text

        assert asyncio.run(go()) == "hello"
