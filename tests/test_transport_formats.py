"""The client on Gemini, Bedrock ConverseStream and Ollama: the real captures of
tests/corpus/{gemini,bedrock,ollama} served by a real HTTP server on 127.0.0.1
(tests/_server.py), whole and cut, with the transport's rules unchanged -- Complete,
Partial kept and never resent, Empty resent, the error maps, the idle clock, the
received-bytes cap, keys never in an error."""

from __future__ import annotations

import asyncio
import csv
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from _server import CannedServer, Reply
from railings.errors import (
    AuthenticationError,
    BadRequest,
    ConfigurationError,
    IdleTimeout,
    MalformedStream,
    MissingDependency,
    Overloaded,
    RateLimited,
    StreamInterrupted,
    TurnTooLarge,
)
from railings.events import StreamEvent
from railings.limits import TurnLimits
from railings.messages import System, User
from railings.providers import spec
from railings.testing.eventstream import event_frame, exception_frame
from railings.transport import (
    FALLBACK,
    AsyncProviderClient,
    ClientConfig,
    ClientContext,
    RetryPolicy,
    Timeouts,
    TurnStream,
    no_waits,
)
from railings.turn.model import Outcome

CORPUS = Path(__file__).parent / "corpus"
FORMATS = ("gemini", "bedrock", "ollama")
FAST = Timeouts(connect=2.0, first_byte=5.0, idle=5.0)
KEY = "test-key-0123456789abcdef"


