"""The SSE cutting rules (wire/blocks.py): the line rule, the byte-exact block splitter the
proxy and the gateway use, and the proxy's life cycle under a stalled stream."""

from __future__ import annotations

import re
import socket

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REAL
from railings.testing import EventSplitter, FaultProxy, ScriptedServer
from railings.testing.faults import corrupt_event, is_terminator
from railings.wire.blocks import cut_lines, line_spans, lines, split_plain

TRAILING = b"data: never ended"


def split(chunks: list[bytes]) -> tuple[list[bytes], bytes]:
    splitter = EventSplitter()
    out = [block for chunk in chunks for block in splitter.feed(chunk)]
    return out, splitter.close()


def three_ways(body: bytes, expected: list[bytes]) -> None:
    """Whole, byte by byte, and with trailing data (h11's ``tr()``)."""
    assert split([body]) == (expected, b"")
    assert split([body[i : i + 1] for i in range(len(body))]) == (expected, b"")
    assert split([body + TRAILING]) == (expected, TRAILING)


def test_line_ends() -> None:
    three_ways(b"data: a\n\ndata: b\n\n", [b"data: a\n\n", b"data: b\n\n"])
    three_ways(
        b"data: a\r\n\r\nevent: x\r\ndata: b\r\n\r\n",
        [b"data: a\r\n\r\n", b"event: x\r\ndata: b\r\n\r\n"],
    )
    three_ways(b"data: a\r\rdata: b\n\r\n", [b"data: a\r\r", b"data: b\n\r\n"])


def test_blank_lines_belong_to_the_next_block() -> None:
    three_ways(b"\n\n\ndata: a\n\n: comment\n\n", [b"\n\n\ndata: a\n\n", b": comment\n\n"])


def test_a_trailing_cr_waits_for_its_lf() -> None:
    splitter = EventSplitter()
    assert splitter.feed(b"data: a\r\n\r") == []
    assert splitter.feed(b"\n") == [b"data: a\r\n\r\n"]


def test_real_captures_rejoin_exactly() -> None:
    for path in sorted(REAL.glob("*/*.sse")):
        body = path.read_bytes()
        blocks, rest = split([body[i : i + 97] for i in range(0, len(body), 97)])
        assert b"".join(blocks) + rest == body, path.name
        assert blocks == split([body])[0]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"data: x", b"event: y", b": c", b"", b"data: \xc3\xa9"]), max_size=12
    ),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
    st.lists(st.integers(0, 200), max_size=6),
)
def test_any_split_gives_the_same_blocks(lines: list[bytes], eol: bytes, cuts: list[int]) -> None:
    body = b"".join(line + eol for line in lines)
    points = sorted({min(c, len(body)) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    assert split(pieces) == split([body])
    blocks, rest = split(pieces)
    assert b"".join(blocks) + rest == body


def reference_blocks(body: bytes) -> tuple[list[bytes], bytes]:
    """The splitter's rule, read off the whole body at once: a block ends at an empty
    line that follows a non-empty one; a CR on the last byte may still become a CRLF."""
    ends = [
        m
        for m in re.finditer(rb"\r\n|\r|\n", body)
        if not (m.group() == b"\r" and m.end() == len(body))
    ]
    blocks, start, line, content = [], 0, 0, False
    for m in ends:
        if m.start() == line and content:
            blocks.append(body[start : m.end()])
            start, content = m.end(), False
        elif m.start() != line:
            content = True
        line = m.end()
    return blocks, body[start:]


LINE_PARTS = st.sampled_from([b"data: x", b"event: y", b": c", b"\n", b"\r", b"\r\n", b"\n\n"])


@settings(max_examples=400, deadline=None)
@given(st.lists(LINE_PARTS, max_size=30), st.lists(st.integers(0, 300), max_size=8))
def test_mixed_line_ends_match_the_rule(parts: list[bytes], cuts: list[int]) -> None:
    """LF-only stretches take the fast path and any CR the general one; a stream
    that moves between them, cut anywhere, still gives the rule's blocks."""
    body = b"".join(parts)
    points = sorted({min(c, len(body)) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    assert split(pieces) == reference_blocks(body)


def test_terminator_and_corruption_helpers() -> None:
    assert is_terminator(b"data: [DONE]\n\n") and is_terminator(b"data:[DONE]\n\n")
    assert is_terminator(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    assert not is_terminator(b'data: {"x": "[DONE]"}\n\n')
    block = b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'
    assert corrupt_event(block, "utf8") == block.replace(b'"content":"', b'"content":"\xff\xfe')
    value = block[len(b"data: ") : -2]
    assert corrupt_event(block, "json") == b"data: " + value[: len(value) // 2] + b"\n\n"


def test_closing_a_proxy_with_a_stalled_stream_is_prompt() -> None:
    with ScriptedServer({"turns": [{"text": "hello"}]}) as server:
        # The stall outlasts the suite's timeout: close() must not wait for it.
        proxy = FaultProxy(server.url, "idle:events=1,seconds=600").start_in_thread()
        sock = socket.create_connection(("127.0.0.1", proxy.port))
        try:
            body = b'{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}'
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body)
            )
            sock.settimeout(5)
            received = sock.recv(65536)
            assert received.startswith(b"HTTP/1.1 200")
            while b"data:" not in received:  # the first event is through: the proxy stalls now
                received += sock.recv(65536)
            proxy.close()
            assert proxy.log[0].action == "silent for 600s after 1 events"
        finally:
            sock.close()
            proxy.close()


@settings(max_examples=400, deadline=None)
@given(st.lists(LINE_PARTS, max_size=30), st.lists(st.integers(0, 300), max_size=8))
def test_the_line_rule_cut_anywhere_gives_whatwgs_lines(
    parts: list[bytes], cuts: list[int]
) -> None:
    """cut_lines over the pieces, carrying the CR, gives the lines of the whole (WHATWG:
    CRLF, LF or CR ends a line, CRLF once even when split), on bytes and on text."""
    body = b"".join(parts)
    expected = re.split(rb"\r\n|\r|\n", body)
    expected_tail = expected.pop()
    points = sorted({min(c, len(body)) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    for kind in (bytes, str):
        got, partial, cr = [], kind(), False
        for piece in pieces:
            text = piece if kind is bytes else piece.decode()
            done, tail, cr = cut_lines(text, cr)
            if done:
                done[0] = partial + done[0]
                partial = tail
            else:
                partial += tail
            got += done
        if cr:  # WHATWG: a CR at the very end ended its line already
            assert partial == kind()
        assert got == [e if kind is bytes else e.decode() for e in expected]
        assert partial == (expected_tail if kind is bytes else expected_tail.decode())


def test_a_blocks_lines_and_where_they_are() -> None:
    block = b"event: x\r\ndata: a\rdata: b\n\n"
    assert lines(block) == [b"event: x", b"data: a", b"data: b"]
    assert [block[a:b] for a, b in line_spans(block)] == [
        b"event: x",
        b"data: a",
        b"data: b",
        b"",
    ]
    assert line_spans(b"data: never ended") == []


def test_plain_bytes_are_cut_at_their_blank_lines() -> None:
    assert split_plain(b"data: a\n\nevent: e\ndata: b\n\ndata: c") == (
        [b"data: a", b"event: e\ndata: b"],
        b"data: c",
    )
    assert split_plain(b"data: a\n\n") == ([b"data: a"], b"")


def test_corruption_finds_the_data_line_after_a_cr() -> None:
    block = b'event: x\rdata: {"text":"hi"}\r\r'
    assert corrupt_event(block, "utf8") == b'event: x\rdata: {"text":"\xff\xfehi"}\r\r'
