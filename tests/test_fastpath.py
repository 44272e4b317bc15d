"""The reader's fast path for plain SSE blocks (turn/fastpath.py) equals the plain path.

Every property runs the same bytes, cut at the same places, through two readers: the
fast one (``StreamReader(..., fast=True)``) and the plain one, the specification
(``fast=False``: every byte goes through the WHATWG decoder and ``feed``), whatever the
accelerations switch says. The events each ``feed`` and ``close`` return, the frame count,
the verdict and the exception raised (where and which) must all be equal.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REAL, RESPONSES, manifest
from railings import RailingsError, to_json
from railings.events import StreamEvent
from railings.replay import Replay
from railings.turn.fastpath import FastStreamReader, eligible
from railings.turn.reader import StreamReader
from railings.turn.verdict import judge

CAPTURES = [REAL / row["file"] for row in manifest()] + sorted(RESPONSES.glob("*.sse"))
BODIES = {path.name: path.read_bytes() for path in CAPTURES}


def _run(
    make: Callable[[], StreamReader], body: bytes, cuts: list[int]
) -> tuple[list[object], object]:
    """What a reader returns for ``body`` fed in pieces, step by step, and how it ended."""
    reader = make()
    steps: list[object] = []
    last = 0
    try:
        for cut in [*sorted(set(cuts)), len(body)]:
            steps.append(reader.feed(body[last:cut]))
            last = cut
        steps.append(reader.close())
    except RailingsError as exc:
        return steps, (type(exc).__name__, str(exc), len(steps))
    turn = reader.turn()
    return steps, (reader.events_seen, reader.framing, to_json(Replay(turn, judge(turn))))


def _equal(provider: str, body: bytes, cuts: list[int], max_event_size: int = 1 << 24) -> None:
    def reader(fast: bool) -> Callable[[], StreamReader]:
        return lambda: StreamReader(provider, max_event_size=max_event_size, fast=fast)

    assert _run(reader(True), body, cuts) == _run(reader(False), body, cuts)


_cuts = st.lists(st.integers(0, 1 << 20), max_size=40)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(BODIES)), data=st.data())
def test_every_capture_cut_anywhere_reads_the_same(name: str, data: st.DataObject) -> None:
    body = BODIES[name]
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=40))
    provider = data.draw(st.sampled_from(["auto", "openai", "anthropic", "openai-responses"]))
    _equal(provider, body, cuts)


def test_every_capture_one_byte_at_a_time_and_whole_reads_the_same() -> None:
    for body in BODIES.values():
        _equal("auto", body, [])
        _equal("auto", body, list(range(len(body))))


# Blocks as providers send them, and everything the fast path must leave to the decoder.
_pieces = st.sampled_from(
    [
        b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n',
        b'data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function"'
        b':{"name":"f","arguments":"{\\"a"}}]}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n',
        b'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}\n\n',
        b"data: [DONE]\n\n",
        b'event: error\ndata: {"error":{"message":"x"}}\n\n',
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m"}}\n\n',
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n',
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"\xc3\xa9t\xc3\xa9 \xef\xbf\xbd"}}\n\n',
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":'
        b'"max_tokens"},"usage":{"output_tokens":3}}\n\n',
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
        b'event: ping\ndata: {"type": "ping"}\n\n',
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
        b'"sequence_number":1,"delta":"hi"}\n\n',
        b'event: response.completed\ndata: {"type":"response.completed","sequence_number":2,'
        b'"response":{"status":"completed","output":[]}}\n\n',
        b'event:\ndata: {"choices":[]}\n\n',
        b"event: \ndata: {}\n\n",
        b"event: weird\ndata: {}\n\n",
        b"data: {}\ndata: {}\n\n",
        b"data:{}\n\n",
        b"data: \n\n",
        b"data: null\n\n",
        b"data: [1]\n\n",
        b"data: {bad\n\n",
        b"data: {} \n\n",
        b": keep-alive\n\n",
        b"id: 7\n",
        b"id: a\x00b\n",
        b"retry: 1000\n",
        b"\n",
        b"\r\n",
        b"\r",
        b"\xef\xbb\xbf",
        b"\xff",
        b"\xe2\x82",
        b"\xef\xbf\xbd",
        b"data: ",
        b"event: ",
        b'{"choices":[{"index":0,"delta":{"content":"y"}}]}',
        b'data: {"choices":[{"index":0,"delta":{"content":"' + b"z" * 300 + b'"}}]}\n\n',
        # The common shapes (turn/fastpath.py, feed_common), odd bytes and escapes in them.
        b'data: {"choices":[{"index":0,"delta":{"content":"\xff"}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{"content":"\xef\xbf\xbd \\u00e9"}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{"content":"\\ud83d\\ude00 \\ud800"}}]}\n\n',
        b'data: {"choices":[{"delta":{"content":"k"},"index":0}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
        b'{"arguments":"\\"b"}}]}}]}\n\n',
        b'data: {"choices":[{"index":1,"delta":{"content":"other choice"}}]}\n\n',
        b"event: \xff\ndata: {}\n\n",
        b'event: content_block_start\ndata: {"type":"content_block_start","index":1,'
        b'"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}\n\n',
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,'
        b'"delta":{"type":"input_json_delta","partial_json":"{\\"a\\": \xe6\x97\xa5"}}\n\n',
        b'event: content_block_delta\ndata: {"index":0,"delta":{"text":"r","type":"text_delta"},'
        b'"type":"content_block_delta"}\n\n',
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
        b'"delta":"no number"}\n\n',
    ]
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_pieces, max_size=40),
    _cuts,
    st.sampled_from(["auto", "openai", "anthropic", "openai-responses"]),
    st.sampled_from([1 << 24, 64, 200, 400]),
)
def test_protocol_shaped_streams_cut_anywhere_read_the_same(
    pieces: list[bytes], cuts: list[int], provider: str, limit: int
) -> None:
    body = b"".join(pieces)
    _equal(provider, body, [cut % (len(body) + 1) for cut in cuts], max_event_size=limit)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(BODIES)), data=st.data())
def test_captures_with_noise_between_blocks_read_the_same(name: str, data: st.DataObject) -> None:
    blocks = BODIES[name].split(b"\n\n")
    noise = data.draw(st.lists(st.tuples(st.integers(0, len(blocks)), _pieces), max_size=6))
    for where, piece in sorted(noise, reverse=True):
        blocks.insert(where, piece.rstrip(b"\n"))
    body = b"\n\n".join(blocks)
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=30))
    _equal("auto", body, cuts)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), _cuts, st.sampled_from(["auto", "openai", "anthropic"]))
def test_random_bytes_read_the_same(body: bytes, cuts: list[int], provider: str) -> None:
    _equal(provider, b"data: {}\n\n" + body, [cut % (len(body) + 11) for cut in cuts])


class SpyReader(FastStreamReader):
    """The fast reader, recording what its fast path leaves to the plain one."""

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self.general: list[bytes] = []

    def _decode(self, chunk: bytes, final: bool, out: list[StreamEvent]) -> list[StreamEvent]:
        self.general.append(chunk)
        return super()._decode(chunk, final, out)


def test_plain_blocks_are_read_by_the_fast_path_up_to_the_first_other_one() -> None:
    first = b'data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
    chunk = (
        b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
        b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"b"}}]}\n\n'
        b": comment\n\n"
        b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"c"}}]}\n\n'
    )
    assert eligible(chunk, 1 << 24)
    reader = SpyReader("openai")
    reader.feed(first)  # the first block: the decoder's (a BOM may come)
    reader.general.clear()
    out = reader.feed(chunk)
    assert reader.general == [chunk[chunk.index(b": comment") :]]
    assert [getattr(e, "text", None) for e in out] == ["a", "b", "c"]
    assert reader.events_seen == 4


def test_a_proof_ends_the_fast_path_at_its_block() -> None:
    start = b'event: message_start\ndata: {"type":"message_start","message":{"id":"m"}}\n\n'
    stop = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    reader = SpyReader("anthropic")
    reader.feed(start)
    reader.general.clear()
    out = reader.feed(stop + b"data: [DONE]\n\n")
    assert reader.general == []
    assert reader.terminated
    assert [type(e).__name__ for e in out] == ["TerminationProof"]
    assert reader.events_seen == 3  # the block after the proof is still counted


def test_chunks_the_fast_path_leaves_to_the_decoder() -> None:
    assert not eligible(b"data: {}\r\n\r\n", 1 << 24)
    assert not eligible(b"data: {}\n\n\xff", 1 << 24)
    assert not eligible(b"data: {}\n\n", 5)
    assert not eligible(bytearray(b"data: {}\n\n"), 1 << 24)  # type: ignore[arg-type]
    assert eligible(b"data: {}\n\n\xe2\x82", 1 << 24)  # a character cut at the end waits


def test_other_buffers_read_the_same() -> None:
    body = b"".join(BODIES[name] for name in sorted(BODIES)[:1])
    pieces = [bytearray(body[i : i + 100]) for i in range(0, len(body), 100)]
    fast, plain = StreamReader(fast=True), StreamReader(fast=False)
    assert [fast.feed(p) for p in pieces] == [plain.feed(p) for p in pieces]  # type: ignore[arg-type]
    assert fast.close() == plain.close()


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=40), st.sampled_from([b'{"a":"', b'{"', b"[", b""]))
def test_parse_bytes_accepts_only_utf8_and_agrees_with_json(tail: bytes, head: bytes) -> None:
    """The fast path relies on it: a block whose data parsed is valid UTF-8."""
    import json

    from railings.wire._json import parse_bytes

    raw = head + tail + (b'"}' if head.startswith(b"{") else b"")
    try:
        value = parse_bytes(raw)
    except Exception:
        return
    assert repr(value) == repr(json.loads(raw.decode("utf-8")))  # strictly, or this fails


def test_the_fast_event_constructors_build_equal_frozen_events() -> None:
    import dataclasses

    from railings.events import TextDelta, ToolArgumentsDelta
    from railings.wire._events import arguments_delta, text_delta

    text, arguments = text_delta("é"), arguments_delta(3, '{"a"')
    assert text == TextDelta(text="é") and hash(text) == hash(TextDelta(text="é"))
    assert arguments == ToolArgumentsDelta(index=3, fragment='{"a"')
    assert arguments.parsed is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        text.text = "x"  # type: ignore[misc]
