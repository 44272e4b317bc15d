"""The error a stream met after the events it returns: raised by its next call.

Every bytes-to-frames decoder (SSE, event-stream, NDJSON) and every bytes-to-events
stream of the newer wires (``GeminiStream``, ``BedrockStream``, ``OllamaStream``)
decodes every frame a chunk completed. When one is malformed (or over its bound), what
the frames before it gave is returned and the error waits for the next call: a caller
gets the same frames or events, then the same error, however the bytes were split.
After the error the decoder reads nothing more. :class:`Held` is that rule, with the
state it needs (``feed`` is legal only while open, ``close`` is idempotent); the framers
are :class:`Held`, and each stream keeps a :class:`HeldError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final, TypeVar

from railings.errors import IllegalTransition, MalformedStream
from railings.events import StreamEvent

__all__ = ["CLOSED", "FAILED", "OPEN", "Held", "HeldError"]

OPEN: Final = "open"
CLOSED: Final = "closed"
FAILED: Final = "failed"

_Frame = TypeVar("_Frame")


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


class HeldError(Held):
    """One stream's held error and whether it failed."""

    __slots__ = ()

    def check(self, call: str) -> bool:
        """Before ``call`` (``feed`` or ``close``): raise the held error; True when the
        stream failed already (``feed`` then raises :class:`IllegalTransition`)."""
        return not self._open(call)

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
            self._hold(exc, bool(out))
        return out
