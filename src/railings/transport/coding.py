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
   zlib-wrapped, or raw when its first piece does not read as zlib.

:func:`codings` is steps 1-3, :class:`BodyDecoder` is step 4 for the codings
railings reads (gzip, deflate). A coding httpx2 decodes that railings does not
(``br``, ``zstd`` when importable) is :class:`Unreadable`: the guard then
refuses the stream instead of passing it unjudged. Each ``feed`` inflates in
pieces of at most 1 MiB (httpx2's ``MAX_DECODE_CHUNK_SIZE``), so a small body
that inflates to gigabytes is never held whole.
"""

from __future__ import annotations

import importlib.util
import sys
import zlib
from collections.abc import Iterator, Sequence

__all__ = [
    "HTTPX2_CODINGS",
    "MAX_CODINGS",
    "PIECE",
    "READABLE",
    "BodyDecoder",
    "Unreadable",
    "codings",
]

PIECE = 2**20  # httpx2's MAX_DECODE_CHUNK_SIZE
MAX_CODINGS = 5  # httpx2's MultiDecoder.max_decode_links
READABLE = frozenset({"gzip", "deflate"})


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

    __slots__ = ("_first", "_raw_fallback", "_z")

    def __init__(self, coding: str) -> None:
        wbits = zlib.MAX_WBITS | 16 if coding == "gzip" else zlib.MAX_WBITS
        self._z = zlib.decompressobj(wbits)
        self._raw_fallback = coding == "deflate"
        self._first = True

    def feed(self, data: bytes) -> Iterator[bytes]:
        first, self._first = self._first, False
        try:
            piece = self._z.decompress(data, PIECE)
        except zlib.error:
            if not (first and self._raw_fallback):
                raise
            # httpx2: a deflate body whose first piece is not zlib is read as raw deflate.
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            piece = self._z.decompress(data, PIECE)
        while piece:
            yield piece
            piece = self._z.decompress(self._z.unconsumed_tail, PIECE)

    def close(self) -> Iterator[bytes]:
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
    """

    __slots__ = ("_layers",)

    def __init__(self, applied: Sequence[str]) -> None:
        for coding in applied:
            if coding not in READABLE:
                raise Unreadable(f"content-encoding {coding!r} is decoded by httpx2, not here")
        self._layers = [_Inflate(coding) for coding in reversed(applied)]

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
            pieces = _chain(_pipe(layer, pieces), layer)
        return pieces


def _pipe(layer: _Inflate, upstream: Iterator[bytes]) -> Iterator[bytes]:
    for data in upstream:
        yield from layer.feed(data)


def _chain(first: Iterator[bytes], layer: _Inflate) -> Iterator[bytes]:
    yield from first
    yield from layer.close()
