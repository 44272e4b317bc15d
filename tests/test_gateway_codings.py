"""Judged streams in a content coding the gateway did not ask for: a real upstream on
127.0.0.1 that ignores ``accept-encoding: identity`` and answers gzip, deflate, gzip
twice, or a coding railings cannot read, behind the real gateway."""

from __future__ import annotations

import gzip
import json
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from _server import DONE, CannedServer, Reply, anthropic_text, openai_text
from railings.gateway.shapes import INTERRUPTED_CODE
from railings.testing.raw import RawResponse, raw_request
from tests.gateway_kit import PATHS, body, headers, running

WORDS = ["The ", "answer ", "is ", "forty-", "two."]
STREAMS = {
    "openai": b"".join(openai_text(WORDS)),
    "anthropic": b"".join(anthropic_text(WORDS)),
}
EVENT_STREAM = ("content-type", "text/event-stream")


def _deflate(data: bytes) -> bytes:
    return zlib.compress(data)


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def _gzip_twice(data: bytes) -> bytes:
    return gzip.compress(gzip.compress(data))


# The Content-Encoding value, and how the upstream applied it.
CODINGS = {
    "gzip": gzip.compress,
    "GZIP": gzip.compress,
    "x-gzip": gzip.compress,
    "deflate": _deflate,
    "deflate (raw)": _raw_deflate,
    "gzip, gzip": _gzip_twice,
    "gzip, identity": gzip.compress,
}


def _pieces(data: bytes, size: int) -> list[bytes | float]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _served(coding: str, data: bytes, size: int = 37) -> Reply:
    label = coding.replace(" (raw)", "")
    return Reply(200, _pieces(data, size), (EVENT_STREAM, ("content-encoding", label)))


@pytest.fixture()
def upstream() -> Iterator[CannedServer]:
    with CannedServer() as server:
        yield server


def _ask(url: str, provider: str) -> RawResponse:
    return raw_request(url, PATHS[provider], body(provider), headers=headers(provider))


@pytest.mark.parametrize("provider", sorted(STREAMS))
@pytest.mark.parametrize("coding", sorted(CODINGS))
def test_a_compressed_stream_is_judged_decoded_and_forwarded_as_what_it_is(
    upstream: CannedServer, tmp_path: Path, provider: str, coding: str
) -> None:
    plain = STREAMS[provider]
    upstream.push(_served(coding, CODINGS[coding](plain)))
    with running(upstream.url, tmp_path) as (url, gateway, _):
        got = _ask(url, provider)
        metrics = gateway.metrics
    assert upstream.requests[0].headers["accept-encoding"] == "identity"
    assert len(upstream.requests) == 1  # complete on the first attempt: nothing resent
    assert got.status == 200 and got.complete
    assert got.body == plain  # the decoded stream, byte for byte
    assert "content-encoding" not in got.headers  # labelled as what it is
    assert "content-length" not in got.headers
    value = metrics.value("railings_gateway_streams_total", provider=provider, outcome="complete")
    assert value == 1


@pytest.mark.parametrize("coding", ["br", "zstd", "compress", "gzip, br", "snappy"])
def test_a_coding_railings_cannot_read_fails_closed_once_with_the_providers_error(
    upstream: CannedServer, tmp_path: Path, coding: str
) -> None:
    # Whatever these bytes are, they are not read as an Empty stream and resent: the
    # upstream may have generated (and billed) an answer inside them.
    provider = "openai"
    data = b"\x28\xb5\x2f\xfd" + bytes(range(256)) * 4  # not an event stream in any coding
    for _ in range(4):
        upstream.push(Reply(200, _pieces(data, 100), (EVENT_STREAM, ("content-encoding", coding))))
    with running(upstream.url, tmp_path) as (url, gateway, _):
        got = _ask(url, provider)
        metrics = gateway.metrics
    assert len(upstream.requests) == 1  # one attempt, never resent
    assert got.status == 502 and got.headers["x-should-retry"] == "false"
    assert got.headers["content-type"] == "application/json"
    error = json.loads(got.body)["error"]  # the provider's own error shape
    assert error["code"] == "content_encoding_unreadable"
    assert "content-encoding" in error["message"]
    outcome = {"provider": provider, "outcome": "unreadable"}
    assert metrics.value("railings_gateway_streams_total", **outcome) == 1


