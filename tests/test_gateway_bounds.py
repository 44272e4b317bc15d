"""The gateway's bounds against its own clients and its upstream, each attacked for real:
a compressed answer that inflates without end, an answer in a coding the judge cannot
read, request bodies past the limit, clients that stall mid-body, and many clients
whose buffered bodies together pass the process-wide cap."""

from __future__ import annotations

import gzip
import json
import time
import zlib
from pathlib import Path

import pytest

from _server import CannedServer, Reply
from railings.errors import ConfigurationError
from railings.gateway.client_side import MAX_PARSED_VALUES, RequestFacts, request_facts
from railings.gateway.limits import Limits
from tests.gateway_kit import PATHS, body, headers, running
from tests.gateway_upstreams import answer_of, send_part

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "forty-two"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
}
REJECTED = "railings_gateway_rejected_requests_total"
REFUSED = "railings_gateway_refused_answers_total"


def _json(status: int, data: bytes, *extra: tuple[str, str]) -> Reply:
    return Reply(status, [data], (("content-type", "application/json"), *extra))


def _ask(url: str, provider: str = "openai") -> tuple[int, dict[str, str], bytes]:
    import httpx2

    with httpx2.Client(timeout=60) as client:
        got = client.post(
            url + PATHS[provider],
            json=body(provider, stream=False),
            headers={**headers(provider), "accept-encoding": "identity"},
        )
        return got.status_code, dict(got.headers), got.content


# -- the non-streamed answer ----------------------------------------------------------------


def test_a_gzip_json_answer_is_judged_and_forwarded_decoded_with_its_length(
    tmp_path: Path,
) -> None:
    plain = json.dumps(COMPLETION).encode()
    with CannedServer() as upstream, running(upstream.url, tmp_path) as (url, gateway, _):
        upstream.push(_json(200, gzip.compress(plain), ("content-encoding", "gzip")))
        status, got, data = _ask(url)
        metrics = gateway.metrics
    assert status == 200 and data == plain
    assert "content-encoding" not in got  # labelled as what it is: decoded
    assert got["content-length"] == str(len(plain))
    answers = "railings_gateway_answers_total"
    assert metrics.value(answers, provider="openai", outcome="complete") == 1


def test_a_compressed_answer_that_inflates_past_the_bound_is_a_502_never_a_half_body(
    tmp_path: Path,
) -> None:
    # About 40 KB on the wire, 40 MiB inflated: past the default bound (32 MiB).
    bomb = zlib.compress(b'{"x": "' + b"a" * (40 * 2**20) + b'"}', 9)
    with CannedServer() as upstream, running(upstream.url, tmp_path) as (url, gateway, _):
        upstream.push(_json(200, bomb, ("content-encoding", "deflate")))
        status, got, data = _ask(url)
        metrics = gateway.metrics
    assert len(bomb) < 100_000
    assert status == 502 and got["x-should-retry"] == "false"
    error = json.loads(data)["error"]  # the provider's own error shape
    assert "larger than" in error["message"]
    assert metrics.value(REFUSED, provider="openai", reason="too_large") == 1


def test_an_answer_past_a_configured_bound_is_refused_also_uncompressed(tmp_path: Path) -> None:
    big = json.dumps({**COMPLETION, "pad": "x" * 200_000}).encode()
    limits = Limits(max_answer=100_000)
    with (
        CannedServer() as upstream,
        running(upstream.url, tmp_path, limits=limits) as (url, _, _),
    ):
        upstream.push(_json(200, big))
        status, got, data = _ask(url, "openai")
    assert status == 502 and got["x-should-retry"] == "false"
    assert "100000 bytes" in json.loads(data)["error"]["message"]


def test_a_coding_the_judge_cannot_read_is_a_502_in_the_providers_shape(tmp_path: Path) -> None:
    with CannedServer() as upstream, running(upstream.url, tmp_path) as (url, gateway, _):
        upstream.push(_json(200, b"\x1b\x00\xf8\xff not brotli", ("content-encoding", "br")))
        upstream.push(_json(200, b"\x1f\x8b broken gzip", ("content-encoding", "gzip")))
        answers = [_ask(url, "anthropic"), _ask(url, "anthropic")]
        metrics = gateway.metrics
    for status, got, data in answers:
        assert status == 502 and got["x-should-retry"] == "false"
        assert json.loads(data)["type"] == "error"  # Anthropic's shape
    assert metrics.value(REFUSED, provider="anthropic", reason="unreadable") == 2


def test_an_answer_the_upstream_broke_off_is_a_502_that_says_not_to_retry(tmp_path: Path) -> None:
    json_type = (("content-type", "application/json"),)
    with CannedServer() as upstream, running(upstream.url, tmp_path) as (url, _, _):
        upstream.push(Reply(200, [b'{"id": "chatcmpl-1", "choi'], json_type, end="reset"))
        status, got, data = _ask(url)
        sent = len(upstream.requests)
    assert status == 502 and got["x-should-retry"] == "false"  # produced and billed: once
    assert json.loads(data)["error"]["code"] == "stream_interrupted"
    assert sent == 1


# -- request bodies -------------------------------------------------------------------------


