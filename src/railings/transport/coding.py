"""Content codings, undone exactly the way httpx2 undoes them, in bounded pieces.

The guard judges the bytes an SDK reads, and an SDK reads what httpx2 decodes,
so the guard must decode the same codings, the same way, or judge bytes nobody
reads. httpx2 (``Response._get_content_decoder``, ``httpx2/_decoders.py``):

1. takes every ``Content-Encoding`` header, splits each at commas, strips and
   lowercases the values: two ``identity`` headers, ``GZIP`` and
   ``gzip, identity`` all mean what they say;
2. drops ``identity`` and every value it has no decoder for -- ``utf-8`` (a
   common misconfiguration), ``x-gzip``, ``compress``, and ``br`` / ``zstd``
   when their modules are not importable -- and passes those bytes through as
   they are;
3. refuses more than five codings (``DecodingError``);
4. undoes them in the reverse of the order they were applied; ``deflate`` is
   zlib-wrapped, or raw when its first piece does not read as zlib; a gzip body
   ends at the end of its first member (RFC 1952 allows several, one after
   another) and whatever follows a member or a deflate stream is ignored.

:func:`codings` is steps 1-3, :class:`BodyDecoder` is step 4 for the codings
railings reads (gzip, deflate). A coding httpx2 decodes that railings does not
(``br``, ``zstd`` when importable) is :class:`Unreadable`: the guard then
refuses the stream instead of passing it unjudged. Each ``feed`` inflates in
pieces of at most 1 MiB (httpx2's ``MAX_DECODE_CHUNK_SIZE``), so a small body
that inflates to gigabytes is never held whole. The gateway, whose clients get
the decoded bytes rather than httpx2's reading of them, asks for every gzip member
instead (``BodyDecoder(..., members="all")``); the guard keeps httpx2's reading.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import zlib
from collections.abc import Iterator, Sequence
from typing import Literal

__all__ = [
    "HTTPX2_CODINGS",
    "MAX_CODINGS",
    "PIECE",
    "READABLE",
    "BodyDecoder",
    "Members",
    "Unreadable",
    "codings",
]

PIECE = 2**20  # httpx2's MAX_DECODE_CHUNK_SIZE
MAX_CODINGS = 5  # httpx2's MultiDecoder.max_decode_links
READABLE = frozenset({"gzip", "deflate"})

_GZIP_MAGIC = b"\x1f\x8b"  # RFC 1952 2.3.1: ID1, ID2

Members = Literal["first", "all"]
"""What :class:`BodyDecoder` reads after the first gzip member (its ``members``)."""


def _importable(*modules: str) -> bool:
    for name in modules:
        try:
            if importlib.util.find_spec(name) is not None:
                return True
        except (ImportError, ValueError):
            continue
    return False


def _httpx2_codings() -> frozenset[str]:
    """httpx2's ``SUPPORTED_DECODERS`` keys, found the way httpx2 finds them."""
    found = {"identity", "gzip", "deflate"}
    if _importable("brotli", "brotlicffi"):
        found.add("br")
    zstd = ("compression.zstd",) if sys.version_info >= (3, 14) else ("backports.zstd",)
    if _importable(*zstd):
        found.add("zstd")
    return frozenset(found)


# What httpx2 decodes in this process (a test checks it against httpx2's own table).
HTTPX2_CODINGS = _httpx2_codings()


class Unreadable(Exception):
    """httpx2 would decode this body, but railings cannot: it cannot be judged."""


def codings(values: Sequence[str]) -> list[str]:
    """The codings httpx2 undoes for these ``Content-Encoding`` header values, in the
    order they were applied. Raises :class:`Unreadable` for more than five."""
    found: list[str] = []
    for value in values:
        for item in value.split(","):
            coding = item.strip().lower()
            if coding != "identity" and coding in HTTPX2_CODINGS:
                found.append(coding)
    if len(found) > MAX_CODINGS:
        raise Unreadable(f"more than {MAX_CODINGS} content codings")
    return found