def test_a_resent_stream_in_a_coding_railings_cannot_read_ends_with_the_error_event(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # The first attempt was Empty (the head went out with it); the resend answers br: the
    # client gets the error event, and no third request goes out.
    role_only = openai_text([], finish=None, done=False)
    upstream.push(Reply(200, role_only, end="close"))
    for _ in range(3):
        upstream.push(Reply(200, [b"\x0b\x03\x80data"], (EVENT_STREAM, ("content-encoding", "br"))))
    with running(upstream.url, tmp_path) as (url, gateway, _):
        got = _ask(url, "openai")
        metrics = gateway.metrics
    assert len(upstream.requests) == 2
    assert got.status == 200 and got.complete
    assert b"content_encoding_unreadable" in got.body and DONE not in got.body
    assert b"\x0b\x03\x80" not in got.body
    value = metrics.value("railings_gateway_streams_total", provider="openai", outcome="unreadable")
    assert value == 1


def _corrupt_after(plain: bytes, events: int) -> list[bytes | float]:
    """A gzip stream whose first ``events`` events decode (flushed whole), then bytes
    that are not deflate: a block of the reserved type (BTYPE 11)."""
    packer = zlib.compressobj(wbits=zlib.MAX_WBITS | 16)
    cut = 0
    for _ in range(events):
        cut = plain.index(b"\n\n", cut) + 2
    head = packer.compress(plain[:cut]) + packer.flush(zlib.Z_SYNC_FLUSH)
    return [head, b"\xff" * 64]


def test_a_body_that_stops_decoding_after_content_is_partial(
    upstream: CannedServer, tmp_path: Path
) -> None:
    plain = STREAMS["openai"]
    upstream.push(
        Reply(200, _corrupt_after(plain, 3), (EVENT_STREAM, ("content-encoding", "gzip")))
    )
    with running(upstream.url, tmp_path) as (url, gateway, _):
        got = _ask(url, "openai")
        metrics = gateway.metrics
    assert len(upstream.requests) == 1  # content arrived: never resent
    assert got.status == 200 and got.complete
    events = got.events()
    assert b"".join(events[:-1]) == b"".join(openai_text(WORDS)[:3])  # what decoded, whole
    error = json.loads(events[-1].removeprefix(b"data: "))["error"]
    assert error["code"] == INTERRUPTED_CODE and "decode" in error["message"]
    assert DONE not in got.body
    value = metrics.value("railings_gateway_streams_total", provider="openai", outcome="partial")
    assert value == 1


def test_a_body_that_does_not_decode_before_content_is_not_resent(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # Nothing readable arrived, but something may have been generated inside what did:
    # when in doubt, never pay twice.
    for _ in range(4):
        upstream.push(
            Reply(
                200,
                [b"\x1f\x8b\x08\x00" + b"\xff" * 64],
                (EVENT_STREAM, ("content-encoding", "gzip")),
            )
        )
    with running(upstream.url, tmp_path) as (url, gateway, _):
        got = _ask(url, "openai")
        metrics = gateway.metrics
    assert len(upstream.requests) == 1
    assert got.status == 200 and got.complete
    assert b"content_encoding_unreadable" in got.body and DONE not in got.body
    value = metrics.value("railings_gateway_streams_total", provider="openai", outcome="unreadable")
    assert value == 1


def test_an_inflating_body_is_judged_in_bounded_pieces(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # About 200 KiB on the wire that inflate to 256 MiB: one event that never ends. It is
    # read a piece at a time until it passes the event limit, never inflated whole.
    content = b"".join(openai_text(["Hi"], finish=None, done=False))
    packer = zlib.compressobj(wbits=zlib.MAX_WBITS | 16)
    wire: list[bytes | float] = [packer.compress(content + b"data: ")]
    for _ in range(256):
        wire.append(packer.compress(b"x" * 2**20) + packer.flush(zlib.Z_SYNC_FLUSH))
    assert sum(map(len, wire)) < 300 * 1024  # type: ignore[arg-type]
    upstream.push(Reply(200, wire, (EVENT_STREAM, ("content-encoding", "gzip"))))
    tracemalloc.start()
    try:
        with running(upstream.url, tmp_path) as (url, _, tee):
            got = _ask(url, "openai")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.status == 200 and got.complete
    assert got.body.startswith(content)
    assert b"grew past" in got.body  # the event limit (16 MiB), after content: Partial
    assert sum(map(len, tee.bodies)) < 256 * 1024  # the gateway stopped reading early
    assert peak < 64 * 2**20  # the event limit (16 MiB) and 1 MiB pieces, not 256 MiB
