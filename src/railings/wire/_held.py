"""The error a stream met after the events it returns: raised by its next call.

Every bytes-to-frames decoder (SSE, event-stream, NDJSON) and every bytes-to-events
stream of the newer wires (``GeminiStream``, ``BedrockStream``, ``OllamaStream``)
decodes every frame a chunk completed. When one is malformed (or over its bound), what
the frames before it gave is returned and the error waits for the next call: a caller
gets the same frames or events, then the same error, however the bytes were split.
After the error the decoder reads nothing more. :class:`Held` is that rule, with the
state it needs (``feed`` is legal only while open, ``close`` is idempotent); the framers
are :class:`Held`, and so is :class:`HeldStream`, the one shape of the three streams.
"""

from __future__ import annotations

from typing import Final, Generic, Protocol, TypeVar

from railings.errors import IllegalTransition, MalformedStream
from railings.events import StreamEvent

__all__ = ["CLOSED", "FAILED", "OPEN", "Held", "HeldStream"]

OPEN: Final = "open"
CLOSED: Final = "closed"
FAILED: Final = "failed"

_Frame = TypeVar("_Frame")
_Frame_contra = TypeVar("_Frame_contra", contravariant=True)


class Held:
    """A decoder's state (:data:`OPEN`, :data:`CLOSED` or :data:`FAILED`) and the error it
    holds for its next call."""

    __slots__ = ("_failure", "_state")

    def __init__(self) -> None:
        self._state = OPEN
        self._failure: MalformedStream | None = None

    @property
    def failure(self) -> MalformedStream | None:
        """The error met after what the last call returned, which the next call raises
        (None when there is none)."""
        return self._failure

    def _open(self, call: str) -> bool:
        """Before ``call`` (``feed`` or ``close``): raise the held error, and for ``feed``
        :class:`IllegalTransition` once the decoder is not open; True while it is.
        (Compared by value: a decoder copied by pickle holds an equal string that is not
        the module's constant.)"""
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure
        if self._state != OPEN and call == "feed":
            raise IllegalTransition(self._state, call)
        return self._state == OPEN

    def _hold(self, error: MalformedStream, after: bool) -> None:
        """``error`` was met, ``after`` frames the call returns (or not): the decoder fails,
        and the error is raised now when nothing came before it, else by the next call."""
        self._fail()
        if not after:
            raise error
        self._failure = error

    def _fail(self) -> None:
        self._state = FAILED


class _Framer(Protocol[_Frame]):
    def feed(self, chunk: bytes, /) -> list[_Frame]: ...
    def close(self) -> list[_Frame]: ...


class _FrameDecoder(Protocol[_Frame_contra]):
    def feed(self, frame: _Frame_contra, /) -> list[StreamEvent]: ...
    def close(self) -> list[StreamEvent]: ...


class HeldStream(Held, Generic[_Frame]):
    """Bytes in, normalized events out: a framer (SSE, event-stream or NDJSON) and the
    wire's decoder of its frames, with the error a malformed frame left held for the
    next call. ``seen`` counts the frames handed to the decoder."""

    __slots__ = ("_decoder", "_frames", "seen")

    def __init__(self, frames: _Framer[_Frame], decoder: _FrameDecoder[_Frame]) -> None:
        super().__init__()
        self._frames = frames
        self._decoder = decoder
        self.seen = 0

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """The normalized events of the frames ``chunk`` completed."""
        self._open("feed")
        return self._decode(self._frames.feed(chunk))

    def close(self) -> list[StreamEvent]:
        """EOF: the framer's last frames (a frame cut short raises), then what the
        decoder's own close gives; nothing once the stream failed."""
        if not self._open("close"):
            return []
        return self._decode(self._frames.close()) + self._decoder.close()

    def _decode(self, frames: list[_Frame]) -> list[StreamEvent]:
        """The events of ``frames``, up to a malformed one: raised at once when none came
        before it, else held for the next call."""
        out: list[StreamEvent] = []
        try:
            for frame in frames:
                self.seen += 1
                out += self._decoder.feed(frame)
        except MalformedStream as exc:
            self._hold(exc, bool(out))
        return out