def _manifest(provider: str) -> list[dict[str, str]]:
    with (CORPUS / provider / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


# Every capture of the three formats that ends with its proof.
PROVEN = [
    pytest.param(provider, row, id=f"{provider}/{row['file']}")
    for provider in FORMATS
    for row in _manifest(provider)
    if row["terminator"] != "none"
]


def body_of(provider: str, name: str) -> bytes:
    return (CORPUS / provider / name).read_bytes()


def content_type(provider: str) -> str:
    return spec(provider).content_types[0]


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


def config(server: CannedServer, provider: str, **overrides: Any) -> ClientConfig:
    options: dict[str, Any] = {
        "model": "m",
        "max_tokens": 256,
        "base_url": server.url,
        "api_key": KEY,
        "timeouts": FAST,
    }
    options.update(overrides)
    return ClientConfig(provider=provider, **options)  # type: ignore[arg-type]


def reply(provider: str, chunks: list[bytes], **kwargs: Any) -> Reply:
    return Reply(chunks=chunks, headers=(("content-type", content_type(provider)),), **kwargs)


def run(cfg: ClientConfig) -> tuple[TurnStream, list[StreamEvent]]:
    async def go() -> tuple[TurnStream, list[StreamEvent]]:
        async with AsyncProviderClient(cfg) as client:
            stream = client.stream_turn([System("be brief"), User("hi")])
            events = [event async for event in stream]
            return stream, events

    return asyncio.run(go())


def pieces(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


# -- every capture, whole and in small writes ----------------------------------------------


@pytest.mark.parametrize(("provider", "row"), PROVEN)
def test_every_proven_capture_is_complete(
    server: CannedServer, provider: str, row: dict[str, str]
) -> None:
    body = body_of(provider, row["file"])
    server.push(reply(provider, pieces(body, 97)))
    stream, _ = run(config(server, provider))
    turn = stream.turn
    assert turn.outcome is Outcome.COMPLETE, turn.error
    assert stream.retries == [] and len(server.requests) == 1
    assert len(turn.tool_calls) == int(row["tool_calls"])
    names = [call.name for call in turn.tool_calls]
    assert names == ([] if row["tool_call_names"] == "-" else row["tool_call_names"].split(";"))


@pytest.mark.parametrize("provider", FORMATS)
def test_the_request_goes_where_the_wire_wants_it(server: CannedServer, provider: str) -> None:
    name = {"gemini": "text_signature_gemini_3_pro.sse", "bedrock": "text_end_turn.bin"}
    body = body_of(provider, name.get(provider, "text_stop_qwen3_5.ndjson"))
    server.push(reply(provider, [body]))
    model = {"gemini": "gemini-2.5-flash", "bedrock": "amazon.nova-lite-v1:0"}
    run(config(server, provider, model=model.get(provider, "llama3.2")))
    (request,) = server.requests
    expected = {
        "gemini": "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        "bedrock": "/model/amazon.nova-lite-v1%3A0/converse-stream",
        "ollama": "/api/chat",
    }
    assert request.path == expected[provider]
    header = {"gemini": ("x-goog-api-key", KEY), "bedrock": ("authorization", f"Bearer {KEY}")}
    if provider in header:
        name_, value = header[provider]
        assert request.headers[name_] == value
    assert content_type(provider) in request.headers["accept"]
    json.loads(request.body)  # the wire's JSON body (its shape: the encoders' tests)


# -- cut streams: never complete; Empty resent, Partial kept ---------------------------------


def _cut_points(provider: str, body: bytes) -> list[int]:
    """Offsets that cut the body before its proof is whole: early, a third, half, and
    inside the proof itself (Gemini's last event, Bedrock's messageStop frame, Ollama's
    ``done`` line). A cut after the proof (in Bedrock's trailing metadata) is no cut."""
    proof = {"gemini": b"finishReason", "bedrock": b"messageStop", "ollama": b'"done":true'}
    inside = body.rfind(proof[provider]) + 4
    return sorted({1, len(body) // 3, len(body) // 2, inside})


def _check_cut(stream: TurnStream, server: CannedServer, what: object) -> None:
    """The cut attempt was never Complete: Empty and resent (the whole second answer is
    the turn), or Partial, kept, marked interrupted and never resent."""
    if stream.retries:
        assert stream.turn.outcome is Outcome.COMPLETE
        assert isinstance(stream.retries[0].error, StreamInterrupted | MalformedStream), what
        assert len(server.requests) == 2
    else:
        assert stream.turn.outcome is Outcome.PARTIAL, what
        assert isinstance(stream.interruption, StreamInterrupted)
        assert len(server.requests) == 1
        server.replies.clear()


@pytest.mark.parametrize("provider", FORMATS)
def test_a_cut_stream_is_never_complete(server: CannedServer, provider: str) -> None:
    name = {"gemini": "text_max_tokens_gemini_2_0_flash.sse", "bedrock": "text_end_turn.bin"}
    body = body_of(provider, name.get(provider, "docs_streaming_no_done_reason.ndjson"))
    for cut in _cut_points(provider, body):
        server.requests.clear()
        server.push(reply(provider, [body[:cut]], end="close"), reply(provider, [body]))
        stream, _ = run(config(server, provider))
        _check_cut(stream, server, cut)


def test_a_bedrock_stream_without_message_stop_is_partial(server: CannedServer) -> None:
    """metadata alone is not the proof: the frames up to it, messageStop dropped."""
    frames = [
        event_frame("messageStart", {"role": "assistant"}),
        event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
        event_frame("contentBlockStop", {"contentBlockIndex": 0}),
        event_frame("metadata", {"usage": {"inputTokens": 3, "outputTokens": 1}}),
    ]
    server.push(reply("bedrock", frames))
    stream, _ = run(config(server, "bedrock"))
    assert stream.turn.outcome is Outcome.PARTIAL and stream.turn.text == "Hi"
    assert len(server.requests) == 1


def test_a_corrupt_frame_crc_is_never_complete(server: CannedServer) -> None:
    body = bytearray(body_of("bedrock", "text_end_turn.bin"))
    stop = body.rfind(b"messageStop")
    # The messageStop frame's own message CRC (its last 4 bytes) flipped.
    start = _frame_start(bytes(body), stop)
    total = int.from_bytes(body[start : start + 4], "big")
    body[start + total - 1] ^= 0xFF
    server.push(
        reply("bedrock", [bytes(body)]), reply("bedrock", [body_of("bedrock", "text_end_turn.bin")])
    )
    stream, _ = run(config(server, "bedrock"))
    _check_cut(stream, server, "crc")


def _frame_start(body: bytes, inside: int) -> int:
    """The offset of the event-stream frame that holds ``inside``."""
    offset = 0
    while True:
        total = int.from_bytes(body[offset : offset + 4], "big")
        if offset + total > inside:
            return offset
        offset += total


# -- the error maps: in-stream exceptions and HTTP statuses ----------------------------------


def test_a_bedrock_throttling_exception_frame_is_retried(server: CannedServer) -> None:
    throttled = exception_frame("throttlingException", {"message": "Too many requests"})
    server.push(
        reply("bedrock", [throttled]), reply("bedrock", [body_of("bedrock", "text_end_turn.bin")])
    )
    stream, _ = run(config(server, "bedrock"))
    assert stream.turn.outcome is Outcome.COMPLETE
    (retry,) = stream.retries
    assert isinstance(retry.error, RateLimited) and "Too many requests" in retry.error.message


def test_a_bedrock_validation_exception_frame_is_not_retried(server: CannedServer) -> None:
    invalid = exception_frame("validationException", {"message": "bad toolConfig"})
    server.push(reply("bedrock", [invalid]))
    with pytest.raises(BadRequest, match="bad toolConfig"):
        run(config(server, "bedrock"))
    assert len(server.requests) == 1


def test_a_bedrock_exception_after_content_is_partial(server: CannedServer) -> None:
    frames = [
        event_frame("messageStart", {"role": "assistant"}),
        event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hal"}}),
        exception_frame("modelStreamErrorException", {"message": "model stream broke"}),
    ]
    server.push(reply("bedrock", frames))
    stream, _ = run(config(server, "bedrock"))
    assert stream.turn.outcome is Outcome.PARTIAL and stream.turn.text == "Hal"
    assert "model stream broke" in str(stream.interruption)
    assert len(server.requests) == 1


def _json_reply(status: int, body: Any, *headers: tuple[str, str]) -> Reply:
    return Reply(
        status,
        [json.dumps(body).encode()],
        headers=(("content-type", "application/json"), *headers),
    )


@pytest.mark.parametrize(
    ("status", "grpc", "cls"),
    [(429, "RESOURCE_EXHAUSTED", RateLimited), (503, "UNAVAILABLE", Overloaded)],
)
def test_gemini_429_and_503_are_retried(
    server: CannedServer, status: int, grpc: str, cls: type[Exception]
) -> None:
    error = {"error": {"code": status, "message": "try again later", "status": grpc}}
    server.push(
        _json_reply(status, error),
        reply("gemini", [body_of("gemini", "text_signature_gemini_3_pro.sse")]),
    )
    stream, _ = run(config(server, "gemini"))
    assert stream.turn.outcome is Outcome.COMPLETE
    (retry,) = stream.retries
    assert isinstance(retry.error, cls)
    assert retry.error.provider_type == grpc and "try again later" in retry.error.message


def test_gemini_invalid_argument_is_raised_at_once(server: CannedServer) -> None:
    error = {"error": {"code": 400, "message": "bad schema", "status": "INVALID_ARGUMENT"}}
    server.push(_json_reply(400, error))
    with pytest.raises(BadRequest, match="bad schema"):
        run(config(server, "gemini"))
    assert len(server.requests) == 1


def test_bedrock_http_throttling_is_named_by_its_header(server: CannedServer) -> None:
    header = ("x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/")
    server.push(
        _json_reply(429, {"message": "Too many tokens"}, header),
        reply("bedrock", [body_of("bedrock", "text_end_turn.bin")]),
    )
    stream, _ = run(config(server, "bedrock"))
    (retry,) = stream.retries
    assert isinstance(retry.error, RateLimited)
    assert retry.error.provider_type == "throttlingException"
    assert "Too many tokens" in retry.error.message


def test_an_ollama_error_body_is_classified(server: CannedServer) -> None:
    server.push(_json_reply(404, {"error": 'model "llama9" not found, try pulling it first'}))
    with pytest.raises(BadRequest, match="try pulling it first"):
        run(config(server, "ollama", retry=RetryPolicy(attempts=1)))


def test_an_answer_of_another_content_type_is_refused(server: CannedServer) -> None:
    # Ollama's NDJSON served as SSE: not a stream of this wire, and never read as one.
    body = body_of("ollama", "text_stop_qwen3_5.ndjson")
    server.push(Reply(chunks=[body], headers=(("content-type", "text/plain"),)))
    with pytest.raises(MalformedStream, match="application/x-ndjson"):
        run(config(server, "ollama", retry=RetryPolicy(attempts=1)))


def test_a_bad_key_never_appears_in_the_error(server: CannedServer) -> None:
    echoed = {"error": {"code": 400, "message": f"API key not valid: {KEY}", "status": "x"}}
    server.push(_json_reply(403, echoed))
    with pytest.raises(AuthenticationError) as caught:
        run(config(server, "gemini"))
    assert KEY not in str(caught.value) and KEY not in repr(caught.value.args)


# -- the clocks and the bounds ---------------------------------------------------------------


@pytest.mark.parametrize("provider", FORMATS)
def test_the_idle_clock_ends_a_silent_stream_as_partial(
    server: CannedServer, provider: str
) -> None:
    name = {"gemini": "text_max_tokens_gemini_2_0_flash.sse", "bedrock": "text_end_turn.bin"}
    body = body_of(provider, name.get(provider, "docs_streaming_no_done_reason.ndjson"))
    # Past its first content, then a silence the suite's timeout outlasts: only the idle
    # clock can end it.
    head = body[: len(body) // 2]
    server.push(reply(provider, [head, 3600.0], end="hang"))
    stream, _ = run(config(server, provider, timeouts=Timeouts(connect=2, first_byte=5, idle=0.3)))
    assert stream.turn.outcome is Outcome.PARTIAL
    assert isinstance(stream.interruption, IdleTimeout)


@pytest.mark.parametrize("provider", FORMATS)
def test_the_received_bytes_cap_holds(server: CannedServer, provider: str) -> None:
    name = {
        "gemini": "streamed_args_nested_vertex_gemini_3_1_pro.sse",
        "bedrock": "several_tools.bin",
    }
    body = body_of(provider, name.get(provider, "thinking_two_tool_calls_qwen3_5.ndjson"))
    server.push(reply(provider, pieces(body, 64)))
    cap = len(body) // 2
    cfg = config(server, provider, limits=TurnLimits(bytes=cap), retry=RetryPolicy(attempts=1))
    try:
        stream, _ = run(cfg)
    except TurnTooLarge as exc:  # before any content: Empty, and never resent
        assert exc.limit == cap
    else:
        assert stream.turn.outcome is Outcome.PARTIAL
        assert isinstance(stream.interruption, StreamInterrupted)
        assert isinstance(stream.interruption.__cause__, TurnTooLarge)
    assert len(server.requests) == 1


# -- configuration: base URLs, keys, regions from the environment ----------------------------

_ENV = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "OLLAMA_HOST",
    "OLLAMA_API_KEY",
)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_gemini_defaults_and_key_order(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("GEMINI_API_KEY", "gemini-key-000000")
    cfg = ClientConfig(provider="gemini", model="gemini-2.5-flash")
    assert cfg.url == (
        "https://generativelanguage.googleapis.com"
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert cfg.request_headers()["x-goog-api-key"] == "gemini-key-000000"
    assert "authorization" not in cfg.request_headers()
    # Both set: GOOGLE_API_KEY wins, as in google-genai.
    clean_env.setenv("GOOGLE_API_KEY", "google-key-000000")
    assert ClientConfig(provider="gemini", model="m").api_key == "google-key-000000"
    assert cfg.key_variable == "GEMINI_API_KEY or GOOGLE_API_KEY"


def test_a_request_path_of_ones_own_for_vertex(clean_env: pytest.MonkeyPatch) -> None:
    base = "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google"
    cfg = ClientConfig(
        provider="gemini",
        model="gemini-2.5-pro",
        base_url=base,
        request_path="/models/{model}:streamGenerateContent?alt=sse",
        headers={"authorization": "Bearer ya29.token-000000"},
    )
    assert cfg.url == f"{base}/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert cfg.request_headers()["authorization"] == "Bearer ya29.token-000000"
    with pytest.raises(ConfigurationError, match="request_path"):
        ClientConfig(provider="gemini", model="m", request_path="models/x")


def test_bedrock_region_key_and_model_path(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    clean_env.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSKbedrock-key-000000")
    model = "arn:aws:bedrock:ap-south-1:123456789012:inference-profile/apac.amazon.nova-lite-v1:0"
    cfg = ClientConfig(provider="bedrock", model=model)
    assert cfg.region == "ap-south-1"
    assert cfg.url == (
        "https://bedrock-runtime.ap-south-1.amazonaws.com/model/"
        "arn%3Aaws%3Abedrock%3Aap-south-1%3A123456789012%3Ainference-profile%2F"
        "apac.amazon.nova-lite-v1%3A0/converse-stream"
    )
    assert cfg.request_headers()["authorization"] == "Bearer ABSKbedrock-key-000000"
    clean_env.setenv("AWS_REGION", "eu-west-1")  # AWS_REGION first, as the SDKs read them
    assert ClientConfig(provider="bedrock", model="m").region == "eu-west-1"
    # A regional URL given as the base names the region its requests are signed for,
    # whatever the environment says; a region given explicitly wins.
    regional = "https://bedrock-runtime.us-west-2.amazonaws.com"
    assert ClientConfig(provider="bedrock", model="m", base_url=regional).region == "us-west-2"
    given = ClientConfig(provider="bedrock", model="m", base_url=regional, region="eu-north-1")
    assert given.region == "eu-north-1"


def test_ollama_needs_no_key_and_reads_ollama_host(clean_env: pytest.MonkeyPatch) -> None:
    cfg = ClientConfig(provider="ollama", model="llama3.2")
    assert cfg.url == "http://127.0.0.1:11434/api/chat" and cfg.api_key is None
    assert "authorization" not in cfg.request_headers()
    for value, base in [
        ("gpu-box", "http://gpu-box:11434"),
        ("gpu-box:8080", "http://gpu-box:8080"),
        ("https://ollama.example.com", "https://ollama.example.com"),
        ("[::1]", "http://[::1]:11434"),
    ]:
        clean_env.setenv("OLLAMA_HOST", value)
        assert ClientConfig(provider="ollama", model="m").base_url == base


def test_bedrock_without_a_key_signs_with_sigv4(server: CannedServer, clean_env: Any) -> None:
    """No bearer token: the client signs (botocore, the dev extras have it); fixed
    credentials given through the environment's default chain."""
    clean_env.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE0RAILINGS")
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    clean_env.delenv("AWS_SESSION_TOKEN", raising=False)
    clean_env.delenv("AWS_PROFILE", raising=False)
    server.push(reply("bedrock", [body_of("bedrock", "text_end_turn.bin")]))
    stream, _ = run(config(server, "bedrock", api_key=None, region="eu-central-1"))
    assert stream.turn.outcome is Outcome.COMPLETE
    (request,) = server.requests
    authorization = request.headers["authorization"]
    assert (
        authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE0RAILINGS/")
        and "/eu-central-1/bedrock/aws4_request" in authorization
    )
    assert "x-amz-date" in request.headers


def test_bedrock_without_a_key_nor_botocore_names_the_extra(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setitem(sys.modules, "botocore", None)  # how Python marks an absent module
    cfg = ClientConfig(provider="bedrock", model="m", region="us-east-1")
    with pytest.raises(MissingDependency, match=r"AWS_BEARER_TOKEN_BEDROCK.*pip install botocore"):
        AsyncProviderClient(cfg)
    # With a token, botocore is never needed.
    AsyncProviderClient(ClientConfig(provider="bedrock", model="m", api_key="ABSK-0000000000"))


# -- without a socket: httpx2.MockTransport, any write size --------------------------------


def _mock(
    provider: str, body: bytes, size: int, seen: list[httpx2.Request]
) -> httpx2.MockTransport:
    async def chunks() -> AsyncIterator[bytes]:
        for piece in pieces(body, size):
            yield piece

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(
            200, headers={"content-type": content_type(provider)}, content=chunks()
        )

    return httpx2.MockTransport(handler)


def _mock_turn(provider: str, body: bytes, size: int) -> tuple[Any, list[httpx2.Request]]:
    seen: list[httpx2.Request] = []
    cfg = ClientConfig(provider=provider, model="m", api_key=KEY, region="us-east-1")  # type: ignore[arg-type]

    async def go() -> Any:
        transport = _mock(provider, body, size, seen)
        async with AsyncProviderClient(cfg, transport=transport, context=ClientContext()) as c:
            return await c.stream_turn([User("hi")]).result()

    return asyncio.run(go()), seen


@pytest.mark.parametrize(("provider", "row"), PROVEN)
def test_the_turn_is_the_same_whatever_the_write_size(
    clean_env: pytest.MonkeyPatch, provider: str, row: dict[str, str]
) -> None:
    body = body_of(provider, row["file"])
    whole, seen = _mock_turn(provider, body, len(body))
    assert whole.outcome is Outcome.COMPLETE and len(seen) == 1
    assert str(seen[0].url).startswith(spec(provider).default_base_url)
    for size in (1, 7):
        turn, _ = _mock_turn(provider, body, size)
        assert turn == whole, size


def test_gemini_without_alt_sse_is_read_whole(server: CannedServer) -> None:
    """streamGenerateContent without ``alt=sse`` answers one JSON array of the same
    objects: read whole, its proof the same final finishReason; cut, never complete."""
    sse = body_of("gemini", "tool_call_no_args_gemini_3_flash.sse").decode()
    objects = [json.loads(line[5:]) for line in sse.splitlines() if line.startswith("data:")]
    array = json.dumps(objects).encode()
    kind = (("content-type", "application/json; charset=UTF-8"),)
    server.push(Reply(chunks=[array], headers=kind))
    path = "/v1beta/models/{model}:streamGenerateContent"
    stream, _ = run(config(server, "gemini", request_path=path))
    assert stream.turn.outcome is Outcome.COMPLETE
    assert [c.name for c in stream.turn.tool_calls] == ["read_theme"] + ["read_screen"] * 3
    assert server.requests[0].path == "/v1beta/models/m:streamGenerateContent"
    server.requests.clear()
    server.push(Reply(chunks=[array[:-40]], headers=kind), Reply(chunks=[array], headers=kind))
    stream, _ = run(config(server, "gemini", request_path=path))
    _check_cut(stream, server, "array")


def test_bedrock_usage_after_the_proof_is_kept_and_a_silence_there_costs_nothing(
    server: CannedServer,
) -> None:
    """metadata (usage) follows messageStop: the client reads on for it until EOF; a
    server that goes silent after the proof leaves a complete turn without usage."""
    frames = [
        event_frame("messageStart", {"role": "assistant"}),
        event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
        event_frame("contentBlockStop", {"contentBlockIndex": 0}),
        event_frame("messageStop", {"stopReason": "end_turn"}),
    ]
    metadata = event_frame("metadata", {"usage": {"inputTokens": 3, "outputTokens": 1}})
    server.push(
        reply("bedrock", [*frames, metadata]), reply("bedrock", [*frames, 3600.0], end="hang")
    )
    stream, _ = run(config(server, "bedrock"))
    assert stream.turn.outcome is Outcome.COMPLETE
    assert stream.turn.usage is not None and stream.turn.usage.output_tokens == 1
    stream, _ = run(config(server, "bedrock", timeouts=Timeouts(connect=2, first_byte=5, idle=0.3)))
    assert stream.turn.outcome is Outcome.COMPLETE and stream.turn.text == "Hi"
    assert stream.interruption is None and stream.retries == []
    assert len(server.requests) == 2
