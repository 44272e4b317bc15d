"""Hostile input: each case ends in a typed error or a bounded result, and memory stays bounded.

Every test states its memory bound and measures the peak with tracemalloc
(Python allocations, the server thread's included). Inputs are generated
lazily, 64 KiB at a time: the 100 MB line and the 1 GB event never exist in
memory, and feeding stops as soon as the typed error fires.

Bounds: one event or line may hold ``max_event_size`` characters (16 MiB by
default), so the sans-IO reader peaks near that; the transport keeps at most
the first 16 MiB of a body for an error's ``received`` (``_RECEIVED_LIMIT``),
so a server that sends keep-alives until the total deadline costs a constant,
not memory proportional to the time it is allowed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from railings.dispatch import Dispatcher, ToolRegistry, builtin_tools
from railings.errors import (
    EventTooLarge,
    FirstByteTimeout,
    IdleTimeout,
    RailingsError,
    TotalTimeout,
    TurnTooLarge,
)
from railings.journal import Journal
from railings.messages import User
from railings.replay import replay, to_json
from railings.testing.http import encode_chunk, read_request
from railings.testing.service import Service
from railings.transport import AsyncProviderClient, ClientConfig, RetryPolicy, Timeouts
from railings.turn.model import ErrorKind, Outcome
from railings.turn.reader import StreamReader
from railings.turn.verdict import RejectReason
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE
from tools.reliability.properties import ShellSpy

KiB, MiB = 1024, 1024 * 1024
CHUNK = 64 * KiB


def peak_of(action: Callable[[], Any]) -> tuple[Any, int]:
    """Run ``action``; return its result (or the exception it raised) and the peak traced."""
    result, peak, _ = traced(action)
    return result, peak


def traced(action: Callable[[], Any]) -> tuple[Any, int, int]:
    """(result, peak, still allocated afterwards while the result is held)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        try:
            result: Any = action()
        except Exception as exc:
            result = exc
        current, peak = tracemalloc.get_traced_memory()
        return result, peak, current
    finally:
        tracemalloc.stop()


def feed_until_error(reader: StreamReader, chunks: Iterator[bytes]) -> tuple[Exception | None, int]:
    """Feed lazily generated chunks until a typed error (or the end): (error, bytes fed)."""
    fed = 0
    for chunk in chunks:
        try:
            reader.feed(chunk)
        except RailingsError as exc:
            return exc, fed + len(chunk)
        fed += len(chunk)
    return None, fed


