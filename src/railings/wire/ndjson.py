"""NDJSON framing: bytes to lines of newline-delimited JSON, one JSON object per line.

The framing of Ollama's native ``/api/chat`` and ``/api/generate`` streams
(``application/x-ndjson``), as :mod:`railings.wire.sse` is the framing of the SSE
wires: the reader (:mod:`railings.turn.framing`) cuts a body into lines here and hands
each to the wire's decoder.
"""

from __future__ import annotations

from railings.errors import ConfigurationError, EventTooLarge, MalformedStream
from railings.wire._held import CLOSED, Held
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE

__all__ = ["NDJSONDecoder"]


class NDJSONDecoder(Held):
    """Bytes to lines of newline-delimited JSON: ``feed(bytes) -> list[str]``.

    Lines end at LF (a CR before it is dropped); blank lines are skipped. No line may
    be longer than ``max_line_size`` bytes: past it
    :class:`~railings.errors.EventTooLarge`. Each line is decoded as UTF-8, strictly:
    a line that is not is :class:`~railings.errors.MalformedStream`. At :meth:`close`,
    a last line without its LF is returned too: a complete JSON object proves itself
    by its closing brace, and one cut short fails to parse in the next layer.

    The lines a chunk completed before a bad one are returned, and the error is raised
    by the next call (:meth:`feed` or :meth:`close`; :attr:`failure` says one is
    held): what the caller gets never depends on how the bytes were split. After an
    error the decoder refuses further input.
    """

    __slots__ = ("_max", "_parts", "_size")

    def __init__(self, *, max_line_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        if max_line_size < 1:
            raise ConfigurationError(f"max_line_size must be positive, got {max_line_size}")
        super().__init__()
        self._max = max_line_size
        self._parts: list[bytes] = []  # the line not yet ended, in pieces
        self._size = 0

    @property
    def pending(self) -> bool:
        """True while a line has begun and no LF has ended it."""
        return self._size > 0

    def feed(self, chunk: bytes) -> list[str]:
        """The lines ``chunk`` completed."""
        self._open("feed")
        pieces = chunk.split(b"\n")
        tail = pieces.pop()
        out: list[str] = []
        try:
            for index, piece in enumerate(pieces):
                if index == 0 and self._parts:
                    self._check(self._size + len(piece))
                    self._parts.append(piece)
                    piece = b"".join(self._parts)
                    self._parts, self._size = [], 0
                else:
                    self._check(len(piece))
                line = _decode(piece)
                if line.strip():
                    out.append(line)
            if tail:
                self._check(self._size + len(tail))
                self._parts.append(tail)
                self._size += len(tail)
        except MalformedStream as exc:  # EventTooLarge too
            self._hold(exc, bool(out))  # the lines before it are whole: theirs first
        return out

    def close(self) -> list[str]:
        """EOF: the last line if it had no LF (see the class docstring), else nothing."""
        if not self._open("close"):
            return []  # idempotent; a failed decoder already raised
        self._state = CLOSED
        piece = b"".join(self._parts)
        self._parts, self._size = [], 0
        line = _decode(piece)
        return [line] if line.strip() else []

    def _check(self, size: int) -> None:
        if size > self._max:
            raise EventTooLarge(f"NDJSON line longer than {self._max} bytes", limit=self._max)

    def _fail(self) -> None:
        super()._fail()
        self._parts, self._size = [], 0


def _decode(raw: bytes) -> str:
    """A line without its end (LF, and the CR before it), decoded."""
    try:
        return raw.removesuffix(b"\r").decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedStream("ollama: a line is not UTF-8") from None
