"""Chunked bodies decoded in bulk (transport/chunks.py) read exactly as h11 reads them.

Every case goes through two h11 client connections (``tools/reliability/chunked.py``),
one with h11's own chunked reader and one with ``ChunksInBulk`` in its place, and the
two must agree on every byte of data, where an error is raised (after which bytes) with
which message, how the message ends (trailers included) and what is left in the
buffer. Each named case runs whole, byte by byte and with trailing data; a hypothesis
property runs random bodies made of well-formed and malformed parts, cut at random
points, ending or not.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from railings.transport.chunks import ChunksInBulk, wrap
from tools.reliability.chunked import LAST, Outcome, chunk, connection, framed, outcome


def agree(pieces: Sequence[bytes], *, eof: bool = False) -> Outcome:
    """Both readers' outcome, asserted equal."""
    plain, _ = outcome(pieces, bulk=False, eof=eof)
    bulk, _ = outcome(pieces, bulk=True, eof=eof)
    assert bulk == plain
    return bulk


def three_ways(body: bytes, *, eof: bool = False) -> Outcome:
    whole = agree([body], eof=eof)
    data, ending, _ = agree([body[i : i + 1] for i in range(len(body))], eof=eof)
    # The same data and the same end; an error's message may quote fewer bytes.
    assert (data, ending if ending[0] != "error" else "error") == (
        whole[0],
        whole[1] if whole[1][0] != "error" else "error",
    )
    agree([body + b"HTTP/1.1 200 OK\r\n"], eof=eof)  # bytes after the message stay h11's
    return whole


CASES = {
    "plain": (chunk(b"data: a\n\n") + chunk(b"data: bb\n\n") + LAST, ("end", ())),
    "upper hex, leading zeros": (chunk(b"x" * 26, b"001A") + LAST, ("end", ())),
    "an extension": (chunk(b"ab") + chunk(b"cd", b"2;name=v") + chunk(b"ef") + LAST, ("end", ())),
    "whitespace after the size": (chunk(b"ab", b"2 \t") + LAST, ("end", ())),
    "trailers": (chunk(b"ab") + b"0\r\nx-done: yes\r\n\r\n", ("end", ((b"x-done", b"yes"),))),
    "last chunk with an extension": (chunk(b"ab") + b"0;ext\r\n\r\n", ("end", ())),
    "a footer that is not CRLF": (chunk(b"ab") + chunk(b"cd", crlf=b"XY") + LAST, "error"),
    "a footer with LF only": (chunk(b"ab", crlf=b"\n") + LAST, "error"),
    "an illegal size": (chunk(b"ab") + b"zz\r\n" + LAST, "error"),
    "a signed size": (chunk(b"ab") + chunk(b"cd", b"+2") + LAST, "error"),
    "a 0x size": (chunk(b"ab") + chunk(b"cd", b"0x2") + LAST, "error"),
    "an underscored size": (chunk(b"x" * 16, b"1_0") + LAST, "error"),
    "21 digits": (chunk(b"ab", b"0" * 20 + b"2") + LAST, "error"),
    "20 digits": (chunk(b"ab", b"0" * 19 + b"2") + LAST, ("end", ())),
    "an empty size line": (chunk(b"ab") + b"\r\n" + LAST, "error"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_named_bodies_read_the_same_three_ways(name: str) -> None:
    body, expected = CASES[name]
    got = three_ways(body)
    if expected == "error":
        assert got[1][0] == "error"
    else:
        assert got[1] == expected


@pytest.mark.parametrize(
    "cut", [0, 1, 3, 4, 5, 6, 9, 10, 11, 12, 14, 16, 17], ids=lambda c: f"cut{c}"
)
def test_a_body_cut_by_the_peer_fails_the_same(cut: int) -> None:
    body = chunk(b"hello") + chunk(b"x")  # no last chunk: every cut is mid-body
    data, ending, _ = three_ways(body[:cut], eof=True)
    assert ending[0] == "error"
    assert b"hellox".startswith(data)


def test_buffered_chunks_are_one_event_and_the_buffer_stays_small() -> None:
    payloads = [b'data: {"n": %d}\n\n' % i for i in range(200)]
    body = b"".join(chunk(p) for p in payloads) + LAST
    (data, ending, _), plain_events = outcome([body], bulk=False, eof=False)
    assert (data, ending, plain_events) == (b"".join(payloads), ("end", ()), 200)
    (data, ending, _), bulk_events = outcome([body], bulk=True, eof=False)
    assert (data, ending, bulk_events) == (b"".join(payloads), ("end", ()), 1)


def test_a_long_chunk_goes_up_as_it_arrives() -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB in one chunk
    body = chunk(payload) + LAST
    conn = connection(bulk=True)
    got = bytearray()
    for i in range(0, len(body), 65536):
        conn.receive_data(body[i : i + 65536])
        event = conn.next_event()
        while type(event) is h11.Data:
            got += event.data
            event = conn.next_event()
        assert len(conn.trailing_data[0]) <= 22  # nothing held back but a size line
        if type(event) is h11.EndOfMessage:
            break
    assert bytes(got) == payload and type(event) is h11.EndOfMessage


def test_only_a_fresh_chunked_reader_is_replaced() -> None:
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\n")
    conn.next_event()
    assert wrap(conn) is False  # a body with a length: h11's reader as it is
    started = connection(bulk=False)
    started.receive_data(b"5\r\nhel")
    assert type(started.next_event()) is h11.Data
    assert wrap(started) is False  # h11 is inside a chunk: left to finish it
    assert wrap(connection(bulk=False)) is True


def test_the_private_names_the_reader_uses_are_there() -> None:
    # chunks.py finds h11's reader by name and checks three of its attributes; a release
    # that renames one makes wrap() leave the connection alone and this test fail.
    conn = connection(bulk=False)
    reader = conn._reader  # type: ignore[attr-defined]
    assert type(reader).__name__ == "ChunkedReader"
    assert (reader._bytes_in_chunk, reader._bytes_to_discard, reader._reading_trailer) == (
        0,
        b"",
        False,
    )
    assert type(connection(bulk=True)._reader) is ChunksInBulk  # type: ignore[attr-defined]


# -- random bodies ---------------------------------------------------------------------


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    payloads = draw(st.lists(st.binary(min_size=1, max_size=90), max_size=12))
    return draw(framed(payloads))


@settings(max_examples=400, deadline=None)
@given(body=bodies(), cuts=st.lists(st.integers(0, 2000), max_size=8), eof=st.booleans())
def test_random_bodies_cut_anywhere_read_the_same(body: bytes, cuts: list[int], eof: bool) -> None:
    points = sorted({0, len(body), *(c % (len(body) + 1) for c in cuts)})
    agree([body[a:b] for a, b in itertools.pairwise(points)], eof=eof)
