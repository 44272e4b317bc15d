"""The client without a socket: ``httpx2.MockTransport`` answers every request.

What the real-socket tests in test_transport_client.py prove end to end, proved
here in milliseconds on the client's own code path: a Complete turn, a Partial
one kept and never resent, an Empty one resent, retries on 429 and 5xx with the
provider's retry-after, the ``stream_options`` resend, and the HTTP/2 ->
HTTP/1.1 replay (a transport per HTTP version, so the fallback stays the
client's). Each client gets its own :class:`ClientContext`: nothing here reads
or changes process state.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx2
import pytest

from _server import openai_text
from railings.errors import (
    Overloaded,
    RateLimited,
    ServerError,
    StreamInterrupted,
    TransportError,
)
from railings.events import StreamEvent, TextDelta
from railings.messages import User
from railings.transport import (
    FALLBACK,
    AsyncProviderClient,
    BannerState,
    ClientConfig,
    ClientContext,
    RetryBanner,
    RetryPolicy,
    TurnStream,
)
from railings.turn.model import Outcome

Handler = Callable[[httpx2.Request], httpx2.Response]
ONE_ATTEMPT = RetryPolicy(attempts=1)


class Chunks(httpx2.AsyncByteStream):
    """A body sent chunk by chunk, optionally broken off with ``cut`` after the last."""

    def __init__(self, chunks: Sequence[bytes], cut: Exception | None = None) -> None:
        self.chunks, self.cut = list(chunks), cut

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        if self.cut is not None:
            raise self.cut


def sse(
    chunks: Sequence[bytes], *, cut: Exception | None = None, h2: bool = False
) -> httpx2.Response:
    extensions = {"http_version": b"HTTP/2"} if h2 else {}
    return httpx2.Response(
        200,
        headers={"content-type": "text/event-stream"},
        stream=Chunks(chunks, cut),
        extensions=extensions,
    )


def error(status: int, message: str, *headers: tuple[str, str]) -> httpx2.Response:
    body = {"error": {"message": message, "type": "error"}}
    return httpx2.Response(status, json=body, headers=dict(headers))


def replies(*answers: httpx2.Response) -> tuple[Handler, list[httpx2.Request]]:
    """A handler that gives ``answers`` in order and records each request."""
    seen: list[httpx2.Request] = []
    queue = list(answers)

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return queue.pop(0)

    return handle, seen


def config(**overrides: Any) -> ClientConfig:
    fields: dict[str, Any] = {
        "provider": "openai",
        "model": "m",
        "max_tokens": 64,
        "base_url": "https://api.example.test/v1",
        "api_key": "sk-mock-transport-key",
    }
    return ClientConfig(**(fields | overrides))


def turns(
    transport: httpx2.AsyncBaseTransport | Callable[[bool], httpx2.AsyncBaseTransport],
    count: int = 1,
    *,
    context: ClientContext | None = None,
    **overrides: Any,
) -> list[tuple[TurnStream, list[StreamEvent]]]:
    async def go() -> list[tuple[TurnStream, list[StreamEvent]]]:
        out = []
        own = context or ClientContext(zero_waits=True, banner=RetryBanner())
        async with AsyncProviderClient(config(**overrides), transport=transport, context=own) as c:
            for _ in range(count):
                stream = c.stream_turn([User("hi")])
                out.append((stream, [event async for event in stream]))
        return out

    return asyncio.run(go())


def body_of(request: httpx2.Request) -> dict[str, Any]:
    return json.loads(request.content)


def test_complete() -> None:
    handle, seen = replies(sse(openai_text(["Hello", " there"])))
    ((stream, events),) = turns(httpx2.MockTransport(handle))
    assert stream.turn.outcome is Outcome.COMPLETE and stream.turn.text == "Hello there"
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", " there"]
    assert stream.attempts == 1 and stream.retries == [] and stream.interruption is None
    assert stream.http_version == "HTTP/1.1"
    (request,) = seen
    assert request.url == "https://api.example.test/v1/chat/completions"
    assert body_of(request)["stream_options"] == {"include_usage": True}


def test_partial_is_kept_marked_and_never_resent() -> None:
    cut = httpx2.ReadError("connection reset")
    handle, seen = replies(sse(openai_text(["half"], finish=None, done=False), cut=cut))
    ((stream, events),) = turns(httpx2.MockTransport(handle))
    assert len(seen) == 1 and stream.retries == []
    turn, interruption = stream.turn, stream.interruption
    assert turn.outcome is Outcome.PARTIAL and turn.text == "half" and stream.interrupted
    assert isinstance(interruption, StreamInterrupted) and not interruption.empty
    assert not interruption.retryable and interruption.turn is turn
    assert turn.error is not None and turn.error.message == interruption.message
    assert "connection reset" in interruption.message and interruption.__cause__ is cut
    assert b"half" in interruption.received
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["half"]


def test_partial_raises_when_configured_and_the_turn_is_still_there() -> None:
    handle, seen = replies(sse(openai_text(["half"], finish=None, done=False)))
    with pytest.raises(StreamInterrupted) as raised:
        turns(httpx2.MockTransport(handle), raise_on_partial=True)
    assert not raised.value.empty and len(seen) == 1
    assert getattr(raised.value.turn, "text", None) == "half"


def test_empty_is_resent_and_its_events_never_seen() -> None:
    first = openai_text([], finish=None, done=False)  # the role chunk, then the body ends
    handle, seen = replies(sse(first), sse(openai_text(["ok"])))
    ((stream, events),) = turns(httpx2.MockTransport(handle))
    assert stream.turn.text == "ok" and len(seen) == 2 and stream.attempts == 2
    (record,) = stream.retries
    assert isinstance(record.error, StreamInterrupted) and record.error.empty
    assert record.attempt == 1 and not record.replay
    assert record.error.turn is not None and record.error.received == b"".join(first)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["ok"]


def test_empty_until_the_attempts_run_out() -> None:
    empty = openai_text([], finish=None, done=False)
    handle, seen = replies(*(sse(empty) for _ in range(4)))
    with pytest.raises(StreamInterrupted) as raised:
        turns(httpx2.MockTransport(handle))
    assert raised.value.empty and len(seen) == 4


def test_429_waits_what_the_provider_asked_and_shows_it_on_the_banner() -> None:
    banner = RetryBanner()
    shown: list[BannerState | None] = []
    banner.subscribe(shown.append)
    handle, seen = replies(
        error(429, "slow down", ("retry-after-ms", "20")), sse(openai_text(["ok"]))
    )
    context = ClientContext(banner=banner)  # the waits are real here
    ((stream, _),) = turns(httpx2.MockTransport(handle), context=context)
    assert stream.turn.text == "ok" and len(seen) == 2
    (record,) = stream.retries
    assert isinstance(record.error, RateLimited) and record.error.retry_after == 0.02
    assert record.wait == 0.02
    states = [s for s in shown if s is not None]
    assert states and all(s.attempt == 2 and s.attempts == 4 for s in states)
    assert "slow down" in states[0].reason and shown[-1] is None


@pytest.mark.parametrize(("status", "cls"), [(500, ServerError), (503, Overloaded)])
def test_5xx_is_retried(status: int, cls: type[Exception]) -> None:
    handle, seen = replies(error(status, "down"), sse(openai_text(["back"])))
    ((stream, _),) = turns(httpx2.MockTransport(handle))
    assert stream.turn.text == "back" and len(seen) == 2
    assert isinstance(stream.retries[0].error, cls)


def test_x_should_retry_false_is_final() -> None:
    handle, seen = replies(error(500, "no", ("x-should-retry", "false")))
    with pytest.raises(ServerError):
        turns(httpx2.MockTransport(handle))
    assert len(seen) == 1


def test_a_refused_stream_options_is_dropped_for_the_clients_later_turns_too() -> None:
    refused = error(400, "Unrecognized request argument supplied: stream_options")
    handle, seen = replies(refused, sse(openai_text(["one"])), sse(openai_text(["two"])))
    (first, _), (second, _) = turns(httpx2.MockTransport(handle), 2)
    assert first.turn.text == "one" and second.turn.text == "two"
    assert ["stream_options" in body_of(r) for r in seen] == [True, False, False]
    assert first.attempts == 1 and first.retries[0].replay


def test_stream_options_asked_for_explicitly_are_not_dropped() -> None:
    handle, seen = replies(error(400, "Unrecognized request argument supplied: stream_options"))
    with pytest.raises(Exception, match="stream_options"):
        turns(httpx2.MockTransport(handle), include_usage=True)
    assert len(seen) == 1


def versions(h2: Handler, h11: Handler) -> Callable[[bool], httpx2.AsyncBaseTransport]:
    return lambda http2: httpx2.MockTransport(h2 if http2 else h11)


def goaway(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.RemoteProtocolError("<ConnectionTerminated error_code:1, last_stream_id:1>")


def test_http2_failure_is_replayed_over_http11_and_the_client_stays_there() -> None:
    h2_seen: list[httpx2.Request] = []

    def h2(request: httpx2.Request) -> httpx2.Response:
        h2_seen.append(request)
        return goaway(request)

    h11, seen = replies(sse(openai_text(["one"])), sse(openai_text(["two"])))
    context = ClientContext(zero_waits=True, banner=RetryBanner())
    (first, _), (second, _) = turns(versions(h2, h11), 2, context=context)
    assert first.turn.text == "one" and second.turn.text == "two"
    assert len(h2_seen) == 1 and len(seen) == 2
    (replay,) = first.retries
    assert replay.replay and isinstance(replay.error, TransportError)
    assert first.attempts == 1 and second.retries == []
    assert context.fallback.broken and context.fallback.reason == "connectionterminated"
    assert not FALLBACK.broken  # the client's own context, not the process default


def test_http2_failure_twice_is_replayed_only_once() -> None:
    calls: list[str] = []

    def counted(version: str) -> Handler:
        def handle(request: httpx2.Request) -> httpx2.Response:
            calls.append(version)
            return goaway(request)

        return handle

    context = ClientContext(zero_waits=True, banner=RetryBanner())
    with pytest.raises(TransportError):
        turns(versions(counted("h2"), counted("h1")), context=context, retry=ONE_ATTEMPT)
    assert calls == ["h2", "h1"]  # one free replay, then the (single) attempt's error


def test_http2_off_never_asks_for_an_http2_transport() -> None:
    asked: list[bool] = []
    handle, _ = replies(sse(openai_text(["plain"])))

    def factory(http2: bool) -> httpx2.AsyncBaseTransport:
        asked.append(http2)
        return httpx2.MockTransport(handle)

    ((stream, _),) = turns(factory, http2=False)
    assert stream.turn.text == "plain" and asked == [False]


def test_a_partial_over_http2_is_kept_and_later_turns_go_over_http11() -> None:
    cut = httpx2.RemoteProtocolError("<ConnectionTerminated error_code:2>")
    h2, h2_seen = replies(sse(openai_text(["half"], finish=None, done=False), cut=cut, h2=True))
    h11, seen = replies(sse(openai_text(["later"])))
    context = ClientContext(zero_waits=True, banner=RetryBanner())
    (first, _), (second, _) = turns(versions(h2, h11), 2, context=context)
    assert first.turn.outcome is Outcome.PARTIAL and first.retries == []
    assert first.http_version == "HTTP/2" and second.http_version == "HTTP/1.1"
    assert second.turn.text == "later" and len(h2_seen) == 1 and len(seen) == 1
    assert context.fallback.broken


def test_a_cleartext_endpoint_is_never_taken_for_http2() -> None:
    handle, _ = replies(sse([], cut=httpx2.RemoteProtocolError("peer closed: http2 goaway")))
    context = ClientContext(zero_waits=True, banner=RetryBanner())
    with pytest.raises(StreamInterrupted):
        turns(
            versions(handle, handle),
            context=context,
            base_url="http://127.0.0.1:9/v1",
            retry=ONE_ATTEMPT,
        )
    assert not context.fallback.broken


def test_the_testing_switch_is_the_contexts() -> None:
    handle, seen = replies(error(429, "slow down", ("retry-after", "30")), sse(openai_text(["ok"])))
    context = ClientContext(zero_waits=True, banner=RetryBanner())
    ((stream, _),) = turns(httpx2.MockTransport(handle), context=context)
    assert stream.turn.text == "ok" and len(seen) == 2
    assert stream.retries[0].wait == 0.0  # asked for 30 s; the switch zeroes it