class _Inflate:
    """One gzip or deflate layer, drained in pieces of at most ``PIECE`` bytes."""

    __slots__ = ("_all", "_first", "_lead", "_wbits", "_z")

    def __init__(self, coding: str, members: Members) -> None:
        self._wbits = zlib.MAX_WBITS | 16 if coding == "gzip" else zlib.MAX_WBITS
        self._z = zlib.decompressobj(self._wbits)
        self._all = members == "all"
        self._first = coding == "deflate"  # the raw deflate fallback is still open
        # The first byte of a member after the first (b"" until it comes); None before.
        self._lead: bytes | None = None

    def feed(self, data: bytes) -> Iterator[bytes]:
        fallback, self._first = self._first, False
        if self._z.eof:
            if not self._all:
                return  # httpx2: what follows the first member is never read
            data, self._z = self._z.unused_data + data, self._next_member()
        try:
            piece = self._inflate(data)
        except zlib.error:
            if not fallback:
                raise
            # httpx2: a deflate body whose first piece is not zlib is read as raw deflate.
            self._wbits = -zlib.MAX_WBITS
            self._z = zlib.decompressobj(self._wbits)
            piece = self._inflate(data)
        while True:
            while piece:
                yield piece
                # At the end of a member zlib keeps the rest in ``unconsumed_tail`` as
                # well as in ``unused_data``: reading the tail again would repeat it.
                piece = b"" if self._z.eof else self._inflate(self._z.unconsumed_tail)
            if not (self._all and self._z.eof and self._z.unused_data):
                return
            # RFC 1952 2.2: a gzip file is a series of members; the next one starts here.
            rest, self._z = self._z.unused_data, self._next_member()
            piece = self._inflate(rest)

    def _inflate(self, data: bytes) -> bytes:
        if self._lead == b"":
            self._lead = data[:1]
        return self._z.decompress(data, PIECE)

    def _next_member(self) -> zlib._Decompress:
        """The decompressor for bytes after the end of a member: the next gzip member;
        a deflate stream has no members, so nothing may follow it."""
        if self._wbits != zlib.MAX_WBITS | 16:
            raise zlib.error("bytes after the end of the deflate stream")
        self._lead = b""
        return zlib.decompressobj(self._wbits)

    def close(self) -> Iterator[bytes]:
        # zlib reads a member's two magic bytes before it judges them: one byte that
        # cannot start a member is refused here, not taken for a cut member.
        if self._lead not in (None, b"", _GZIP_MAGIC[:1]):
            raise zlib.error("bytes after the last gzip member that are not a member")
        # The bytes of a cut stream that are still decodable; never an error for the cut.
        tail = self._z.flush()
        if tail:
            yield tail


class BodyDecoder:
    """Undo ``applied`` codings (as :func:`codings` returns them), piece by piece.

    ``feed(chunk)`` and ``close()`` yield decoded pieces of at most 1 MiB each
    (``close`` may yield one flush of what a cut stream still held). A body that
    does not decode raises ``zlib.error``; a coding railings cannot read raises
    :class:`Unreadable` at construction.

    ``members``: what follows the end of the first gzip member or deflate stream.
    ``"first"`` (the default, the guard's) reads nothing after it, as httpx2's
    ``GZipDecoder`` and ``DeflateDecoder`` do: the SDK above the guard reads only
    that, so the guard judges only that. ``"all"`` (the gateway's, whose clients get
    the decoded bytes) reads every gzip member, as RFC 1952 §2.2, gzip -d, urllib3
    and Go's ``compress/gzip`` do, and raises ``zlib.error`` for bytes that are not
    the start of a member (or any after a deflate stream): never silently dropped.
    """

    __slots__ = ("_layers",)

    def __init__(self, applied: Sequence[str], *, members: Members = "first") -> None:
        if members not in ("first", "all"):
            raise ValueError(f"members must be 'first' or 'all', not {members!r}")
        for coding in applied:
            if coding not in READABLE:
                raise Unreadable(f"content-encoding {coding!r} is decoded by httpx2, not here")
        self._layers = [_Inflate(coding, members) for coding in reversed(applied)]

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``chunk``, made as they are read (``zlib.error`` then too)."""
        pieces: Iterator[bytes] = iter((chunk,))
        for layer in self._layers:
            pieces = _pipe(layer, pieces)
        return pieces

    def close(self) -> Iterator[bytes]:
        """What the layers still hold at the end of the body, each flushed into the next;
        a cut body yields what still decodes, never an error for the cut."""
        pieces: Iterator[bytes] = iter(())
        for layer in self._layers:
            pieces = itertools.chain(_pipe(layer, pieces), layer.close())
        return pieces


def _pipe(layer: _Inflate, upstream: Iterator[bytes]) -> Iterator[bytes]:
    for data in upstream:
        yield from layer.feed(data)
