"""Gzip bodies of several members (RFC 1952 §2.2) through :class:`BodyDecoder`: the
gateway's decoder (``members="all"``) reads every member and refuses bytes that are not
one; the guard's (the default) stops after the first, exactly as httpx2 does. Every case
runs whole, byte by byte, and with trailing data."""

from __future__ import annotations

import gzip
import itertools
import os
import zlib
from collections.abc import Sequence

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from railings.gateway.decoding import stream_decoder
from railings.transport.coding import PIECE, BodyDecoder, Members

EVENTS = [b'data: {"n": %d}\n\n' % n for n in range(5)] + [b"data: [DONE]\n\n"]
MEMBERS = b"".join(gzip.compress(event) for event in EVENTS)


def decoded(
    raw: bytes, applied: Sequence[str] = ("gzip",), *, members: Members, split: int = 0
) -> bytes:
    decoder = BodyDecoder(applied, members=members)
    pieces = [raw[i : i + split] for i in range(0, len(raw), split)] if split else [raw]
    return b"".join(itertools.chain(*(decoder.feed(p) for p in pieces), decoder.close()))


@pytest.mark.parametrize("split", [0, 1, 7])
def test_every_member_is_read_by_the_gateways_decoder(split: int) -> None:
    assert decoded(MEMBERS, members="all", split=split) == b"".join(EVENTS)


def test_the_gateways_stream_decoder_reads_every_member() -> None:
    decoder = stream_decoder(["gzip"])
    assert decoder is not None
    got = b"".join(
        itertools.chain(*(decoder.feed(MEMBERS[i : i + 1]) for i in range(len(MEMBERS))))
    )
    assert got + b"".join(decoder.close()) == b"".join(EVENTS)


@pytest.mark.parametrize("split", [0, 1, 7])
@pytest.mark.parametrize(
    "trailing", [b"x", b"\x00", b"\x00" * 10, b"garbage after it", b"\x1f\x00"]
)
def test_bytes_after_a_member_that_are_no_member_raise(split: int, trailing: bytes) -> None:
    # Never silently dropped: a proof hidden behind them would never be judged.
    with pytest.raises(zlib.error):
        decoded(MEMBERS + trailing, members="all", split=split)


@pytest.mark.parametrize("split", [0, 1])
def test_a_cut_last_member_yields_what_decodes_without_an_error(split: int) -> None:
    last = gzip.compress(b"data: [DONE]\n\n")
    for cut in (1, 2, 11, len(last) - 1):
        raw = gzip.compress(EVENTS[0]) + last[:cut]
        assert decoded(raw, members="all", split=split).startswith(EVENTS[0])


def test_a_large_member_then_another_is_read_in_bounded_pieces() -> None:
    big = os.urandom(64) * (3 * PIECE // 64 + 5)
    raw = gzip.compress(big, compresslevel=1) + gzip.compress(b"tail")
    decoder = BodyDecoder(["gzip"], members="all")
    pieces = [*decoder.feed(raw), *decoder.close()]
    assert max(map(len, pieces)) <= PIECE
    assert b"".join(pieces) == big + b"tail"  # no byte of the next member read twice


@pytest.mark.parametrize("wbits", [zlib.MAX_WBITS, -zlib.MAX_WBITS])
def test_bytes_after_a_deflate_stream_raise_in_the_gateway(wbits: int) -> None:
    packer = zlib.compressobj(wbits=wbits)
    raw = packer.compress(b"data: [DONE]\n\n") + packer.flush()
    assert decoded(raw, ["deflate"], members="all") == b"data: [DONE]\n\n"
    with pytest.raises(zlib.error):
        decoded(raw + raw, ["deflate"], members="all")


def test_members_under_another_coding_are_read_too() -> None:
    # gzip applied, then deflate: the deflate layer holds a gzip file of several members.
    packer = zlib.compressobj()
    raw = packer.compress(MEMBERS) + packer.flush()
    assert decoded(raw, ["gzip", "deflate"], members="all", split=3) == b"".join(EVENTS)


def test_members_is_first_or_all() -> None:
    with pytest.raises(ValueError, match="members"):
        BodyDecoder(["gzip"], members="some")  # type: ignore[arg-type]


# -- the guard's decoder: what httpx2 decodes, no more -------------------------------------------


@pytest.mark.parametrize("split", [0, 1, 7])
@pytest.mark.parametrize("trailing", [b"", b"x", b"garbage after it", MEMBERS])
def test_the_guards_decoder_stops_after_the_first_member_as_httpx2_does(
    split: int, trailing: bytes
) -> None:
    raw = MEMBERS + trailing
    httpx2_reads = httpx2.Response(200, headers={"content-encoding": "gzip"}, content=raw).read()
    assert httpx2_reads == EVENTS[0]  # if httpx2 ever reads every member, so must the guard
    assert decoded(raw, members="first", split=split) == httpx2_reads
    default = BodyDecoder(["gzip"])
    assert b"".join([*default.feed(raw), *default.close()]) == httpx2_reads


@given(
    st.lists(st.binary(max_size=300), min_size=1, max_size=4),
    st.binary(max_size=20),
    st.integers(1, 200),
)
def test_the_guard_reads_any_members_and_tail_as_httpx2(
    parts: list[bytes], tail: bytes, split: int
) -> None:
    raw = b"".join(gzip.compress(part) for part in parts) + tail
    expected = httpx2.Response(200, headers={"content-encoding": "gzip"}, content=raw).read()
    assert decoded(raw, members="first", split=split) == expected


@given(st.lists(st.binary(max_size=300), min_size=1, max_size=4), st.integers(1, 200))
def test_the_gateway_reads_any_members_as_gzip_does(parts: list[bytes], split: int) -> None:
    raw = b"".join(gzip.compress(part) for part in parts)
    assert decoded(raw, members="all", split=split) == gzip.decompress(raw)
