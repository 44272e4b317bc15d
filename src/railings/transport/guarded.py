"""The guard's byte streams: thin sync and async shells around one :class:`.StreamWatch`.

Each reading of a watched body gets a watch of its own (a mock body can be read
twice; its second reading is judged alone, never appended to the first). Chunks
pass through unchanged while the watch takes them; then:

* the body ended without raising (EOF without the proof, a bound, a body that
  does not decode, only keep-alives): the guard raises the watch's httpx2 error;
* the inner stream raised: that very exception goes on, as the plain SDK would
  see it, with the verdict attached (:func:`attach`: a note for tracebacks, and
  the :data:`VERDICT` attribute that :func:`railings.guard.interruption` reads).
  Only a connection break after the proof ends the body quietly instead: the
  answer and its proof arrived, and the proof is data, not the close.

The idle clock needs one adapter. httpcore2 reads an HTTP/2 stream's read
timeout on every read, but an HTTP/1.1 body's once, when the body starts
(``_receive_response_body``). The guard lowers it at the first content, mid-body,
so for an HTTP/1.1 body it makes that connection's reads take the read timeout
from the request's ``timeout`` extension on every read, as HTTP/2 does
(:func:`follow_read_timeout`), for this body only: the connection's own ``read``
is back before the body is released to the pool.

That adapter relies on how httpcore2 reads an HTTP/1.1 body (the response's
``network_stream`` extension is the stream it reads, through ``read(max_bytes,
timeout)``), so it is used only on the httpx2 / httpcore2 versions the suite
verified (:data:`VERIFIED_VERSIONS`, checked once at import: :data:`READS_FOLLOW`).
On any other version an HTTP/1.1 body is read the stock way: the SDK's own read
timeout stays in force for the whole body (the idle gap is not armed), and the
guard's content clock, which needs no socket, still ends a stream of nothing but
keep-alives.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import Any, Generic, TypeVar

import httpx2

from railings.errors import StreamInterrupted
from railings.transport import verified as versions
from railings.transport.watch import StreamWatch

__all__ = [
    "READS_FOLLOW",
    "VERDICT",
    "VERIFIED_VERSIONS",
    "AsyncGuardStream",
    "GuardStream",
    "attach",
    "follow_read_timeout",
]

VERDICT = "railings_interruption"

# The versions whose HTTP/1.1 reading follow_read_timeout relies on, as verified by
# tests/test_guard_sdk.py and tests/test_guard_read_timeout.py. Any other version keeps
# httpcore2's own reads.
VERIFIED_VERSIONS = {"httpx2": "2.16.2", "httpcore2": "2.16.2"}


def verified() -> bool:
    """Are the installed httpx2 and httpcore2 the :data:`VERIFIED_VERSIONS`?"""
    return versions.matches(VERIFIED_VERSIONS)


READS_FOLLOW = verified()
"""True when an HTTP/1.1 body's reads may be made to follow the request's read timeout
(:func:`follow_read_timeout`); otherwise they stay httpcore2's own."""


def attach(exc: BaseException, verdict: StreamInterrupted) -> None:
    """Attach railings' verdict to ``exc``, which goes on unchanged: the attribute
    :data:`VERDICT` and a note (PEP 678) saying what railings found. Once only: a
    guard around a guard adds nothing."""
    if getattr(exc, VERDICT, None) is not None:
        return
    # An exception class with __slots__ takes no attribute: the note still tells.
    with contextlib.suppress(AttributeError):
        setattr(exc, VERDICT, verdict)
    exc.add_note(f"railings: {verdict.message}")


