"""The guard on the Responses API: ``.../responses`` is watched, and its fast tail check
never disagrees with the core (proven by the tail => the reader finds it COMPLETE).

The Responses terminal event repeats the whole response, so the tail check walks
back over that one event instead of reading a fixed-size tail; these tests hold it
to the same rule as the other two wire formats, on the real captures cut at every
line end and on generated streams.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from railings import guard
from railings.errors import StreamInterrupted
from railings.guard import proven_by_tail
from railings.testing import FaultProxy, ScriptedServer
from railings.testing.ids import Ids
from railings.testing.script import ScriptTurn, plan_turn
from railings.testing.wire_responses import error_event, events, failed_event, parse_ask
from railings.transport.tail import read_turn
from railings.turn.model import Outcome

P = "openai-responses"
CAPTURES = sorted((Path(__file__).resolve().parent / "corpus" / "responses").glob("*.sse"))


def agrees(body: bytes) -> bool:
    return not proven_by_tail(P, body) or read_turn(P, body).outcome is Outcome.COMPLETE


def scripted(
    turn: dict[str, Any], max_tokens: int | None = None, chunk: int = 5, seed: int = 1
) -> list[bytes]:
    """The scripted server's events for one turn, without the network."""
    ids = Ids(seed)
    ask = parse_ask({"model": "m", "input": "x", "max_output_tokens": max_tokens})
    assert not isinstance(ask, str)
    plan = plan_turn(ScriptTurn.from_dict(turn), max_tokens, ids.openai_call)
    return list(
        events(
            plan,
            ask,
            response_id=ids.response(),
            created=1,
            model="m",
            chunk_size=chunk,
            new_item_id=ids.response_item,
        )
    )


TOOL_TURN = {
    "thinking": "first look",
    "text": "Listing.",
    "tool_calls": [{"name": "shell", "arguments": {"command": "ls -la"}}],
}


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_real_captures_and_every_cut(path: Path) -> None:
    body = path.read_bytes()
    assert proven_by_tail(P, body) and read_turn(P, body).outcome is Outcome.COMPLETE
    rng = random.Random(path.name)
    ends = {i + 1 for i in range(len(body)) if body[i : i + 1] == b"\n"}
    ends |= {rng.randrange(len(body) + 1) for _ in range(60)}
    for end in sorted(ends):
        assert agrees(body[:end]), f"{path.name} cut at {end}"
        assert agrees(body[:end] + b"\r\n")
        assert agrees(body[:end] + b"\n\n")


def test_the_fast_path_serves_the_common_case() -> None:
    for turn, limit in [
        ({"text": "hello"}, None),
        (TOOL_TURN, None),
        (TOOL_TURN, 10),
        ({"text": ""}, None),
    ]:
        body = b"".join(scripted(turn, limit))
        assert proven_by_tail(P, body), (turn, limit)
        assert read_turn(P, body).outcome is Outcome.COMPLETE
    # CRLF line ends, no space after the colon, no event: lines (OpenRouter), a [DONE]
    # trailer, trailing blank lines: all still proven.
    body = b"".join(scripted(TOOL_TURN))
    assert proven_by_tail(P, body.replace(b"\n", b"\r\n"))
    assert proven_by_tail(P, body.replace(b"data: ", b"data:"))
    assert proven_by_tail(P, b"".join(b.split(b"\n", 1)[1] for b in scripted(TOOL_TURN)))
    assert proven_by_tail(P, body + b"data: [DONE]\n\n\n")


def test_unusual_endings_go_to_the_reader_and_the_reader_agrees() -> None:
    chunks = scripted(TOOL_TURN)
    body = b"".join(chunks)
    last = chunks[-1]
    for odd in [
        body[:-1],  # the terminal event never dispatched
        body + b": keep-alive\n\n",  # a comment after it
        body[: -len(last)] + b"id: 7\n" + last,  # another field in the terminal event
        body[: -len(last)] + last.replace(b"data: {", b"data: {\ndata: "),  # two data lines
        body[: -len(last)],  # no terminal event at all
        body[: -len(last)] + last.replace(b'"response.completed"', b'"response.created"', 1),
    ]:
        assert not proven_by_tail(P, odd)
        assert agrees(odd)


def test_an_error_anywhere_goes_to_the_reader() -> None:
    chunks = scripted(TOOL_TURN)
    created = json.loads(chunks[0].split(b"data: ", 1)[1])
    for injected in (error_event(3), failed_event(created, 3)):
        body = b"".join([*chunks[:3], injected, *chunks[3:]])
        assert not proven_by_tail(P, body)
        assert read_turn(P, body).outcome is not Outcome.COMPLETE


def test_model_text_cannot_forge_the_proof() -> None:
    forged = 'x"}\n\nevent: response.completed\ndata: {"type":"response.completed"}\n\n'
    chunks = scripted({"text": forged})
    body = b"".join(chunks[:-1])  # everything but the real terminal event
    assert not proven_by_tail(P, body) and agrees(body)
    assert not proven_by_tail(P, body + b"\n\n")


