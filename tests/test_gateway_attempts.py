"""The gateway's attempts follow the attempt machine (railings.transport.machine), as the
client's do: a real upstream on 127.0.0.1 that fails at HTTP/2, refuses
``stream_options`` or sends keep-alives and nothing else, behind the real gateway."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from _server import CannedServer, Reply, json_reply, make_certificate, openai_chunk, openai_text
from railings.gateway import app
from railings.gateway.serve import ServingThread
from railings.testing.raw import RawResponse, raw_request
from railings.transport.config import Timeouts
from tests.gateway_kit import NO_WAITS, PATHS, body, headers, running

ROLE = openai_chunk({"role": "assistant", "content": ""})
PING = b": keep-alive\n\n"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture()
def upstream() -> Iterator[CannedServer]:
    with CannedServer() as server:
        yield server


def _ask(url: str) -> RawResponse:
    return raw_request(url, PATHS["openai"], body("openai"), headers=headers("openai"))


def _last_error(got: RawResponse) -> str:
    data = got.body[:-2].rsplit(b"\n\n", 1)[-1].removeprefix(b"data: ")
    message: str = json.loads(data)["error"]["message"]
    return message


# -- HTTP/2: a protocol failure is replayed once over HTTP/1.1, and the gateway stays there --


def _tls_gateway(server: CannedServer, certificate: tuple[Path, Path]) -> ServingThread:
    verify = ssl.create_default_context(cafile=str(certificate[0]))
    # No transport of the test's own: the gateway's own pools, which offer HTTP/2 by ALPN.
    gateway = app(server.url, journal=False, retry=NO_WAITS, verify=verify)
    return ServingThread(gateway)


def test_an_http2_failure_before_the_answer_is_replayed_over_http11(
    certificate: tuple[Path, Path],
) -> None:
    # The upstream answers every HTTP/2 request with GOAWAY (PROTOCOL_ERROR), the failure of
    # some CDN edges: sent again over HTTP/2, the request would fail every time.
    with CannedServer(tls=certificate) as server, _tls_gateway(server, certificate) as url:
        server.push(Reply(chunks=openai_text(["one"])), Reply(chunks=openai_text(["two"])))
        first = _ask(url)
        second = _ask(url)
    assert first.status == 200 and first.body == b"".join(openai_text(["one"]))
    assert second.status == 200 and second.body == b"".join(openai_text(["two"]))
    assert [r.protocol for r in server.requests] == ["HTTP/2", "HTTP/1.1", "HTTP/1.1"]
    assert server.h2_connections == 1  # the second call went straight to HTTP/1.1


def test_an_http2_failure_after_the_head_before_content_is_replayed_over_http11(
    certificate: tuple[Path, Path],
) -> None:
    # The head and the role chunk arrive over HTTP/2, then GOAWAY: an Empty attempt whose
    # failure is HTTP/2's. The client sees only the stream the HTTP/1.1 replay brought.
    with (
        CannedServer(tls=certificate, h2_partial=ROLE) as server,
        _tls_gateway(server, certificate) as url,
    ):
        server.push(Reply(chunks=openai_text(["replayed"])))
        got = _ask(url)
    assert got.status == 200 and got.complete
    assert got.body == b"".join(openai_text(["replayed"]))
    assert [r.protocol for r in server.requests] == ["HTTP/2", "HTTP/1.1"]


# -- stream_options: the gateway adds none, so it drops none ----------------------------------

REFUSED = {
    "error": {
        "message": "Unrecognized request argument supplied: stream_options",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
}


def test_a_refused_stream_options_the_client_sent_is_relayed_not_dropped(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # The client asked for usage; resending without it would hand the client a stream
    # without what it asked for, as if the upstream had agreed. The refusal is the answer.
    upstream.push(json_reply(400, REFUSED), *[Reply(chunks=openai_text(["no"]))] * 3)
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = _ask(url)
    assert got.status == 400 and json.loads(got.body) == REFUSED
    assert len(upstream.requests) == 1
    assert upstream.requests[0].json()["stream_options"] == {"include_usage": True}


def test_a_refused_stream_options_on_a_resend_ends_the_stream_and_is_not_dropped(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # The first attempt is Empty after the head went out; the resend is refused. The client
    # gets the error event, and no request goes out without what the client asked for.
    upstream.push(Reply(chunks=[ROLE], end="close"), json_reply(400, REFUSED))
    upstream.push(*[Reply(chunks=openai_text(["no"]))] * 3)
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = _ask(url)
    assert got.status == 200 and got.complete and b"[DONE]" not in got.body
    assert "stream_options" in _last_error(got)
    assert len(upstream.requests) == 2
    assert all(r.json()["stream_options"] == {"include_usage": True} for r in upstream.requests)


# -- the content clock: keep-alives keep a connection open, not a turn ------------------------

PINGS: list[bytes | float] = [PING, 0.05] * 60  # 3 s of keep-alives and nothing else


def test_keep_alives_after_content_are_cut_by_content_idle(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # Every keep-alive arrives well inside the idle gap, so only the content clock can end
    # this: a server that pings without end must not hold a turn open forever.
    words = openai_text(["Hello"])
    upstream.push(Reply(chunks=[*words[:2], *PINGS, *words[2:]]))
    timeouts = Timeouts(first_byte=5.0, idle=2.0, content_idle=0.5)
    with running(upstream.url, tmp_path, timeouts=timeouts) as (url, gateway, _tee):
        got = _ask(url)
        metrics = gateway.metrics
    assert got.status == 200 and got.complete and b"[DONE]" not in got.body
    assert got.body.startswith(b"".join(words[:2]))
    assert "only keep-alives" in _last_error(got)
    assert len(upstream.requests) == 1  # content arrived: Partial, never resent
    outcome = {"provider": "openai", "outcome": "partial"}
    assert metrics.value("railings_gateway_streams_total", **outcome) == 1


def test_keep_alives_before_content_are_cut_by_first_byte_and_resent(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # Before content the content clock is first_byte's: pings alone are an Empty attempt.
    words = openai_text(["late"])
    upstream.push(Reply(chunks=[ROLE, *PINGS, *words[1:]]))
    upstream.push(Reply(chunks=openai_text(["resent"])))
    timeouts = Timeouts(first_byte=0.5, idle=2.0, content_idle=2.0)
    with running(upstream.url, tmp_path, timeouts=timeouts) as (url, _, _tee):
        got = _ask(url)
    assert len(upstream.requests) == 2
    assert got.body == b"".join(openai_text(["resent"]))  # only the resent stream


# -- the provider's own error before content: the machine decides ------------------------------


def test_a_final_chat_error_before_content_is_passed_on_once(
    upstream: CannedServer, tmp_path: Path
) -> None:
    error = b'data: {"error":{"message":"no","type":"invalid_request_error","code":null}}\n\n'
    upstream.push(Reply(chunks=[ROLE, error]), *[Reply(chunks=openai_text(["no"]))] * 3)
    with running(upstream.url, tmp_path) as (url, gateway, _tee):
        got = _ask(url)
        metrics = gateway.metrics
    assert got.body == ROLE + error  # as it came, once
    assert len(upstream.requests) == 1
    assert metrics.value("railings_gateway_streams_total", provider="openai", outcome="error") == 1


def test_a_retryable_chat_error_before_content_is_resent(
    upstream: CannedServer, tmp_path: Path
) -> None:
    error = b'data: {"error":{"message":"busy","type":"server_error","code":null}}\n\n'
    upstream.push(Reply(chunks=[ROLE, error]), Reply(chunks=openai_text(["again"])))
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = _ask(url)
    assert got.body == b"".join(openai_text(["again"]))
    assert len(upstream.requests) == 2