def repeat(first: bytes, unit: bytes, total: int) -> Iterator[bytes]:
    """``first``, then ``unit`` repeated, in 64 KiB chunks, ``total`` bytes in all (lazily)."""
    body = unit * max(1, CHUNK // len(unit))
    sent = 0
    piece = first
    while sent < total:
        yield piece
        sent += len(piece)
        piece = body


# -- the sans-IO reader ------------------------------------------------------------------


@pytest.mark.parametrize("limit", [1 * MiB, DEFAULT_MAX_EVENT_SIZE])
def test_a_100_mb_line_without_a_newline(limit: int) -> None:
    def run() -> tuple[Exception | None, int, StreamReader]:
        reader = StreamReader("openai", max_event_size=limit)
        error, fed = feed_until_error(reader, repeat(b"data: ", b"x", 100 * 1000 * 1000))
        return error, fed, reader

    (error, fed, reader), peak, held = traced(run)
    assert isinstance(error, EventTooLarge) and error.limit == limit
    assert fed <= limit + 2 * CHUNK  # it stopped at the limit, not at 100 MB
    assert held < 256 * KiB  # the error (its traceback included) keeps no line alive
    reader.close()
    turn = reader.turn()
    assert turn.outcome is Outcome.EMPTY and turn.error is not None
    assert turn.error.kind is ErrorKind.MALFORMED_STREAM
    # Bound: the line's characters once (1 byte each, ASCII), plus 1 MiB of slack.
    assert peak < limit + 1 * MiB, f"peak {peak / MiB:.1f} MiB"


@pytest.mark.parametrize("limit", [1 * MiB, DEFAULT_MAX_EVENT_SIZE])
def test_an_event_of_1_gb_announced_by_endless_data_lines(limit: int) -> None:
    line = b"data: " + b"y" * 1000 + b"\n"

    def run() -> tuple[Exception | None, int]:
        reader = StreamReader("anthropic", max_event_size=limit)
        return feed_until_error(reader, repeat(b"event: content_block_delta\n", line, 1 << 30))

    (error, fed), peak, held = traced(run)
    assert isinstance(error, EventTooLarge)
    assert fed <= limit + 2 * CHUNK
    assert held < 256 * KiB  # the error (its traceback included) keeps no data alive
    # Bound: the data values (1 byte per character) plus a list slot and a str header
    # (~60 bytes) per 1,000-character line, plus 1 MiB of slack.
    assert peak < limit * 1.1 + 1 * MiB, f"peak {peak / MiB:.1f} MiB"


def test_endless_lines_of_invalid_utf8_hold_nothing() -> None:
    garbage = b"\xff\xfe\xc3\x28 \xed\xa0\x80\n"  # not UTF-8: decoded as U+FFFD, field names

    def run() -> tuple[Exception | None, int, StreamReader]:
        reader = StreamReader("openai")
        error, fed = feed_until_error(reader, repeat(b"", garbage, 4 * MiB))
        return error, fed, reader

    (error, fed, reader), peak = peak_of(run)
    assert error is None and fed >= 4 * MiB
    reader.close()
    assert not reader.turn().complete
    assert peak < 1 * MiB, f"peak {peak / MiB:.1f} MiB"  # constant: no line is kept


def test_invalid_utf8_without_a_newline_is_a_line_too_long() -> None:
    def run() -> tuple[Exception | None, int]:
        reader = StreamReader("openai", max_event_size=1 * MiB)
        return feed_until_error(reader, repeat(b"data: ", b"\xff\xc3", 10 * MiB))

    (error, fed), peak = peak_of(run)
    assert isinstance(error, EventTooLarge) and fed <= 1 * MiB + 2 * CHUNK
    assert peak < 6 * MiB, f"peak {peak / MiB:.1f} MiB"  # U+FFFD: up to 4 bytes a character


# -- JSON that is too deep or too long ---------------------------------------------------


def openai_call(arguments: str, *, name: str = "shell") -> bytes:
    chunks = [
        {
            "id": "c",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    },
                }
            ],
        },
        {
            "id": "c",
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]},
                }
            ],
        },
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def anthropic_call(arguments: str) -> bytes:
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {"id": "m", "model": "c", "usage": {"input_tokens": 1}},
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "shell", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": arguments},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(f"event: {e}\ndata: {json.dumps(d)}\n\n".encode() for e, d in events)


DEEP = 100_000
HOSTILE_ARGUMENTS = {
    "nested_arrays_100k": "[" * DEEP + "]" * DEEP,
    "nested_objects_100k": '{"command": ' + '{"a":' * DEEP + "1" + "}" * DEEP + "}",
    "unclosed_nesting_100k": '{"command": ' + "[" * DEEP,
    "python_nesting_100k": "{'command': " + "(" * DEEP,
    "million_digit_integer": '{"command": "ls", "n": ' + "9" * 1_000_000 + "}",
}


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("case", sorted(HOSTILE_ARGUMENTS))
def test_hostile_arguments_are_rejected_not_executed(wire: str, case: str) -> None:
    arguments = HOSTILE_ARGUMENTS[case]
    body = openai_call(arguments) if wire == "openai" else anthropic_call(arguments)
    # Quadratic work on these bodies would run for hours: the suite's per-test timeout
    # bounds the time; the assertions bound what can be counted.
    result, peak = peak_of(lambda: replay(body))
    assert not isinstance(result, BaseException), result
    assert result.turn.complete
    [verdict] = result.verdicts
    assert not verdict.execute and verdict.reason is RejectReason.MALFORMED
    json.dumps(to_json(result))  # the --json form is still writable
    with ShellSpy() as spy:
        assert spy.dispatch(result.turn) == []
    # Bound: linear in the body. Its bytes, the decoded text, the joined arguments and
    # the repair ladder's rungs (one list slot per character at worst): 24 bytes per
    # byte of body, plus 4 MiB.
    assert peak < 24 * len(body) + 4 * MiB, f"peak {peak / MiB:.1f} MiB"


