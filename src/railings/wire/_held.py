"""The error a stream met after the events it returns: raised by its next call.

The bytes-to-events streams of the newer wires (``GeminiStream``, ``BedrockStream``,
``OllamaStream``) decode every frame a chunk completed. When one of them is malformed,
the events of the frames before it are returned and the error waits for the next call
(:meth:`HeldError.check`), as the framers themselves do
(:attr:`~railings.wire.eventstream.EventStreamDecoder.failure`): a caller gets the same
events, then the same error, however the bytes were split. After the error the stream
reads nothing more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from railings.errors import IllegalTransition, MalformedStream
from railings.events import StreamEvent

__all__ = ["HeldError"]

_Frame = TypeVar("_Frame")


class HeldError:
    """One stream's held error and whether it failed."""

    __slots__ = ("_failed", "_failure")

    def __init__(self) -> None:
        self._failure: MalformedStream | None = None
        self._failed = False

    @property
    def failure(self) -> MalformedStream | None:
        """The error the next call raises (None when there is none)."""
        return self._failure

    def check(self, call: str) -> bool:
        """Before ``call`` (``feed`` or ``close``): raise the held error; True when the
        stream failed already (``feed`` then raises :class:`IllegalTransition`)."""
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure
        if self._failed and call == "feed":
            raise IllegalTransition("failed", call)
        return self._failed

    def decode(
        self, frames: Iterable[_Frame], decode: Callable[[_Frame], list[StreamEvent]]
    ) -> list[StreamEvent]:
        """The events of ``frames`` (each through ``decode``), up to a malformed one:
        raised at once when none came before it, else held for the next call."""
        out: list[StreamEvent] = []
        try:
            for frame in frames:
                out += decode(frame)
        except MalformedStream as exc:
            self._failed = True
            if not out:
                raise
            self._failure = exc
        return out