def test_a_body_past_the_limit_is_a_413_in_the_providers_shape(tmp_path: Path) -> None:
    with CannedServer() as upstream, running(upstream.url, tmp_path) as (url, gateway, _):
        # Announced past the default 64 MiB: refused before a byte of it is read.
        sock = send_part(url, PATHS["openai"], 64 * 2**20 + 1, b"{", headers("openai"))
        got = answer_of(sock)
        metrics = gateway.metrics
        assert upstream.requests == []
    assert got.status == 413 and got.headers["x-should-retry"] == "false"
    assert "64 MiB" in json.loads(got.body)["error"]["message"]
    assert metrics.value(REJECTED, reason="too_large") == 1


def test_a_body_that_grows_past_the_limit_without_announcing_it_is_a_413(tmp_path: Path) -> None:
    limits = Limits(max_request_body=1000)
    payload = json.dumps({**body("anthropic"), "pad": "x" * 5000}).encode()
    with (
        CannedServer() as upstream,
        running(upstream.url, tmp_path, limits=limits) as (url, gateway, _),
    ):
        import httpx2

        def chunks():  # chunked: no content-length to refuse it by
            yield payload[:600]
            yield payload[600:]

        got = httpx2.post(url + PATHS["anthropic"], content=chunks(), headers=headers("anthropic"))
        metrics = gateway.metrics
        assert upstream.requests == []
    assert got.status_code == 413 and got.json()["type"] == "error"
    assert metrics.value(REJECTED, reason="too_large") == 1


def test_ten_clients_that_stall_mid_body_get_408_and_release_what_they_held(
    tmp_path: Path,
) -> None:
    limits = Limits(body_timeout=0.2)
    with (
        CannedServer() as upstream,
        running(upstream.url, tmp_path, limits=limits) as (url, gateway, _),
    ):
        stalled = [
            send_part(url, PATHS["openai"], 10_000_000, b"{" + b" " * 100_000, headers("openai"))
            for _ in range(10)
        ]  # each announces 10 MB, sends 100 KB and then nothing, ever
        got = [answer_of(sock) for sock in stalled]
        held = gateway.buffered
        metrics = gateway.metrics
        assert upstream.requests == []
    assert [g.status for g in got] == [408] * 10
    assert all(g.headers["connection"] == "close" for g in got)
    assert held == 0
    assert metrics.value(REJECTED, reason="body_timeout") == 10


def test_bodies_buffered_across_clients_past_the_cap_are_refused_503_with_retry_after(
    tmp_path: Path,
) -> None:
    limits = Limits(max_buffered=256 * 1024, max_request_body=2**20, body_timeout=600)
    with (
        CannedServer() as upstream,
        running(upstream.url, tmp_path, limits=limits) as (url, gateway, _),
    ):
        upstream.push(_json(200, json.dumps(COMPLETION).encode()))
        hog = send_part(url, PATHS["openai"], 2**20, b"{" + b" " * 200_000, headers("openai"))
        guard = time.monotonic() + 30  # only against a hang: the loop waits for bytes
        while gateway.buffered < 200_000 and time.monotonic() < guard:
            time.sleep(0.01)
        ask = json.dumps({**body("openai", stream=False), "pad": "y" * 100_000}).encode()
        refused = answer_of(send_part(url, PATHS["openai"], len(ask), ask, headers("openai")))
        hog.close()  # the hog leaves: what it held is released
        while gateway.buffered and time.monotonic() < guard:
            time.sleep(0.01)
        passed = answer_of(send_part(url, PATHS["openai"], len(ask), ask, headers("openai")))
        metrics = gateway.metrics
    assert refused.status == 503
    assert refused.headers["retry-after"] == "1" and refused.headers["x-should-retry"] == "true"
    assert "overloaded" in json.loads(refused.body)["error"]["message"]
    assert passed.status == 200
    assert len(upstream.requests) == 1  # only the one that fitted went upstream
    assert metrics.value(REJECTED, reason="overloaded") == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"max_request_body": 0},
        {"max_buffered": -1},
        {"max_answer": 0},
        {"body_timeout": 0.0},
        {"min_body_rate": -1},
    ],
)
def test_a_bound_that_bounds_nothing_is_a_configuration_error(bad: dict[str, float]) -> None:
    with pytest.raises(ConfigurationError):
        Limits(**bad)  # type: ignore[arg-type]


# -- what the gateway reads of a request body: one bounded parse ---------------------------------


def test_the_facts_of_a_request_body_are_read_in_one_parse() -> None:
    data = {"model": "m", "stream": True, "n": 3, "max_tokens": 50, "max_completion_tokens": 9}
    data["messages"] = [{"role": "user", "content": "hello"}]
    facts = request_facts(json.dumps(data).encode())
    assert facts == RequestFacts(
        model="m", max_tokens=9, stream=True, choices=3, read=True, request_chars=1 + 4 + 5
    )


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b"\xff\xfe",
        b"[" * 100_000 + b"]" * 100_000,  # deeper than the decoder recurses
        b'{"model": "m", "x": [' + b"0," * MAX_PARSED_VALUES + b"0]}",  # too many values
    ],
    ids=["empty", "not json", "not an object", "not utf-8", "deep", "too many values"],
)
def test_a_body_the_gateway_does_not_parse_is_unread_not_an_error(raw: bytes) -> None:
    assert request_facts(raw) == RequestFacts()


@pytest.mark.parametrize("value", ["true", '"true"', "1", "null"])
def test_only_a_json_true_asks_for_a_stream(value: str) -> None:
    facts = request_facts(b'{"model": "m", "stream": ' + value.encode() + b"}")
    assert facts.stream is (value == "true")