def test_deep_nesting_in_the_event_itself_is_malformed_not_recursion() -> None:
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"x"},"x":'
        + b"[" * DEEP
        + b"]" * DEEP
        + b"}]}\n\ndata: [DONE]\n\n"
    )
    result, peak = peak_of(lambda: replay(body))
    assert not isinstance(result, BaseException), result
    assert result.turn.error is not None
    assert result.turn.error.kind is ErrorKind.MALFORMED_STREAM
    assert peak < 10 * len(body) + 4 * MiB


@pytest.mark.parametrize(
    "field",
    ['"usage":{"prompt_tokens":1,"completion_tokens":NUMBER}', '"index":NUMBER'],
)
def test_a_json_number_with_a_million_digits_in_an_event(field: str) -> None:
    number = "9" * 1_000_000
    fields = field.replace("NUMBER", number)
    choice = '"delta":{"content":"hi"},"finish_reason":"stop"'
    if fields.startswith('"index"'):
        chunk = f'{{"id":"x","choices":[{{{fields},{choice}}}]}}'
    else:
        chunk = f'{{"id":"x","choices":[{{"index":0,{choice}}}],{fields}}}'
    body = f"data: {chunk}\n\ndata: [DONE]\n\n".encode()
    result, peak = peak_of(lambda: replay(body))  # quadratic int parsing: the suite's timeout
    assert not isinstance(result, BaseException), result
    assert not result.turn.complete  # the data is not a usable chunk: the turn is malformed
    json.dumps(to_json(result))
    assert peak < 10 * len(body) + 4 * MiB


def test_numbers_that_overflow_a_float_are_not_json_arguments() -> None:
    # 1e999999 is valid JSON grammar, but it parses to infinity, which no JSON encoder
    # can write back: the call is malformed, not executed with an Infinity in it.
    result = replay(openai_call('{"command": "ls", "n": 1e999999}'))
    [verdict] = result.verdicts
    assert not verdict.execute and verdict.reason is RejectReason.MALFORMED
    json.loads(json.dumps(to_json(result), allow_nan=False))
    usage = b'{"id":"x","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1e999}}'
    result = replay(b"data: " + usage + b"\n\ndata: [DONE]\n\n")
    json.dumps(to_json(result), allow_nan=False)  # no Infinity in the verdict


# -- NUL bytes -------------------------------------------------------------------------------


