"""HTTP/1.1 chunked bodies read twice: by h11's own chunked reader and by railings' bulk one.

``transport/chunks.py`` replaces h11's reader for a response body and must read every
body exactly as h11 does. :func:`outcome` reads pieces of a body through an h11 client
connection, with one reader or the other, and reports what a client would see: the data,
how the body ended (trailers included, or the error's message) and the bytes h11 kept.
:func:`framed` draws bodies from payloads with well-formed and malformed framing.
``tests/test_transport_chunks.py`` and the ``http_chunks`` fuzz campaign use both.
"""

from __future__ import annotations

from collections.abc import Sequence

import h11
from hypothesis import strategies as st

from railings.transport.chunks import wrap

__all__ = ["LAST", "Outcome", "chunk", "connection", "framed", "outcome"]

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
LAST = b"0\r\n\r\n"

# (the data, how the body ended, the bytes h11 kept after it)
Outcome = tuple[bytes, tuple[object, ...], bytes]


def connection(bulk: bool) -> h11.Connection:
    """A client connection that sent a request and read a chunked response's head; with
    ``bulk``, its body reader is railings' (``wrap``)."""
    conn = h11.Connection(h11.CLIENT)
    headers = [("host", "x"), ("content-length", "0")]
    conn.send(h11.Request(method="POST", target="/", headers=headers))
    conn.send(h11.EndOfMessage())
    conn.receive_data(HEAD)
    if type(conn.next_event()) is not h11.Response or (bulk and not wrap(conn)):
        raise AssertionError("the response head was not read as a chunked body's")
    return conn


def outcome(pieces: Sequence[bytes], *, bulk: bool, eof: bool) -> tuple[Outcome, int]:
    """What a client reads of ``pieces`` (then the peer's close, with ``eof``), and how
    many ``Data`` events carried it."""
    conn = connection(bulk)
    data, events = bytearray(), 0
    ending: tuple[object, ...] = ("need more",)
    try:
        for piece in [*pieces, b""] if eof else pieces:
            conn.receive_data(piece)
            event = conn.next_event()
            while type(event) is h11.Data:
                data += event.data
                events += 1
                event = conn.next_event()
            if type(event) is h11.EndOfMessage:
                ending = ("end", tuple(event.headers))
                break
    except h11.RemoteProtocolError as exc:
        # The connection is dead: what h11 had taken out of its buffer before raising
        # is no part of what a client sees.
        return (bytes(data), ("error", str(exc)), b""), events
    return (bytes(data), ending, conn.trailing_data[0]), events


def chunk(payload: bytes, size_line: bytes | None = None, crlf: bytes = b"\r\n") -> bytes:
    """``payload`` as one chunk: its size in hex (or ``size_line``), CRLF, the data, ``crlf``."""
    line = b"%x" % len(payload) if size_line is None else size_line
    return line + b"\r\n" + payload + crlf


# Size lines (a %x takes the payload's size), mostly plain; then the footers after a
# chunk's data, mostly CRLF; then the ways a body ends, the last being not at all.
SIZE_LINES = st.sampled_from(
    [None, None, None, b"%X", b"0%x", b"%x;e=1", b"%x ", b"zz", b"+%x", b"", b"%x\t"]
)
FOOTERS = st.sampled_from([b"\r\n"] * 8 + [b"\n", b"XY", b"\r", b"\rX"])
ENDINGS = st.sampled_from(
    [LAST, LAST, b"0\r\nx-a: 1\r\n\r\n", b"0;q\r\n\r\n", b"0\r\nbad header\r\n\r\n", b""]
)


@st.composite
def framed(draw: st.DrawFn, payloads: Sequence[bytes]) -> bytes:
    """``payloads`` as chunks, a few of them (drawn) with a drawn size line and footer,
    then a drawn end."""
    lines: list[bytes | None] = [None] * len(payloads)
    footers = [b"\r\n"] * len(payloads)
    if payloads:
        at = st.integers(0, len(payloads) - 1)
        for index, line, footer in draw(st.lists(st.tuples(at, SIZE_LINES, FOOTERS), max_size=4)):
            lines[index], footers[index] = line, footer
    out = []
    for payload, line, footer in zip(payloads, lines, footers, strict=True):
        size_line = None if line is None else (line % len(payload) if b"%" in line else line)
        out.append(chunk(payload, size_line, footer))
    return b"".join(out) + draw(ENDINGS)
