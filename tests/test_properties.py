"""Properties of the whole core: split-invariance and that only railings' errors escape."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REAL, manifest
from railings import RailingsError, replay, to_json
from railings.replay import Replay
from railings.turn.reader import StreamReader
from railings.turn.verdict import judge

CAPTURES = {row["file"]: (REAL / row["file"]).read_bytes() for row in manifest()}
EXPECTED = {name: to_json(replay(body)) for name, body in CAPTURES.items()}


def _feed_split(body: bytes, cuts: list[int]) -> dict[str, object]:
    reader = StreamReader()
    last = 0
    for cut in sorted(set(cuts)):
        reader.feed(body[last:cut])
        last = cut
    reader.feed(body[last:])
    reader.close()
    turn = reader.turn()
    return to_json(Replay(turn, judge(turn)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(CAPTURES)), data=st.data())
def test_any_split_of_a_capture_gives_the_same_verdict(name: str, data: st.DataObject) -> None:
    body = CAPTURES[name]
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=40))
    assert _feed_split(body, cuts) == EXPECTED[name]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048), st.sampled_from(["auto", "openai", "anthropic"]))
def test_only_railings_errors_escape_random_bytes(body: bytes, provider: str) -> None:
    try:
        result = replay(body, provider=provider, max_tokens=16)
    except RailingsError:
        return
    assert not result.turn.complete or b"[DONE]" in body or b"message_stop" in body


_fragments = st.sampled_from(
    [
        b"data: ",
        b"event: ",
        b"\n",
        b"\r\n",
        b"\r",
        b":",
        b'{"choices":[{"index":0,"delta":{"content":"x"}}]}',
        b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}',
        b'{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}',
        b'{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"a"}}',
        b'{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":3}}',
        b'{"type":"message_stop"}',
        b"[DONE]",
        b'{"error":{"message":"x"}}',
        b"\xff\xfe",
        b"null",
        b"[1,2]",
        b'{"choices":null,"usage":"x"}',
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_fragments, max_size=60), st.sampled_from(["openai", "anthropic"]))
def test_only_railings_errors_escape_protocol_shaped_noise(
    parts: list[bytes], provider: str
) -> None:
    body = b"".join(parts)
    try:
        result = replay(body, provider=provider, max_tokens=3)
    except RailingsError:
        return
    turn = result.turn
    for verdict in result.verdicts:
        if verdict.execute:
            assert turn.complete
            assert not (turn.truncated and verdict.call.arguments is None)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_capture_truncated_at_every_offset_is_never_clean(name: str) -> None:
    body = CAPTURES[name]
    marker = (
        body.rfind(b"data: [DONE]") if b"[DONE]" in body else body.rfind(b"event: message_stop")
    )
    end = marker if marker >= 0 else len(body)
    step = max(1, end // 300)  # bounded for CI; `make fuzz` walks every offset
    for cut in range(0, end, step):
        result = replay(body[:cut])
        assert not result.turn.complete, cut
        assert not any(v.execute for v in result.verdicts), cut
