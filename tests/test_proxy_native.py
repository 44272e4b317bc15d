"""The fault proxy on Gemini, Bedrock and Ollama streams: its faults act on each framing's
own events (SSE chunks, event-stream frames, NDJSON lines), checked on the bytes with
railings' own decoders and through the official clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import httpx2
import ollama
import pytest
from botocore.config import Config
from botocore.eventstream import ChecksumMismatch
from botocore.exceptions import ClientError, EventStreamError
from google import genai
from google.genai import errors as genai_errors

from railings.errors import MalformedStream
from railings.testing import FaultProxy, ScriptedServer
from railings.testing.frames import FrameSplitter, LineSplitter, framing_for
from railings.wire.eventstream import EventStreamDecoder

SCRIPT = {"seed": 3, "chunk_size": 4, "turns": [{"text": "The quick brown fox jumps."}]}
TEXT = "The quick brown fox jumps."
GEMINI_PATH = "/v1beta/models/g:streamGenerateContent?alt=sse"
BEDROCK_PATH = "/model/m/converse-stream"
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "Go."}]}]}
BEDROCK_BODY = {"messages": [{"role": "user", "content": [{"text": "Go."}]}]}
OLLAMA_BODY = {"model": "q", "messages": [{"role": "user", "content": "Go."}]}


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCRIPT) as srv:
        yield srv


def _raw(proxy: FaultProxy, path: str, body: Any, fault: str) -> bytes:
    """The body the client gets under ``fault`` (an incomplete chunked body kept)."""
    out = bytearray()
    with httpx2.stream(
        "POST", proxy.url + path, json=body, headers={"x-railings-fault": fault}
    ) as r:
        try:
            for data in r.iter_bytes():
                out += data
        except httpx2.RemoteProtocolError:
            pass
    return bytes(out)


def _frames(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    decoder = EventStreamDecoder()
    messages = decoder.feed(body) + decoder.close()
    return [(m.text_header(":event-type"), json.loads(m.payload)) for m in messages]


# -- the splitters ----------------------------------------------------------------------
def test_frame_splitter_cuts_whole_frames_whatever_the_reads(server: ScriptedServer) -> None:
    body = httpx2.post(server.url + BEDROCK_PATH, json=BEDROCK_BODY).content
    whole = FrameSplitter().feed(body)
    assert b"".join(whole) == body and len(whole) == len(_frames(body))
    splitter, pieces = FrameSplitter(), []
    for i in range(len(body)):
        pieces += splitter.feed(body[i : i + 1])
    assert pieces == whole and splitter.close() == b""


def test_line_splitter_keeps_an_unterminated_last_line() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b'{"a":1}\n{"b"') == [b'{"a":1}\n']
    assert splitter.feed(b":2}\n{") == [b'{"b":2}\n']
    assert splitter.close() == b"{"


def test_framing_follows_the_content_type() -> None:
    assert framing_for("application/vnd.amazon.eventstream").events == "event-stream frames"
    assert framing_for("application/x-ndjson").events == "NDJSON lines"
    assert framing_for("text/event-stream; charset=utf-8").events == "SSE events"
    assert framing_for("application/json") is None


# -- Bedrock: frames ------------------------------------------------------------------
def test_bedrock_events_are_frames(server: ScriptedServer) -> None:
    with FaultProxy(server.url) as proxy:
        clean = _frames(_raw(proxy, BEDROCK_PATH, BEDROCK_BODY, "none"))
        cut = _frames(_raw(proxy, BEDROCK_PATH, BEDROCK_BODY, "truncate:events=3"))
        dup = _frames(_raw(proxy, BEDROCK_PATH, BEDROCK_BODY, "duplicate:event=2"))
        log = proxy.log
    assert [k for k, _ in clean][-2:] == ["messageStop", "metadata"]
    assert cut == clean[:3]
    assert dup == [clean[0], clean[1], *clean[1:]]
    assert log[0].events_in == len(clean) and log[1].events_out == 3


def test_bedrock_drop_terminator_and_proof_alone(server: ScriptedServer) -> None:
    with FaultProxy(server.url) as proxy:
        dropped = _frames(_raw(proxy, BEDROCK_PATH, BEDROCK_BODY, "drop_terminator"))
        alone = _frames(_raw(proxy, BEDROCK_PATH, BEDROCK_BODY, "drop_terminator:rest=keep"))
    kinds = [k for k, _ in alone]
    assert "messageStop" not in kinds and kinds[-1] == "metadata"
    assert [k for k, _ in dropped] == kinds[:-1]


def test_bedrock_cut_mid_frame_is_malformed_for_railings(server: ScriptedServer) -> None:
    with FaultProxy(server.url) as proxy:
        body = _raw(proxy, BEDROCK_PATH, BEDROCK_BODY, "cut_mid_event:event=3")
    decoder = EventStreamDecoder()
    assert len(decoder.feed(body)) == 2
    with pytest.raises(MalformedStream):
        decoder.close()


@pytest.mark.parametrize("kind", ["crc", "prelude"])
def test_bedrock_corrupt_crc_is_malformed_for_railings(server: ScriptedServer, kind: str) -> None:
    with FaultProxy(server.url) as proxy:
        body = _raw(proxy, BEDROCK_PATH, BEDROCK_BODY, f"corrupt:event=2,kind={kind}")
    decoder = EventStreamDecoder()
    assert decoder.feed(body)  # the frames before the corrupt one come out, then its error
    with pytest.raises(MalformedStream):
        decoder.close()


def test_bedrock_corrupt_json_keeps_valid_crcs(server: ScriptedServer) -> None:
    with FaultProxy(server.url) as proxy:
        body = _raw(proxy, BEDROCK_PATH, BEDROCK_BODY, "corrupt:event=2,kind=json")
    messages = EventStreamDecoder().feed(body)  # the frames are sound: only the JSON is not
    with pytest.raises(ValueError):
        json.loads(messages[1].payload)


def _boto3(url: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret",
        config=Config(retries={"max_attempts": 1}),
    )


def _boto3_stream(url: str, fault: str) -> list[dict[str, Any]]:
    client = _boto3(url)
    client.meta.events.register(
        "before-send.bedrock-runtime.*",
        lambda request, **_: request.headers.__setitem__("x-railings-fault", fault),
    )
    # The stream and the client are closed here: a stream boto3 raised out of keeps its
    # socket (urllib3's, read through a file object) open, and an unclosed one would
    # warn in whichever later test the collector ran.
    try:
        stream = client.converse_stream(modelId="m", messages=BEDROCK_BODY["messages"])["stream"]
        try:
            return list(stream)
        finally:
            stream.close()
    finally:
        client.close()


def test_boto3_through_the_proxy(server: ScriptedServer) -> None:
    """What boto3 does with each frame-level fault (measured, as docs/matrix.md says)."""
    with FaultProxy(server.url) as proxy:
        clean = _boto3_stream(proxy.url, "none")
        # No messageStop: boto3 ends the iteration without a word.
        dropped = _boto3_stream(proxy.url, "drop_terminator")
        # Half a frame, then a clean end: boto3 drops the half frame without a word.
        cut = _boto3_stream(proxy.url, "cut_mid_event:event=3")
        with pytest.raises(ChecksumMismatch):
            _boto3_stream(proxy.url, "corrupt:event=2,kind=crc")
        with pytest.raises(EventStreamError) as caught:
            _boto3_stream(proxy.url, "error_event:events=2,type=rate_limit_error")
        with pytest.raises(ClientError) as status:
            _boto3_stream(proxy.url, "status:code=429")
    assert "messageStop" in clean[-2] and not any("messageStop" in e for e in dropped)
    assert len(cut) == 2 and cut == clean[:2]
    assert caught.value.response["Error"]["Code"] == "throttlingException"
    assert status.value.response["Error"]["Code"] == "ThrottlingException"


# -- Gemini: SSE chunks ---------------------------------------------------------------
def test_gemini_drop_terminator_drops_the_finish_chunk(server: ScriptedServer) -> None:
    with FaultProxy(server.url) as proxy:
        clean = _raw(proxy, GEMINI_PATH, GEMINI_BODY, "none")
        dropped = _raw(proxy, GEMINI_PATH, GEMINI_BODY, "drop_terminator")

    def texts(body: bytes) -> list[str]:
        chunks = [json.loads(line[5:]) for line in body.splitlines() if line.startswith(b"data:")]
        return [c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks]

    assert clean.count(b"finishReason") == 1 and b"finishReason" not in dropped
    assert texts(dropped) == texts(clean)[:-1]


def test_google_genai_through_the_proxy(server: ScriptedServer) -> None:
    with FaultProxy(server.url) as proxy:
        # Each client is closed here: a stream the SDK raised out of leaves its socket open
        # until then, and an unclosed one would warn in whichever test the collector ran.
        with genai.Client(
            api_key="k",
            http_options={
                "base_url": proxy.url,
                "headers": {"x-railings-fault": "drop_terminator"},
            },
        ) as client:
            chunks = list(client.models.generate_content_stream(model="g", contents="Go."))
        with (
            genai.Client(
                api_key="k",
                http_options={
                    "base_url": proxy.url,
                    "headers": {"x-railings-fault": "error_event"},
                },
            ) as erring,
            pytest.raises(genai_errors.ServerError) as caught,
        ):
            list(erring.models.generate_content_stream(model="g", contents="Go."))
    # No finishReason anywhere, and no error: the stream just ends.
    assert all(c.candidates[0].finish_reason is None for c in chunks)
    assert "".join(c.text or "" for c in chunks) == TEXT[: len(chunks) * 4]
    assert caught.value.code == 503 and caught.value.status == "UNAVAILABLE"


# -- Ollama: NDJSON lines -------------------------------------------------------------
def test_ollama_events_are_lines(server: ScriptedServer) -> None:
    with FaultProxy(server.url) as proxy:
        clean = _raw(proxy, "/api/chat", OLLAMA_BODY, "none").splitlines(keepends=True)
        cut = _raw(proxy, "/api/chat", OLLAMA_BODY, "truncate:events=2")
        half = _raw(proxy, "/api/chat", OLLAMA_BODY, "cut_mid_event:event=2")
        dropped = _raw(proxy, "/api/chat", OLLAMA_BODY, "drop_terminator")
        bad = _raw(proxy, "/api/chat", OLLAMA_BODY, "corrupt:event=2,kind=json")
    assert json.loads(clean[-1])["done"] is True
    assert cut == b"".join(clean[:2])
    assert half == clean[0] + clean[1][: len(clean[1]) // 2]
    assert dropped == b"".join(clean[:-1])
    lines = bad.splitlines()
    assert len(lines) == len(clean)
    with pytest.raises(ValueError):
        json.loads(lines[1])


def test_ollama_client_through_the_proxy(server: ScriptedServer) -> None:
    with FaultProxy(server.url) as proxy:
        dropped = list(
            ollama.Client(host=proxy.url, headers={"x-railings-fault": "drop_terminator"}).chat(
                model="q", messages=OLLAMA_BODY["messages"], stream=True
            )
        )
        with pytest.raises(ollama.ResponseError) as caught:
            list(
                ollama.Client(host=proxy.url, headers={"x-railings-fault": "error_event"}).chat(
                    model="q", messages=OLLAMA_BODY["messages"], stream=True
                )
            )
    # No done line: the client's iteration simply ends.
    assert dropped and not any(p.done for p in dropped)
    assert "server busy" in caught.value.error


# -- railings' reader on what the proxy sent --------------------------------------------
def _read(provider: str, body: bytes) -> tuple[str, str | None]:
    """The turn's outcome and its error kind (a raised error's class name instead)."""
    from railings.errors import RailingsError
    from railings.turn.reader import StreamReader

    reader = StreamReader(provider, max_tokens=1000)
    try:
        reader.feed(body)
        reader.close()
    except RailingsError as exc:
        return "raised", type(exc).__name__
    turn = reader.turn()
    return turn.outcome.value, turn.error.kind.value if turn.error else None


WIRES = [
    ("gemini", GEMINI_PATH, GEMINI_BODY),
    ("bedrock", BEDROCK_PATH, BEDROCK_BODY),
    ("ollama", "/api/chat", OLLAMA_BODY),
]


@pytest.mark.parametrize(("provider", "path", "body"), WIRES, ids=[w[0] for w in WIRES])
def test_railings_reader_through_the_proxy(
    server: ScriptedServer, provider: str, path: str, body: Any
) -> None:
    with FaultProxy(server.url) as proxy:
        seen = {
            fault: _read(provider, _raw(proxy, path, body, fault))
            for fault in (
                "none",
                "drop_terminator",
                "truncate:events=3",
                "duplicate:event=2",
                "corrupt:event=3,kind=json",
                "error_event:events=2",
            )
        }
    assert seen["none"] == ("complete", None)
    assert seen["drop_terminator"][0] == "partial"
    assert seen["truncate:events=3"][0] == "partial"
    assert seen["duplicate:event=2"] == ("complete", None)  # no wire here numbers its events
    assert seen["corrupt:event=3,kind=json"] in (
        ("partial", "malformed_stream"),
        ("raised", "MalformedStream"),
    )
    assert seen["error_event:events=2"] == ("partial", "provider_error")


def test_railings_reader_on_the_frame_faults(server: ScriptedServer) -> None:
    with FaultProxy(server.url) as proxy:
        alone = _read(
            "bedrock", _raw(proxy, BEDROCK_PATH, BEDROCK_BODY, "drop_terminator:rest=keep")
        )
        half = _read("bedrock", _raw(proxy, BEDROCK_PATH, BEDROCK_BODY, "cut_mid_event:event=3"))
        crc = _read("bedrock", _raw(proxy, BEDROCK_PATH, BEDROCK_BODY, "corrupt:event=3,kind=crc"))
        line = _read("ollama", _raw(proxy, "/api/chat", OLLAMA_BODY, "cut_mid_event:event=3"))
    assert alone[0] == "partial"  # metadata (usage) after no messageStop is no proof
    assert half in (("partial", "malformed_stream"), ("raised", "MalformedStream"))
    # Not complete, and malformed (whether the delta before the bad frame counts as content
    # depends on the reads here: the whole body is fed at once).
    assert crc[0] != "complete" and crc[1] in ("malformed_stream", "MalformedStream")
    assert line[0] == "partial"