def test_nul_bytes_are_typed_or_carried_never_a_crash(tmp_path: Path) -> None:
    raw_nul = b'data: {"choices":[{"index":0,"delta":{"content":"a\x00b"}}]}\n\ndata: [DONE]\n\n'
    result = replay(raw_nul)  # a raw control character inside a JSON string: not JSON
    assert result.turn.error is not None and result.turn.error.kind is ErrorKind.MALFORMED_STREAM
    escaped = (
        b'id: a\x00b\ndata: {"choices":[{"index":0,"delta":{"content":"a\\u0000b"},'
        b'"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    result = replay(escaped)
    assert result.turn.complete and result.turn.text == "a\x00b"
    with Journal(tmp_path / "j.sqlite3") as journal:  # the journal keeps it intact
        session = journal.start_session("nul")
        journal.write(session, "delta", {"kind": "text", "text": result.turn.text})
        assert journal.entries(session)[-1].data["text"] == "a\x00b"
    calls = {
        "shell": '{"command": "echo a\\u0000b"}',
        "read_file": '{"path": "a\\u0000/../../etc/passwd"}',
        "write_file": '{"path": "x\\u0000y", "content": "z"}',
        "list_dir": '{"path": "\\u0000"}',
    }
    registry = ToolRegistry(builtin_tools(tmp_path))
    for name, arguments in calls.items():
        turn = replay(openai_call(arguments, name=name)).turn
        batch = asyncio.run(Dispatcher(registry).dispatch_turn(turn))
        [outcome] = batch.outcomes
        assert outcome.is_error, (name, outcome)
        assert "null" in outcome.content.lower() or "NUL" in outcome.content
    assert not (tmp_path / "x").exists()  # write_file refused the path: nothing was written


# -- hostile servers -------------------------------------------------------------------------

HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
)


class HostileServer(Service):
    """One behaviour for every request: ``silent`` (never a byte), ``headers`` (the
    headers, then silence), ``keepalive`` (a comment every ``interval`` s), ``flood``
    (comments as fast as the socket takes them), ``endless_data`` (one event that never
    ends). ``sent`` counts the body bytes written."""

    def __init__(self, mode: str, interval: float = 0.02) -> None:
        super().__init__()
        self.mode, self.interval, self.sent = mode, interval, 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        if self.mode == "silent":
            await asyncio.sleep(3600)
        writer.write(HEAD)
        await writer.drain()
        if self.mode == "headers":
            await asyncio.sleep(3600)
        if self.mode == "keepalive":
            piece = encode_chunk(b": keep-alive\n\n")
        elif self.mode == "flood":
            piece = encode_chunk((b": " + b"k" * 1000 + b"\n") * 60)
        else:
            piece = encode_chunk(b"data: " + b"z" * 60_000 + b"\n")
        while True:
            writer.write(piece)
            await writer.drain()
            self.sent += len(piece)
            if self.mode == "keepalive":
                await asyncio.sleep(self.interval)


@pytest.fixture
def serve() -> Iterator[Callable[..., HostileServer]]:
    servers: list[HostileServer] = []

    def start(mode: str, **options: Any) -> HostileServer:
        server = HostileServer(mode, **options).start_in_thread()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def stream_once(url: str, timeouts: Timeouts) -> tuple[Any, float]:
    """One turn with no retry: (the turn, or the error raised; seconds from the request)."""
    config = ClientConfig(
        provider="openai",
        model="m",
        base_url=url + "/v1",
        api_key="sk-hostile-000000",
        http2=False,
        retry=RetryPolicy(attempts=1),
        timeouts=timeouts,
    )

    async def main() -> tuple[Any, float]:
        async with AsyncProviderClient(config) as client:
            client._http(False)  # build the connection pool before the clock starts
            started = time.monotonic()
            try:
                turn: Any = await client.stream_turn([User("hi")]).result()
            except Exception as exc:
                turn = exc
            return turn, time.monotonic() - started

    return asyncio.run(main())


def test_a_server_that_never_sends_a_byte(serve: Callable[..., HostileServer]) -> None:
    server = serve("silent")
    (error, elapsed), peak = peak_of(lambda: stream_once(server.url, Timeouts(first_byte=0.3)))
    assert isinstance(error, FirstByteTimeout), error
    assert elapsed >= 0.25  # a timeout never fires early; how late it fires is the machine's
    assert peak < 4 * MiB


def test_headers_then_silence_is_an_empty_idle_timeout(
    serve: Callable[..., HostileServer],
) -> None:
    server = serve("headers")
    (error, elapsed), _ = peak_of(lambda: stream_once(server.url, Timeouts(first_byte=0.3)))
    assert isinstance(error, IdleTimeout) and error.empty, error
    assert elapsed >= 0.25