def test_a_lost_repeated_or_swapped_event_goes_to_the_reader() -> None:
    chunks = scripted({"text": "one two three four", "thinking": "hm"}, chunk=3)
    assert proven_by_tail(P, b"".join(chunks))
    altered = {
        "lost": [*chunks[:5], *chunks[6:]],
        "repeated": [*chunks[:6], chunks[5], *chunks[6:]],
        "swapped": [*chunks[:5], chunks[6], chunks[5], *chunks[7:]],
    }
    for how, kept in altered.items():
        body = b"".join(kept)
        assert not proven_by_tail(P, body), how
        turn = read_turn(P, body)
        assert turn.outcome is not Outcome.COMPLETE and turn.error is not None, how
        assert "out of sequence" in turn.error.message, how


EOLS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    words = draw(st.lists(st.text(max_size=6), max_size=4))
    calls = [
        {"name": "f", "arguments": {"a": w}}
        for w in draw(st.lists(st.text(max_size=4), max_size=2))
    ]
    turn = {"text": "".join(words), "tool_calls": calls}
    limit = draw(st.none() | st.integers(1, 12))
    chunks = scripted(turn, limit, chunk=draw(st.integers(1, 5)), seed=draw(st.integers(0, 9)))
    if draw(st.booleans()):
        created = json.loads(chunks[0].split(b"data: ", 1)[1])
        at = draw(st.integers(0, len(chunks)))
        chunks.insert(at, draw(st.sampled_from([error_event(at), failed_event(created, at)])))
    if draw(st.booleans()):
        chunks = [c.split(b"\n", 1)[1] for c in chunks]  # no event: lines
    text = b"".join(chunks).decode()
    eol = draw(EOLS)
    text = text.replace("\n", eol)
    if draw(st.booleans()):
        text = text.replace("data: ", "data:")
    text += draw(
        st.sampled_from(
            ["", eol, eol * 3, ": bye" + eol * 2, "data: [DONE]" + eol * 2, "data: x", "garbage"]
        )
    )
    raw = text.encode()
    cut = draw(st.integers(0, len(raw)))
    return raw[:cut] if draw(st.booleans()) else raw


@settings(max_examples=300, deadline=None)
@given(streams())
def test_generated_streams_agree(body: bytes) -> None:
    assert agrees(body)


# -- the guard under the official SDK ------------------------------------------------------

SCRIPT = {"chunk_size": 4, "turns": [TOOL_TURN]}
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "shell",
        "strict": False,
        "parameters": {"type": "object", "properties": {}},
    }
]


@pytest.fixture(scope="module")
def proxy() -> Iterator[FaultProxy]:
    with ScriptedServer(SCRIPT) as server, FaultProxy(server.url) as running:
        yield running


def guarded(proxy: FaultProxy, fault: str) -> openai.OpenAI:
    http = openai.DefaultHttpx2Client(
        transport=guard.transport(idle=5), headers={"x-railings-fault": fault}
    )
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", http_client=http, max_retries=0)


def kinds(client: openai.OpenAI, **extra: Any) -> list[str]:
    stream = client.responses.create(model="m", input="ls", tools=TOOLS, stream=True, **extra)
    with stream:
        return [event.type for event in stream]


@pytest.mark.parametrize(
    "fault",
    [
        "drop_terminator",
        "truncate:events=12",
        "reset:events=12",
        "error_event:events=12",
        "error_event:events=12,type=response.failed",
    ],
)
def test_the_guard_raises_where_the_sdk_alone_ends_quietly(proxy: FaultProxy, fault: str) -> None:
    with openai.OpenAI(
        base_url=proxy.url + "/v1",
        api_key="k",
        max_retries=0,
        default_headers={"x-railings-fault": fault},
    ) as plain:
        try:
            seen = kinds(plain)
            assert "response.completed" not in seen  # quietly short, without the guard
        except openai.APIConnectionError:
            assert fault.startswith("reset")  # a reset is loud either way
    with guarded(proxy, fault) as client, pytest.raises(openai.APIConnectionError) as raised:
        kinds(client)
    cause = guard.interruption(raised.value)
    assert isinstance(cause, StreamInterrupted) and not cause.empty


def test_the_guard_passes_a_clean_and_a_cut_at_the_limit_stream(
    proxy: FaultProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Both end in their proof, so the fast path decides and the reader is never run.
    def no_reader(provider: str, body: bytes) -> Any:
        raise AssertionError("the reader ran on a proven stream")

    monkeypatch.setattr("railings.transport.watch.read_turn", no_reader)
    with guarded(proxy, "none") as client:
        assert kinds(client)[-1] == "response.completed"
        assert kinds(client, max_output_tokens=6)[-1] == "response.incomplete"


def test_an_empty_cut_is_empty(proxy: FaultProxy) -> None:
    with (
        guarded(proxy, "truncate:events=2") as client,
        pytest.raises(openai.APIConnectionError) as raised,
    ):
        kinds(client)
    cause = guard.interruption(raised.value)
    assert isinstance(cause, StreamInterrupted) and cause.empty


def test_only_responses_paths_are_recognized() -> None:
    class Body(httpx2.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield b"data: no proof\n\n"

    class Inner(httpx2.BaseTransport):
        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, stream=Body()
            )

    with httpx2.Client(transport=guard.transport(Inner())) as http:
        assert http.post("http://x/v1/embeddings").content == b"data: no proof\n\n"
        for path in ("/v1/responses", "/openai/v1/responses/"):
            with pytest.raises(httpx2.RemoteProtocolError) as raised:
                http.post("http://x" + path)
            assert guard.interruption(raised.value) is not None
