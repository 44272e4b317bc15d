"""HTTP/1.1 chunked bodies decoded in bulk: every well-formed chunk received, one event.

h11 decodes a chunked body one chunk per ``next_event()``: a line match, a ``Data``
event and a pass through its state machine for each chunk. A provider flushes one SSE
event per chunk, so on loopback that is a cost of the order of decoding the SSE event
itself (docs/PERFORMANCE.md, "The read path"). :class:`ChunksInBulk` takes the place of
h11's ``ChunkedReader`` for one response body and returns, per call, one ``Data`` event
holding every chunk in h11's receive buffer.

Theory of operation. The reader decodes only the common chunk itself: a size line of
1 to 20 hex digits and CRLF (what h11 accepts when there is no extension and no
whitespace), that many bytes of data, CRLF. Data is handed over as it arrives, so a
chunk longer than what was received goes up in pieces, as h11's does, and the buffer
holds no more than h11's would: an unfinished size line at most. Anything else found at
a chunk boundary (a chunk extension, whitespace, an illegal size line, the last chunk
and its trailers) hands the rest of the body to h11's own reader, which is then in
exactly the state it would have reached by itself: at a boundary, with nothing half
read. From there on every byte, every error and the end of the message are h11's. The
two checks the reader makes itself are h11's own, with h11's messages: a chunk's data
must be followed by CRLF (raised once the data before it went up), and the peer closing
mid-body is ``read_eof``.

This is hand-written because it is the read path's hottest loop and because it must
stay exactly h11's decoding: ``tests/test_transport_chunks.py`` runs random bodies, cut
at random, through both and compares every byte and every outcome. It takes the place of
a private class of h11 and repeats h11's own footer check, so, like :mod:`.bulk`, which
alone installs it, it is used only on the h11 version the suite verified
(:mod:`.verified`) and only while the accelerations are on.
"""

from __future__ import annotations

import re
from typing import Protocol

import h11

__all__ = ["ChunksInBulk", "wrap"]

# h11's reader class; found by name, so a release that moves it only turns this off.
_ChunkedReader: type | None = getattr(getattr(h11, "_readers", None), "ChunkedReader", None)

# A size line this reader decodes itself: h11's chunk-size rule without extension or
# whitespace (h11/_abnf.py: chunk_size = HEXDIG{1,20}).
_SIZE = re.compile(rb"[0-9A-Fa-f]{1,20}")
_CRLF = b"\r\n"


class _ReceiveBuffer(Protocol):
    """What the reader uses of h11's receive buffer (the same calls h11's readers make)."""

    def __bytes__(self) -> bytes: ...
    def maybe_extract_at_most(self, count: int) -> bytearray | None: ...


class ChunksInBulk:
    """h11's ``ChunkedReader`` for one body, decoding every well-formed chunk received
    per call (the module's docstring says what it reads itself and what it leaves to
    h11). Called by ``h11.Connection`` as a reader: ``reader(buffer)`` returns a
    ``Data``, an ``EndOfMessage`` (h11's) or None (more bytes needed)."""

    __slots__ = ("_crlf", "_h11", "_left", "_own")

    def __init__(self, h11_reader: object) -> None:
        self._h11 = h11_reader  # a fresh h11 ChunkedReader: at a boundary, nothing read
        self._own = True  # False once the rest of the body is h11's
        self._left = 0  # bytes of the current chunk's data still to come
        self._crlf = b""  # what is still expected of the CRLF after a chunk's data

    def __call__(self, buffer: _ReceiveBuffer) -> h11.Event | None:
        """The next event of the body from ``buffer``, taking what it decodes out of it."""
        if not self._own:
            return self._h11(buffer)  # type: ignore[operator, no-any-return]
        data = bytes(buffer)
        size, at, parts = len(data), 0, []
        left, crlf = self._left, self._crlf
        while at < size:
            if left:  # inside a chunk's data: take what arrived of it
                end = at + left
                if end > size:
                    parts.append(data[at:])
                    left, at = end - size, size
                    break
                parts.append(data[at:end])
                left, at, crlf = 0, end, _CRLF
            if crlf:  # after a chunk's data: h11 requires CRLF there
                got = data[at : at + len(crlf)]
                if got != crlf[: len(got)]:
                    if parts:
                        break  # the data before it goes up first; the next call raises
                    # h11's own error and message (h11/_readers.py, ChunkedReader)
                    raise h11.LocalProtocolError(
                        f"malformed chunk footer: {bytearray(got)!r} (expected {crlf!r})"
                    )
                at += len(got)
                crlf = crlf[len(got) :]
                if crlf:
                    break
            line_end = data.find(_CRLF, at)
            if line_end < 0:
                break  # an unfinished line waits, as in h11 (which bounds the buffer)
            if _SIZE.fullmatch(data, at, line_end) is None:
                self._own = False  # an extension, whitespace or an illegal line: h11's
                break
            left = int(data[at:line_end], 16)
            if not left:
                self._own = False  # the last chunk and its trailers: h11 ends the message
                break
            at = line_end + 2
        self._left, self._crlf = left, crlf
        if at:
            buffer.maybe_extract_at_most(at)
        if parts:
            return h11.Data(data=parts[0] if len(parts) == 1 else b"".join(parts))
        if not self._own:
            return self._h11(buffer)  # type: ignore[operator, no-any-return]
        return None

    def read_eof(self) -> h11.Event:
        """The peer closed mid-body: h11's own verdict (an incomplete chunked read
        raises ``RemoteProtocolError``)."""
        return self._h11.read_eof()  # type: ignore[attr-defined, no-any-return]


def wrap(connection: h11.Connection) -> bool:
    """Give ``connection`` a :class:`ChunksInBulk` for the body it is about to read;
    False (and the connection left as it is) unless that body is chunked and h11's
    reader has read none of it."""
    reader = getattr(connection, "_reader", None)
    if _ChunkedReader is None or type(reader) is not _ChunkedReader:
        return False
    fresh = (
        getattr(reader, "_bytes_in_chunk", None) == 0
        and getattr(reader, "_bytes_to_discard", None) == b""
        and getattr(reader, "_reading_trailer", None) is False
    )
    if not fresh:
        return False
    connection._reader = ChunksInBulk(reader)
    return True
