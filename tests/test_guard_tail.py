"""The guard's fast path never disagrees with the core: proven by the tail => COMPLETE.

``proven_by_tail`` lets the guard skip the JSON-parsing reader for streams that
end in the canonical proof. It may say False for a complete stream (the reader
then decides), but it must never say True where the reader would not find the
turn COMPLETE. Checked on every real capture in tests/corpus, cut at every
event boundary and at many byte offsets, and on generated streams.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _server import anthropic_error, anthropic_text, openai_chunk, openai_text
from conftest import REAL, manifest
from railings.guard import proven_by_tail
from railings.transport.tail import read_turn
from railings.turn.model import Outcome

PROVIDERS = {"openai-chat": "openai", "anthropic-messages": "anthropic"}
CAPTURES = [
    (PROVIDERS[row["provider"]], row["file"]) for row in manifest() if row["provider"] in PROVIDERS
]


def agrees(provider: str, body: bytes) -> bool:
    return not proven_by_tail(provider, body) or (
        read_turn(provider, body).outcome is Outcome.COMPLETE
    )


def cuts(body: bytes, rng: random.Random) -> list[int]:
    ends = {i + 2 for i in range(len(body)) if body[i : i + 2] == b"\n\n"}
    ends |= {i + 1 for i in range(len(body)) if body[i : i + 1] == b"\n"}
    ends |= {rng.randrange(len(body) + 1) for _ in range(60)}
    return sorted(ends)


@pytest.mark.parametrize(("provider", "name"), CAPTURES, ids=[n for _, n in CAPTURES])
def test_real_captures_and_every_cut(provider: str, name: str) -> None:
    body = (REAL / name).read_bytes()
    assert agrees(provider, body)
    rng = random.Random(name)
    for end in cuts(body, rng):
        assert agrees(provider, body[:end]), f"{name} cut at {end}"
        assert agrees(provider, body[:end] + b"\r\n")


def test_the_fast_path_serves_the_common_case() -> None:
    proven = {p: 0 for p in PROVIDERS.values()}
    for provider, name in CAPTURES:
        proven[provider] += proven_by_tail(provider, (REAL / name).read_bytes())
    assert proven["openai"] >= 10 and proven["anthropic"] >= 5
    assert proven_by_tail("openai", b"".join(openai_text(["a"])))
    assert proven_by_tail("anthropic", b"".join(anthropic_text(["a"])))


def test_model_text_cannot_forge_the_proof() -> None:
    forged = openai_chunk({"content": "data: [DONE]\n\n"})
    body = b"".join(openai_text(["a"], finish=None, done=False)) + forged
    assert not proven_by_tail("openai", body)
    stop = json.dumps({"type": "message_stop"})
    body = b"".join(anthropic_text([f"\ndata: {stop}\n\n"], stop=False))
    assert not proven_by_tail("anthropic", body)


def test_an_error_anywhere_goes_to_the_reader() -> None:
    chunks = anthropic_text(["a"])
    body = b"".join([*chunks[:3], anthropic_error("overloaded_error", "busy"), *chunks[3:]])
    assert not proven_by_tail("anthropic", body)
    assert read_turn("anthropic", body).outcome is not Outcome.COMPLETE


EOLS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def streams(draw: st.DrawFn) -> tuple[str, bytes]:
    provider = draw(st.sampled_from(["openai", "anthropic"]))
    words = draw(st.lists(st.text(max_size=8), max_size=5))
    chunks = openai_text(words) if provider == "openai" else anthropic_text(words)
    if draw(st.booleans()):
        error = (
            openai_chunk({}, error={"message": "x", "type": "server_error"})
            if provider == "openai"
            else anthropic_error("api_error", "x")
        )
        chunks.insert(draw(st.integers(0, len(chunks))), error)
    body = b"".join(chunks).decode()
    eol = draw(EOLS)
    body = body.replace("\n", eol)
    if draw(st.booleans()):
        body = body.replace("data: ", "data:")
    body += draw(st.sampled_from(["", eol, eol * 3, ": bye" + eol * 2, "data: x", "garbage"]))
    raw = body.encode()
    cut = draw(st.integers(0, len(raw)))
    return provider, raw[:cut] if draw(st.booleans()) else raw


@given(streams())
def test_generated_streams_agree(case: tuple[str, bytes]) -> None:
    provider, body = case
    assert agrees(provider, body)


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
@pytest.mark.parametrize(
    ("provider", "before", "proof"),
    [
        (
            "openai",
            b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}',
            b"data: [DONE]",
        ),
        (
            "anthropic",
            b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":'
            b'"end_turn"},"usage":{"output_tokens":1}}',
            b'data: {"type":"message_stop"}',
        ),
    ],
)
def test_a_proof_line_inside_a_longer_event_is_not_the_proof(
    provider: str, before: bytes, proof: bytes, eol: bytes
) -> None:
    # `data: {...}` then `data: [DONE]` with no blank line between is ONE event whose data
    # is neither: the reader finds no proof, and the fast check must not find one either.
    joined = (before + b"\n" + proof + b"\n\n").replace(b"\n", eol)
    assert read_turn(provider, joined).outcome is not Outcome.COMPLETE
    assert not proven_by_tail(provider, joined)
    apart = (before + b"\n\n" + proof + b"\n\n").replace(b"\n", eol)
    assert proven_by_tail(provider, apart) == (
        read_turn(provider, apart).outcome is Outcome.COMPLETE
    )
