"""The sans-IO stream reader: response body bytes in, normalized events and a turn out.

The layers, each with the same ``feed`` / ``close`` shape::

    bytes -> framer (the spec's Framing: SSE, AWS event-stream, NDJSON) -> frame
          -> provider decoder -> StreamEvent -> TurnAssembler -> Turn

``provider="auto"`` sniffs the framing from the first bytes
(:mod:`railings.turn.framing`: an event-stream prelude is Bedrock, a first NDJSON
line with Ollama's keys is Ollama, a ``[`` is Gemini's whole JSON array), then, for
SSE, the wire from the first event a spec recognises. At EOF the decoder's
``close()`` events are applied before the end is judged: Gemini's proof is emitted
there, since only the stream's last event may carry it.

Like h11, nothing here touches a socket. A fault below the assembler (a data line that
is not JSON, a frame the framer refuses: a bad CRC, a line that is not UTF-8, a frame cut
short at EOF; a decoder's ``close()`` that finds the stream malformed) ends the turn
abruptly, right after the frames the chunk completed before it, so the turn is the same
however the bytes were split; only an oversized event is raised (``EventTooLarge``).

The plain path, the specification: the fast path is a layer on top (``fastpath.py``).
"""

from __future__ import annotations

from typing import Any

from railings.errors import ConfigurationError, EventTooLarge, IllegalTransition, MalformedStream
from railings.events import StreamEvent, UsageUpdate
from railings.providers import (
    FALLBACK,
    NAMES,
    Framing,
    ProviderDecoder,
    ProviderName,
    ProviderSpec,
    detect,
    spec,
)
from railings.providers.openai_chat.decoder import OpenAIChatDecoder
from railings.turn.assembler import TurnAssembler
from railings.turn.framing import Framer, WholeBodyDecoder, framer, sniff
from railings.turn.model import Turn
from railings.turn.profile import WIRE, Profile
from railings.turn.switch import SWITCH
from railings.turn.termination import State
from railings.wire.ndjson import NDJSONDecoder
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE, ServerSentEvent, SSEDecoder

__all__ = ["PROVIDERS", "Provider", "StreamReader", "detect_provider", "provider_decoder"]

# The provider names (one type for the package: railings.providers.ProviderName).
Provider = ProviderName
PROVIDERS: tuple[str, ...] = NAMES

# How many events an ``auto`` stream may open with before one is recognised (and how
# much data they may hold together: one event's limit): past either, the stream is read
# as the fallback wire (Chat Completions) from its first event, as if undetected.
_UNRECOGNISED_LIMIT = 64


def provider_decoder(provider: str, *, choice: int = 0) -> ProviderDecoder:
    """A fresh decoder for ``provider``; ``choice`` picks the Chat Completions choice read."""
    if provider not in NAMES:
        raise ConfigurationError(
            f"unknown provider {provider!r}: expected one of {', '.join(PROVIDERS)}"
        )
    return spec(provider).decoder(choice)


def detect_provider(sse: ServerSentEvent) -> str:
    """Guess the wire format from one event of a stream: the first provider whose
    detection hints recognise it, else Chat Completions (the fallback)."""
    found = detect(sse)
    return (found or FALLBACK).name