def test_keepalives_forever_are_ended_by_the_content_clock(
    serve: Callable[..., HostileServer],
) -> None:
    # Comments are activity for the connection clock (idle 5 s never passes while they
    # arrive every 20 ms), but not content: the content clock (first_byte before any
    # content) ends the stream, after fewer keep-alives than 5 s of them (250).
    server = serve("keepalive", interval=0.02)
    (error, _), peak = peak_of(
        lambda: stream_once(server.url, Timeouts(first_byte=0.3, idle=5.0, content_idle=0.3))
    )
    assert isinstance(error, IdleTimeout) and error.empty, error
    assert "only keep-alives" in error.message
    assert 0 < server.sent < 5.0 / 0.02 * len(b": keep-alive\n\n")
    assert peak < 4 * MiB


def test_keepalives_forever_are_ended_by_the_total_deadline(
    serve: Callable[..., HostileServer],
) -> None:
    # Comments are activity: the idle gap (5 s, wide enough for a busy machine) never
    # passes while they arrive every 20 ms, and the content clock is set longer than the
    # total deadline here: the total deadline (1 s) ends the stream.
    server = serve("keepalive", interval=0.02)
    (error, elapsed), peak = peak_of(
        lambda: stream_once(server.url, Timeouts(first_byte=60, idle=5.0, total=1.0))
    )
    assert isinstance(error, TotalTimeout), error
    assert not error.retryable
    assert elapsed >= 1.0
    # It kept talking after its first comment (50 in the second on an idle machine; two
    # are enough to show the comments kept the stream open, however busy the machine).
    assert server.sent >= 2 * len(b": keep-alive\n\n")
    assert peak < 4 * MiB


def test_a_keepalive_flood_costs_constant_memory(
    serve: Callable[..., HostileServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the kept prefix of the body lowered to 1 MiB, a flood of keep-alives up to the
    # byte bound (16 MiB + 4 KiB per token of max_tokens 4096: 32 MiB) must not cost more
    # than a few MiB, and the bound ends it: bytes counted, not seconds.
    monkeypatch.setattr("railings.transport.client._RECEIVED_LIMIT", 1 * MiB)
    server = serve("flood")
    (error, _), peak = peak_of(lambda: stream_once(server.url, Timeouts()))
    assert isinstance(error, TurnTooLarge) and error.bound == "bytes", error
    assert server.sent >= 32 * MiB, f"only {server.sent / MiB:.1f} MiB flooded"
    assert peak < 6 * MiB, f"peak {peak / MiB:.1f} MiB after {server.sent / MiB:.0f} MiB"


def test_an_endless_event_over_the_network_is_event_too_large(
    serve: Callable[..., HostileServer],
) -> None:
    server = serve("endless_data")
    (error, _), peak = peak_of(lambda: stream_once(server.url, Timeouts()))
    assert isinstance(error, EventTooLarge), error
    # Bound: the body's first 16 MiB kept for ``received``, joined once into bytes when
    # the error is raised (the event's 16 MiB of data is dropped before that), plus 8 MiB
    # of slack for the socket reads in flight.
    assert peak < 2 * DEFAULT_MAX_EVENT_SIZE + 8 * MiB, f"peak {peak / MiB:.1f} MiB"
    assert server.sent < 2 * DEFAULT_MAX_EVENT_SIZE + 8 * MiB  # the client hung up


def test_the_cli_total_timeout_ends_a_keepalive_forever_run(
    serve: Callable[..., HostileServer], tmp_path: Path
) -> None:
    server = serve("keepalive", interval=0.05)
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-hostile-cli-0000",
        "NO_COLOR": "1",
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "railings",
            "run",
            "say hi",
            "--provider",
            "openai",
            "--base-url",
            server.url + "/v1",
            "--total-timeout",
            "1",
            "--tools",
            "none",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert "total timeout" in done.stderr
