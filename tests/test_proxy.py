"""The fault proxy, at the byte level: each fault does exactly what it says.

The upstream here is a canned server that replays two real captures from the
corpus byte for byte (one SSE event per HTTP chunk), so every
expectation is an exact byte string built from the capture itself.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import capture
from railings.errors import ConfigurationError
from railings.testing import FAULTS, Fault, FaultProxy
from railings.testing.faults import Corrupt, Status, Truncate
from railings.testing.http import LAST_CHUNK, encode_chunk, read_request, render_head
from railings.testing.raw import RawResponse, raw_request
from railings.testing.service import Service

OPENAI = capture("openai/parallel_tool_calls_usage_chunk.sse")
ANTHROPIC = capture("anthropic/tool_use_input_json_delta.sse")
SMALL = capture("openai/length_finish_after_one_token.sse")
JSON_BODY = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "choices": []}).encode()


def events_of(body: bytes) -> list[bytes]:
    parts = body.split(b"\n\n")
    return [p + b"\n\n" for p in parts[:-1]]


class Canned(Service):
    """Serves a capture as an event stream, one event per chunk; records what it received."""

    def __init__(self) -> None:
        super().__init__()
        self.hits: list[dict[str, str]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        self.hits.append(request.headers.as_dict())
        if request.path == "/v1/json":
            writer.write(
                render_head(
                    200,
                    [
                        ("content-type", "application/json"),
                        ("content-length", str(len(JSON_BODY))),
                        ("connection", "close"),
                    ],
                )
                + JSON_BODY
            )
            await writer.drain()
            return
        body = (
            ANTHROPIC
            if request.path.endswith("/messages")
            else SMALL
            if request.path.endswith("/small")
            else OPENAI
        )
        writer.write(
            render_head(
                200,
                [
                    ("content-type", "text/event-stream; charset=utf-8"),
                    ("transfer-encoding", "chunked"),
                    ("connection", "close"),
                ],
            )
        )
        if request.path.endswith("/broken"):  # two events, then dies inside a chunk
            writer.write(b"".join(map(encode_chunk, OA[:2])) + b"64\r\n" + OA[2][:40])
            await writer.drain()
            return
        if request.path.endswith("/big"):  # one event in one chunk of 200 KB, in two writes
            writer.write(b"%x\r\n" % len(BIG) + BIG[:1000])
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(BIG[1000:] + b"\r\n" + LAST_CHUNK)
            await writer.drain()
            return
        for piece in PIECES if request.path.endswith("/pieces") else events_of(body):
            writer.write(encode_chunk(piece))
            await writer.drain()
        writer.write(LAST_CHUNK)
        await writer.drain()


@pytest.fixture(scope="module")
def upstream() -> Iterator[Canned]:
    with Canned() as canned:
        yield canned


@pytest.fixture(scope="module")
def proxy(upstream: Canned) -> Iterator[FaultProxy]:
    with FaultProxy(upstream.url) as p:
        yield p


def via(proxy: FaultProxy, spec: str | None, path: str = "/v1/chat/completions") -> RawResponse:
    headers = {"x-railings-fault": spec} if spec else {}
    return raw_request(proxy.url, path, {"model": "m", "stream": True}, headers=headers)


OA, AN = events_of(OPENAI), events_of(ANTHROPIC)
PIECES = [OPENAI[i : i + 97] for i in range(0, len(OPENAI), 97)]  # chunks across events
BIG = b"data: " + b"x" * 200_000 + b"\n\n"


def test_passthrough_is_byte_exact(proxy: FaultProxy, upstream: Canned) -> None:
    for path, body in (("/v1/chat/completions", OPENAI), ("/v1/messages", ANTHROPIC)):
        resp = via(proxy, None, path)
        assert resp.status == 200 and resp.complete and resp.body == body
        assert resp.chunks == events_of(body)  # the upstream's chunks: one event each
    record = proxy.log[-1]
    assert (record.events_in, record.events_out) == (len(AN), len(AN))
    assert record.bytes_in == record.bytes_out == len(ANTHROPIC) and record.fault is None
    assert "x-railings-fault" not in upstream.hits[-1]
    assert upstream.hits[-1]["accept-encoding"] == "identity"


def test_passthrough_keeps_the_upstream_framing(proxy: FaultProxy) -> None:
    resp = via(proxy, None, "/v1/pieces")
    assert resp.chunks == PIECES and resp.complete  # chunks that cut events stay as they came
    record = proxy.log[-1]
    assert (record.events_in, record.events_out) == (len(OA), len(OA))
    faulted = via(proxy, "reorder:event=2", "/v1/pieces")
    assert faulted.chunks == [OA[0], OA[2], OA[1], *OA[3:]]  # a fault re-frames per event


def test_a_chunk_larger_than_a_read_streams_through(proxy: FaultProxy) -> None:
    resp = via(proxy, None, "/v1/big")
    assert resp.body == BIG and resp.complete
    assert resp.chunks[0] == BIG[:1000]  # what arrived before the pause was not held back
    assert (proxy.log[-1].events_in, proxy.log[-1].events_out) == (1, 1)


@pytest.mark.parametrize("spec", [None, "duplicate:event=1"])
def test_a_broken_upstream_loses_nothing_it_sent(proxy: FaultProxy, spec: str | None) -> None:
    resp = via(proxy, spec, "/v1/broken")
    sent = [OA[0], *([OA[0]] if spec else []), OA[1]]
    assert resp.body == b"".join(sent) + OA[2][:40] and not resp.complete
    assert proxy.log[-1].error == "HTTPFault: chunked body ended inside a chunk"


def test_truncate_events(proxy: FaultProxy) -> None:
    resp = via(proxy, "truncate:events=3")
    assert resp.body == b"".join(OA[:3]) and resp.complete  # clean HTTP end, no [DONE]
    assert resp.headers["x-railings-fault"] == "truncate:events=3"
    abrupt = via(proxy, "truncate:events=3,end=abrupt")
    assert abrupt.body == b"".join(OA[:3]) and not abrupt.complete and not abrupt.reset
    record = proxy.log[-1]
    assert record.events_out == 3 and record.action == "cut after 3 events (abrupt end)"


def test_truncate_bytes(proxy: FaultProxy) -> None:
    resp = via(proxy, "truncate:bytes=100")
    assert resp.body == OPENAI[:100] and resp.complete
    assert proxy.log[-1].bytes_out == 100


def test_truncate_bytes_on_a_plain_body(proxy: FaultProxy) -> None:
    resp = raw_request(proxy.url, "/v1/json", {}, headers={"x-railings-fault": "truncate:bytes=10"})
    assert resp.headers["content-length"] == str(len(JSON_BODY))
    assert resp.body == JSON_BODY[:10] and not resp.complete
    full = raw_request(proxy.url, "/v1/json", {}, headers={"x-railings-fault": "reorder"})
    assert full.body == JSON_BODY and full.complete
    assert proxy.log[-1].action == "passed through (reorder needs an event stream)"


def test_drop_terminator(proxy: FaultProxy) -> None:
    resp = via(proxy, "drop_terminator")
    assert OA[-1] == b"data: [DONE]\n\n"
    assert resp.body == b"".join(OA[:-1]) and resp.complete
    resp = via(proxy, "drop_terminator", "/v1/messages")
    assert AN[-1].startswith(b"event: message_stop\n")
    assert resp.body == b"".join(AN[:-1]) and resp.complete


def test_idle(proxy: FaultProxy) -> None:
    resp = via(proxy, "idle:events=2,seconds=0.4")
    assert resp.body == OPENAI and resp.complete  # the stall ends and the rest follows
    cumulative, times = 0, []
    for t, data in resp.reads:
        cumulative += len(data)
        times.append((t, cumulative))
    head = resp.head_size
    two = len(encode_chunk(OA[0])) + len(encode_chunk(OA[1]))
    before = max(t for t, n in times if n <= head + two)
    after = min(t for t, n in times if n > head + two)
    assert after - before >= 0.35


def test_reorder(proxy: FaultProxy) -> None:
    resp = via(proxy, "reorder:event=2")
    assert resp.chunks == [OA[0], OA[2], OA[1], *OA[3:]]


def test_duplicate(proxy: FaultProxy) -> None:
    resp = via(proxy, "duplicate:event=2,count=2")
    assert resp.chunks == [OA[0], OA[1], OA[1], OA[1], *OA[2:]]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/pieces"])
def test_a_fault_late_in_the_stream_acts_on_its_own_event(proxy: FaultProxy, path: str) -> None:
    # The events before the fault's pass in one step, read by read: the fault still acts
    # on event k exactly, whichever read brings it.
    k = len(OA) - 2
    assert via(proxy, f"duplicate:event={k}", path).chunks == [*OA[:k], OA[k - 1], *OA[k:]]
    assert (proxy.log[-1].events_in, proxy.log[-1].events_out) == (len(OA), len(OA) + 1)
    assert via(proxy, f"reorder:event={k}", path).chunks == [
        *OA[: k - 1],
        OA[k],
        OA[k - 1],
        *OA[k + 1 :],
    ]
    assert via(proxy, f"truncate:events={k}", path).chunks == OA[:k]
    assert via(proxy, f"corrupt:event={k}", path).chunks[: k - 1] == OA[: k - 1]


def test_reset(proxy: FaultProxy) -> None:
    resp = via(proxy, "reset:events=3")
    assert resp.reset and not resp.complete
    assert b"".join(OA[:3]).startswith(resp.body)  # a RST may discard unread bytes
    record = proxy.log[-1]
    assert record.events_out == 3 and record.action == "reset after 3 events"


def test_close_after_terminator(proxy: FaultProxy) -> None:
    resp = via(proxy, "close_after_terminator")
    assert resp.body == OPENAI  # the whole stream, [DONE] included
    assert not resp.complete and not resp.reset  # but no 0-chunk: a FIN, mid-message
    assert not resp.wire.endswith(LAST_CHUNK)


def test_drip(proxy: FaultProxy) -> None:
    resp = via(proxy, "drip:delay=0", "/v1/small")
    assert resp.body == SMALL and resp.complete
    assert {len(c) for c in resp.chunks} == {1} and len(resp.chunks) == len(SMALL)
    slow = via(proxy, "drip:delay=0.002,size=16", "/v1/small")
    assert slow.body == SMALL and max(len(c) for c in slow.chunks) <= 16
    assert slow.reads[-1][0] - slow.reads[0][0] >= 0.002 * (len(SMALL) // 16) * 0.5


def test_status(proxy: FaultProxy, upstream: Canned) -> None:
    hits = len(upstream.hits)
    resp = via(proxy, "status:code=529,retry_after=2", "/v1/messages")
    assert resp.status == 529 and resp.complete and resp.headers["retry-after"] == "2"
    body = json.loads(resp.body)
    assert body["type"] == "error" and body["error"]["type"] == "overloaded_error"
    assert body["request_id"] == resp.headers["request-id"]
    resp = via(proxy, "status:429,retry_after_ms=1500")
    assert resp.status == 429 and resp.headers["retry-after-ms"] == "1500"
    assert "retry-after" not in resp.headers
    error = json.loads(resp.body)["error"]
    assert error["code"] == "rate_limit_exceeded"
    assert error["message"].endswith("try again in 1500ms.")  # the wait the header gives
    resp = via(proxy, "status:429,retry_after=2")
    assert resp.headers["retry-after"] == "2"
    assert json.loads(resp.body)["error"]["message"].endswith("try again in 2s.")
    assert len(upstream.hits) == hits  # answered before contacting the upstream


def test_error_event(proxy: FaultProxy) -> None:
    resp = via(proxy, "error_event:events=4", "/v1/messages")
    *kept, error = events_of(resp.body)
    assert kept == AN[:4] and resp.complete
    assert error.startswith(b"event: error\ndata: ")
    payload = json.loads(error.split(b"data: ", 1)[1])
    assert payload["type"] == "error" and payload["error"]["type"] == "overloaded_error"
    resp = via(proxy, "error_event:events=2")
    *kept, error = events_of(resp.body)
    assert kept == OA[:2]
    assert json.loads(error.removeprefix(b"data: "))["error"]["type"] == "server_error"


def test_corrupt(proxy: FaultProxy) -> None:
    resp = via(proxy, "corrupt:event=3,kind=json")
    assert resp.chunks[:2] == OA[:2] and resp.chunks[3:] == OA[3:]
    broken = resp.chunks[2]
    with pytest.raises(ValueError):
        json.loads(broken.removeprefix(b"data: "))
    assert OA[2].startswith(broken.rstrip(b"\n"))
    resp = via(proxy, "corrupt:event=3,kind=utf8", "/v1/messages")
    assert resp.chunks[:2] == AN[:2] and resp.chunks[3:] == AN[3:]
    assert b"\xff\xfe" in resp.chunks[2] and resp.chunks[2].replace(b"\xff\xfe", b"") == AN[2]
    with pytest.raises(UnicodeDecodeError):
        resp.chunks[2].decode("utf-8")


def test_default_fault_header_override_and_times(upstream: Canned) -> None:
    with FaultProxy(upstream.url, fault="status:code=503,times=1") as p:
        assert via(p, None).status == 503
        assert via(p, None).body == OPENAI  # times=1: used up
        assert via(p, "truncate:events=1").body == OA[0]
        assert via(p, "none").body == OPENAI
        bad = via(p, "explode")
        assert bad.status == 400 and "unknown fault" in json.loads(bad.body)["error"]["message"]
        assert [r.source for r in p.log] == ["default", None, "header", None, None]
        assert all(r.done for r in p.log)


def test_unreachable_upstream() -> None:
    with Canned() as gone:
        url = gone.url
    with FaultProxy(url) as p:
        resp = via(p, None, "/v1/messages")
    assert resp.status == 502 and json.loads(resp.body)["type"] == "error"


def test_fault_spec_parsing() -> None:
    assert Fault.parse("truncate") == Truncate(events=3)
    assert Fault.parse("truncate:bytes=10,end=abrupt") == Truncate(bytes=10, end="abrupt")
    assert Fault.parse("status:529") == Status(code=529)
    assert Fault.parse("corrupt:kind=utf8").spec == "corrupt:kind=utf8"
    assert Fault.parse(Fault.parse("drop-terminator").spec).name == "drop_terminator"
    for bad in (
        "nope",
        "truncate:events=x",
        "truncate:events=1,bytes=2",
        "corrupt:kind=zip",
        "status:code=1000",
        "idle:hours=1",
        "reorder:2,3",
    ):
        with pytest.raises(ConfigurationError):
            Fault.parse(bad)
    assert isinstance(Fault.parse("corrupt"), Corrupt)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("status:code=200", "an HTTP error status, 400-599"),  # a success is not a fault
        ("status:code=302", "an HTTP error status, 400-599"),
        ("idle:seconds=-5", "expected a number >= 0, got '-5'"),  # refused like events=-1
        ("truncate:events=-1", "expected a whole number >= 0, got '-1'"),
        ("idle:seconds=inf", "expected a number >= 0, got 'inf'"),
        ("drip:size=0x10", "expected a whole number >= 0, got '0x10'"),
        ("reset:events=1_0", "expected a whole number >= 0, got '1_0'"),
        ("truncate:events", "expected key=value, got 'events'"),  # a parameter, not a value
    ],
)
def test_a_bad_fault_spec_says_what_is_wrong(spec: str, says: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        Fault.parse(spec)
    assert says in str(raised.value)


def test_every_documented_fault_spec_parses() -> None:
    """The fault table of docs/test-kit.md and `railings proxy --help` name real parameters."""
    from railings.cli.kit import PROXY_HELP

    readme = (Path(__file__).resolve().parents[1] / "docs" / "test-kit.md").read_text()
    table = readme.split("| fault | what it does |", 1)[1].split("\n\n", 1)[0]
    first_column = " ".join(row.split("|")[1] for row in table.splitlines()[2:])
    names = set(re.findall(r"`([a-z_]+)(?=[:`])", first_column))
    assert names == FAULTS.keys() - {"none"}
    spec_re = r"\b[a-z_]+:[a-z_]+=[^`\s]+"
    specs = re.findall(spec_re, table) + re.findall(spec_re, PROXY_HELP)
    assert len(specs) >= 10
    for spec in specs:
        concrete = re.sub(r"=[NKS]\b", "=1", spec.replace("json\\|utf8", "json"))
        assert Fault.parse(concrete).name == spec.partition(":")[0], spec