class StreamReader:
    """Reads one streamed response. ``provider`` may be ``"auto"`` (decided by the first
    bytes, then the first event).

    ``feed(chunk)`` returns the normalized events the chunk completed, up to and
    including the termination proof; ``close()`` marks EOF and returns the events it
    completed (Gemini's proof among them). ``turn()`` gives the verdict-ready
    :class:`Turn` once the stream has terminated.

    ``fast``: True gives the fast path (:class:`~railings.turn.fastpath.FastStreamReader`,
    equal events and turn), False this plain one, None whichever the accelerations switch
    says (:mod:`railings.accelerations`). As ``pathlib.Path()`` returns a ``PosixPath``,
    ``StreamReader(...)`` returns the class it chose; a subclass is made as it is.
    """

    accelerated = False  # this class reads every chunk by the plain path

    def __new__(cls, *args: Any, fast: bool | None = None, **options: Any) -> StreamReader:
        """The reader the switch (or ``fast``) chose: the fast one, or this class."""
        if cls is StreamReader and (SWITCH.on if fast is None else fast):
            from railings.turn.fastpath import FastStreamReader  # (it imports this module)

            cls = FastStreamReader
        return super().__new__(cls)

    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, bool]]:
        """A copy (pickle, ``copy``) is made by the same path as the original."""
        return (), {"fast": self.accelerated}

    def __init__(
        self,
        provider: str = "auto",
        *,
        max_tokens: int | None = None,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        choice: int = 0,
        fast: bool | None = None,
        profile: Profile = WIRE,
        request_chars: int | None = None,
    ) -> None:
        if provider != "auto":
            provider_decoder(provider)  # validate early
        self.provider = provider
        self.choice = choice
        self.events_seen = 0  # frames (SSE events, event-stream frames, lines) decoded
        self._max = max_event_size
        self._framer: Framer | None = None
        self._prefix = b""  # the first bytes, while the framing is not known
        self._decoder: ProviderDecoder | None = None
        self._assembler: TurnAssembler | None = None
        # What the assembler is built with once the wire is known.
        self._options: dict[str, Any] = {
            "max_tokens": max_tokens,
            "profile": profile,
            "request_chars": request_chars,
        }
        self._closed = False
        self._unframed = False  # the framer refused a frame: no byte after it is read
        # ``auto``: the events read before one said which wire this is (with whether
        # the chunk that brought each held invalid UTF-8).
        self._held: list[tuple[ServerSentEvent, bool]] = []
        self._held_room = max_event_size  # data the held events may still hold
        if provider != "auto":
            wire = spec(provider)
            self._start(provider)
            if wire.whole_body is None:
                self._framer = framer(wire.framing, max_size=max_event_size)

    def _start(self, provider: str) -> tuple[ProviderDecoder, TurnAssembler]:
        self.provider = provider
        self._decoder = provider_decoder(provider, choice=self.choice)
        self._assembler = TurnAssembler(provider, **self._options)
        return self._decoder, self._assembler

    @property
    def assembler(self) -> TurnAssembler:
        """The turn's assembler; an ``auto`` stream that ended before any event said its
        wire is read as the fallback (OpenAI Chat Completions), its events applied."""
        if self._assembler is not None:
            return self._assembler
        _, assembler = self._start(FALLBACK.name)
        if self._held:
            assembler.received()
            self._release([])
        return assembler

    @property
    def terminated(self) -> bool:
        """True once the turn has ended, cleanly with its proof or abruptly."""
        return self._assembler is not None and self._assembler.machine.terminated

    @property
    def reads_on(self) -> bool:
        """True while bytes may still change the turn: until it ended, and after a clean
        end on a wire whose usage follows its proof (Bedrock's ``metadata``), until EOF."""
        if not self.terminated:
            return not self._closed
        wire = self._spec
        return (
            not self._closed
            and wire is not None
            and wire.usage_after_proof
            and self.assembler.machine.state is State.TERMINATED_CLEANLY
        )

    @property
    def framing(self) -> str:
        """How the body was framed: ``sse``, ``eventstream``, ``ndjson``, or ``whole`` (a
        body read whole, Gemini's JSON array); ``sse`` until decided."""
        if isinstance(self._decoder, WholeBodyDecoder):
            return "whole"
        if self._framer is None or isinstance(self._framer, SSEDecoder):
            return Framing.SSE.value
        return Framing.NDJSON.value if isinstance(self._framer, NDJSONDecoder) else "eventstream"

    @property
    def _spec(self) -> ProviderSpec | None:
        return spec(self.provider) if self._assembler is not None else None

    @property
    def sequence(self) -> int | None:
        """The number of the last event read whole, on a wire that numbers them."""
        return getattr(self._decoder, "sequence", None) if self._assembler else None

    @property
    def content(self) -> bool:
        """True once any content delta has been applied (the Empty / Partial divide)."""
        return self._assembler is not None and self._assembler.content

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """The normalized events ``chunk`` completed, up to and including the one that ended
        the turn; bytes after the end are ignored (but usage a wire reports after its
        proof). Malformed data ends the turn abruptly; an oversized event raises
        :class:`EventTooLarge`, and feeding after :meth:`close` :class:`IllegalTransition`."""
        if self._closed:
            raise IllegalTransition("closed", "feed")
        if not chunk:
            return []
        if self._assembler is not None:
            self._assembler.received()
            if self._assembler.machine.terminated and not self.reads_on:
                return []  # data after the proof (or after an abrupt end) is ignored
        if self._framer is None:
            self._prefix += chunk
            if not self._sniff(final=False):
                return []
            chunk, self._prefix = self._prefix, b""
        return self._frames(chunk, final=False)

    def _sniff(self, *, final: bool) -> bool:
        """Decide the framing from the first bytes (module docstring); False: need more."""
        wire = None if self.provider == "auto" else spec(self.provider)
        if wire is not None:  # a wire with a whole-body form: is this body that form?
            body = self._prefix.lstrip(b" \t\r\n")
            if not body and not final:
                return False
            whole = body.startswith(b"[")
            self._framer = framer(None if whole else wire.framing, max_size=self._max)
            if whole:
                self._decoder = WholeBodyDecoder(wire, self.choice)
            return True
        found = sniff(self._prefix, final=final, limit=self._max)
        if found is None:
            return False
        self._framer = framer(found.framing, max_size=self._max)
        if found.spec is not None:
            self._start(found.spec.name)[1].received()
            if found.framing is None:
                self._decoder = WholeBodyDecoder(found.spec, self.choice)
        return True

    def _frames(self, chunk: bytes, *, final: bool) -> list[StreamEvent]:
        """The events of ``chunk`` (of EOF when ``final``), once the framing is known."""
        return self._decode(chunk, final, [])

    def _decode(self, chunk: bytes, final: bool, out: list[StreamEvent]) -> list[StreamEvent]:
        """The framer decodes ``chunk``, each frame is applied; a frame the framer refused
        ends the turn right after the frames before it."""
        framer_ = self._framer
        if framer_ is None:
            raise IllegalTransition("unframed", "feed")
        if self._unframed:
            return out  # the framing broke: nothing after it is read
        try:
            frames = framer_.close() if final else framer_.feed(chunk)
        except MalformedStream as exc:  # EventTooLarge too
            return self._framing_failed(exc, out)
        # Providers send UTF-8 JSON: bytes that are not UTF-8 are corruption, not text.
        # The SSE layer decodes them as U+FFFD (WHATWG); the event that carries one ends
        # the turn here instead of reaching the caller as a plausible answer. Only the
        # events from the first invalid bytes on: a U+FFFD the model wrote before them is
        # text, whether or not the same chunk brought the invalid bytes.
        clean = framer_.clean_events if isinstance(framer_, SSEDecoder) else len(frames)
        self.events_seen += len(frames)
        for index, frame in enumerate(frames):
            corrupted = index >= clean
            if self._decoder is None:
                found = detect(frame)
                self._held_room -= len(frame.data)
                if found is None and len(self._held) < _UNRECOGNISED_LIMIT and self._held_room > 0:
                    # Not yet known (an event type no spec recognises): decided by the
                    # first event that is, then read from the first event on.
                    self._held.append((frame, corrupted))
                    continue
                self._start((found or FALLBACK).name)[1].received()
                if self._release(out):
                    return out
            if self._apply(frame, corrupted, out):
                return out
        failure = framer_.failure
        if failure is not None:  # met after these frames: it takes effect now
            return self._framing_failed(failure, out)
        return out

    def _framing_failed(self, exc: MalformedStream, out: list[StreamEvent]) -> list[StreamEvent]:
        """The framer refused a frame: the turn ends abruptly there, and the framer is
        read no more (an oversized frame raises :class:`EventTooLarge`, memory at stake)."""
        self._unframed = True
        self.assembler.fault(str(exc))
        if isinstance(exc, EventTooLarge):
            raise exc
        return out

    def _release(self, out: list[StreamEvent]) -> bool:
        """Apply the events held before the wire was known; True once the turn ended."""
        held, self._held = self._held, []
        return any(self._apply(sse, corrupted, out) for sse, corrupted in held)

    def _apply(self, frame: object, corrupted: bool, out: list[StreamEvent]) -> bool:
        """Decode one frame and apply what it says, appending to ``out``; True once the
        turn has ended (with its proof or abruptly) and reads nothing more."""
        decoder, assembler = self._decoder, self._assembler
        if decoder is None or assembler is None:
            raise IllegalTransition("undetected", "apply")
        if assembler.machine.terminated:
            return self._trailing(decoder, frame, out)
        if corrupted and isinstance(frame, ServerSentEvent) and "\ufffd" in frame.data:
            assembler.fault("invalid UTF-8 in the stream")
            return True
        try:
            normalized = decoder.feed(frame)
        except MalformedStream as exc:
            assembler.fault(str(exc))
            return True
        return self._events(normalized, out)

    def _events(self, normalized: list[StreamEvent], out: list[StreamEvent]) -> bool:
        assembler = self.assembler
        for event in normalized:
            assembler.apply(event)
            out.append(event)
            if assembler.machine.terminated and not self.reads_on:
                return True
        return False

    def _trailing(self, decoder: ProviderDecoder, frame: object, out: list[StreamEvent]) -> bool:
        """A frame after a clean end on a wire whose usage follows its proof: its usage
        only is applied; a malformed one is read past (the turn was already proven)."""
        try:
            normalized = decoder.feed(frame)
        except MalformedStream:
            return False
        usage = [e for e in normalized if isinstance(e, UsageUpdate)]
        for event in usage:
            self.assembler.apply(event)
        out.extend(usage)
        return False

    def close(self, *, clean: bool = True) -> list[StreamEvent]:
        """EOF: the frames and events EOF completes are applied (a frame cut short is a
        malformed stream; Gemini's proof comes from its decoder here); without the proof,
        the turn is interrupted (Empty or Partial). ``clean``: the body ended as the
        server closed it, not broken off. Returns the events EOF completed."""
        if self._closed:
            return []
        out: list[StreamEvent] = []
        if self._framer is None and (self._prefix or self.provider != "auto"):
            self._sniff(final=True)
        if self._framer is not None:
            if self._prefix:
                chunk, self._prefix = self._prefix, b""
                if self.reads_on:
                    out += self._frames(chunk, final=False)
            if self.reads_on:
                out += self._frames(b"", final=True)
            else:
                self._quiet_close()
        self._closed = True
        assembler, decoder = self.assembler, self._decoder
        # The end-of-stream events (Gemini's proof: its last event's finishReason) only
        # when EOF came between frames: an event cut short after it means the event
        # that carried the finish reason was not the last one.
        cut = isinstance(self._framer, SSEDecoder) and self._framer.pending
        if decoder is not None and assembler.machine.open and not cut:
            try:
                self._events(decoder.close(), out)
            except MalformedStream as exc:
                assembler.fault(str(exc))
        assembler.eof(clean=clean)
        return out

    def _quiet_close(self) -> None:
        # The turn already ended: EOF only releases the framer (a cut frame after the end
        # changes nothing).
        try:
            if self._framer is not None:
                self._framer.close()
        except MalformedStream:
            pass

    @property
    def choices(self) -> frozenset[int]:
        """The Chat Completions choice indexes the stream carried (``{0}`` for other formats)."""
        decoder = self._decoder
        if isinstance(decoder, OpenAIChatDecoder):
            return frozenset(decoder.choices)
        return frozenset({0}) if decoder is not None else frozenset()

    def turn(self) -> Turn:
        """The turn as assembled so far (final after :meth:`close`)."""
        return self.assembler.turn()
