"""The guard's verdict is the core reader's, in both directions, on every wire.

Every capture of ``tests/corpus`` (Chat Completions, Messages, Responses, Gemini,
Bedrock's event-stream frames, Ollama's NDJSON lines), whole, cut at random points and
with one fault after its first content (``tools/reliability/faulted.py``), is served in
random pieces -- plain or gzip-coded -- through the guard's public transport over
``httpx2.MockTransport`` and read as the SDKs read it (``iter_bytes``). The guard must
pass the body exactly when ``railings.replay`` finds the turn COMPLETE (no body the
reader refuses is accepted, none it accepts is refused), and say Empty exactly when the
reader does. The guard watches ``text/event-stream`` answers on every wire's path, so
each body is served with that type.
"""

from __future__ import annotations

import gzip
import itertools
import random
from collections import Counter
from collections.abc import Iterator

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railings import guard
from railings.providers import spec
from railings.replay import replay
from railings.turn.model import Outcome
from tools.reliability.faulted import Stream, inject, load_streams

STREAMS = load_streams()
# Every fault the guard can be handed as is (``oversize`` needs a smaller event bound).
KINDS = ("utf8", "json", "byte", "cut", "crc", "prelude")


class Pieces(httpx2.SyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._pieces)


def pieces(body: bytes, rng: random.Random) -> list[bytes]:
    """``body`` cut at random points: one piece, single bytes, or anything between."""
    size = rng.choice([len(body) + 1, 1, 7, 64, 1500, rng.randint(1, 4096)])
    cuts = sorted({0, len(body), *(rng.randint(0, len(body)) for _ in range(len(body) // size))})
    return [body[a:b] for a, b in itertools.pairwise(cuts) if b > a]


def guarded(provider: str, body: bytes, rng: random.Random) -> str:
    """The guard's verdict on ``body``: "complete", "partial" or "empty"."""
    coded = rng.random() < 0.3
    raw = gzip.compress(body) if coded else body
    headers = {"content-type": "text/event-stream"}
    if coded:
        headers["content-encoding"] = "gzip"
    served = pieces(raw, rng)

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers=headers, stream=Pieces(served))

    url = "http://provider.test" + spec(provider).path_for("m")
    with httpx2.Client(transport=guard.transport(httpx2.MockTransport(answer))) as http:
        try:
            with http.stream("POST", url, json={}) as response:
                seen = b"".join(response.iter_bytes())
        except httpx2.HTTPError as exc:
            verdict = guard.interruption(exc)
            assert verdict is not None, exc
            return "empty" if verdict.empty else "partial"
    assert seen == body  # passed through unchanged
    return "complete"


def core(provider: str, body: bytes) -> str:
    outcome = replay(body, provider=provider).turn.outcome
    return {Outcome.COMPLETE: "complete", Outcome.PARTIAL: "partial"}.get(outcome, "empty")


def bodies(stream: Stream, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    """The capture whole, cut at unit ends and at random bytes, and with faults."""
    body = stream.body
    yield "whole", body
    ends = [sum(map(len, stream.units[: i + 1])) for i in range(len(stream.units))]
    for end in rng.sample(ends, min(3, len(ends))):
        yield f"cut at unit end {end}", body[:end]
    for end in (rng.randint(0, len(body)) for _ in range(4)):
        yield f"cut at {end}", body[:end]
    for kind in rng.sample([k for k in KINDS if k in stream.kinds], 2):
        unit = rng.choice(stream.after_content)
        faulted = inject(stream, kind, unit, rng.randint(0, 1 << 16))
        yield faulted.what, faulted.body


def test_every_wire_is_in_the_differential() -> None:
    assert {s.provider for s in STREAMS} == {
        "openai",
        "anthropic",
        "openai-responses",
        "gemini",
        "bedrock",
        "ollama",
    }


def test_the_guard_and_the_reader_agree_on_every_capture_cut_and_faulted() -> None:
    seen: Counter[tuple[str, str]] = Counter()
    for stream in STREAMS:
        rng = random.Random(stream.name)
        for what, body in bodies(stream, rng):
            expected = core(stream.provider, body)
            assert guarded(stream.provider, body, rng) == expected, (stream.name, what)
            seen[stream.provider, expected] += 1
    # Both directions are exercised on every wire: bodies the reader accepts, and bodies
    # it refuses, Partial and Empty.
    for provider in {s.provider for s in STREAMS}:
        for verdict in ("complete", "partial", "empty"):
            assert seen[provider, verdict], (provider, verdict, seen)


@settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_any_cut_and_any_pieces_agree(data: st.DataObject) -> None:
    stream = data.draw(st.sampled_from(STREAMS), label="capture")
    body = stream.body
    if data.draw(st.booleans(), label="faulted"):
        kind = data.draw(st.sampled_from([k for k in KINDS if k in stream.kinds]), label="kind")
        unit = data.draw(st.sampled_from(stream.after_content), label="unit")
        body = inject(stream, kind, unit, data.draw(st.integers(0, 1 << 16))).body
    cut = data.draw(st.none() | st.integers(0, len(body)), label="cut")
    body = body if cut is None else body[:cut]
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    assert guarded(stream.provider, body, rng) == core(stream.provider, body)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_proof_inside_a_longer_event_is_no_proof_for_either(provider: str) -> None:
    # `data: {...}` then `data: [DONE]` with no blank line between is ONE event whose data
    # is neither: the reader finds no proof, and the guard must not pass it.
    before = {
        "openai": b'data: {"choices":[{"index":0,"delta":{"content":"hi"},'
        b'"finish_reason":"stop"}]}',
        "anthropic": b'event: message_delta\ndata: {"type":"message_delta","delta":'
        b'{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}',
    }[provider]
    proof = {"openai": b"data: [DONE]", "anthropic": b'data: {"type":"message_stop"}'}[provider]
    rng = random.Random(provider)
    for eol in (b"\n", b"\r\n", b"\r"):
        joined = (before + b"\n" + proof + b"\n\n").replace(b"\n", eol)
        assert core(provider, joined) != "complete"
        assert guarded(provider, joined, rng) == core(provider, joined)