def follow_read_timeout(extensions: dict[str, Any], timeouts: object) -> Callable[[], None] | None:
    """For an HTTP/1.1 body: its connection's reads take the read timeout from
    ``timeouts`` on every read (see the module docstring). Returns the undo, or None
    when this body's reads will not follow a change of ``timeouts`` (an HTTP/1.1 body
    on versions not verified, or a stream that cannot be adapted)."""
    if extensions.get("http_version") != b"HTTP/1.1" or not isinstance(timeouts, dict):
        return _nothing  # HTTP/2 reads it on every read; nothing else reads it
    stream = extensions.get("network_stream")
    if not READS_FOLLOW or stream is None or not hasattr(stream, "__dict__"):
        return None
    if "read" in vars(stream):
        return _nothing  # already adapted (a guard around a guard)
    read = stream.read
    patched: Callable[..., Any]
    if inspect.iscoroutinefunction(read):

        async def patched(max_bytes: int, timeout: float | None = None) -> bytes:
            result: bytes = await read(max_bytes, timeouts.get("read", timeout))
            return result

    else:

        def patched(max_bytes: int, timeout: float | None = None) -> bytes:
            result: bytes = read(max_bytes, timeouts.get("read", timeout))
            return result

    stream.read = patched

    def undo() -> None:
        if vars(stream).get("read") is patched:
            del stream.read

    return undo


def _nothing() -> None:
    return None


S = TypeVar("S", httpx2.SyncByteStream, httpx2.AsyncByteStream)


class _Watched(Generic[S]):
    """What both byte streams hold: the inner body, how to watch a reading of it, and the
    undo of the read adapter of the reading in progress."""

    def __init__(
        self,
        inner: S,
        watch: Callable[[], StreamWatch],
        extensions: dict[str, Any],
        timeouts: object,
    ) -> None:
        self._inner: S = inner
        self._watch = watch
        self._extensions = extensions
        self._timeouts = timeouts
        self._undo: Callable[[], None] = _nothing

    def _start(self) -> StreamWatch:
        """A reading's fresh watch (refusing a coding it cannot read), the body's reads
        adapted for its idle gap; where they cannot follow it, the SDK's read timeout stays."""
        watch = self._watch()
        error = watch.refused()
        if error is not None:
            raise error
        undo = follow_read_timeout(self._extensions, self._timeouts)
        if undo is None:
            watch.keep_read_timeout()
        self._undo = _nothing if undo is None else undo
        return watch


def _ends_quietly(watch: StreamWatch, exc: Exception) -> bool:
    """The inner body raised ``exc``: True when a transport error came after the proof
    (the body ends there); otherwise ``exc`` goes on, the verdict attached (if any)."""
    verdict = watch.broke(exc)
    if verdict is None:
        return isinstance(exc, httpx2.TransportError)
    attach(exc, verdict)
    return False


def _end(watch: StreamWatch, error: httpx2.HTTPError | None) -> None:
    """The reading ended without raising: raise ``error``, or what the watch finds at EOF."""
    if error is None:
        error = watch.ended()
    if error is not None:
        raise error


class GuardStream(_Watched[httpx2.SyncByteStream], httpx2.SyncByteStream):
    """A watched body, read through a fresh :class:`StreamWatch` each time."""

    def __iter__(self) -> Iterator[bytes]:
        watch = self._start()
        take = watch.take
        error: httpx2.HTTPError | None = None
        try:
            for chunk in self._inner:
                error = take(chunk)
                if error is not None:
                    break
                yield chunk
        except Exception as exc:
            if _ends_quietly(watch, exc):
                return  # proven complete before the break: end the body there
            raise
        finally:
            self._undo()
        _end(watch, error)

    def close(self) -> None:
        """Give the connection its own reads back, then close the inner body."""
        self._undo()
        self._inner.close()


class AsyncGuardStream(_Watched[httpx2.AsyncByteStream], httpx2.AsyncByteStream):
    """The async twin of :class:`GuardStream`: the same watch, the same endings."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        watch = self._start()
        take = watch.take
        error: httpx2.HTTPError | None = None
        chunks = self._inner.__aiter__()
        try:
            async for chunk in chunks:
                error = take(chunk)
                if error is not None:
                    break
                yield chunk
        except Exception as exc:
            if _ends_quietly(watch, exc):
                return  # proven complete before the break: end the body there
            raise
        finally:
            self._undo()
            # Close a body read in part in the task that read it (httpx2 does the same).
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()
        _end(watch, error)

    async def aclose(self) -> None:
        """Give the connection its own reads back, then close the inner body."""
        self._undo()
        await self._inner.aclose()
