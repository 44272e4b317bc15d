"""The sans-IO stream reader: response body bytes in, normalized events and a turn out.

The layers, each with the same ``feed`` / ``close`` shape::

    bytes -> SSEDecoder -> ServerSentEvent
          -> provider decoder -> StreamEvent -> TurnAssembler -> Turn

Like h11, nothing here touches a socket: the transport, the guard, ``replay``
and the tests all drive the same reader. A fault below the assembler (a data
line that is not JSON) ends the turn abruptly instead of escaping as an
exception: the caller gets a turn with an error, and only an oversized event
(:class:`~railings.errors.EventTooLarge`) is raised, because memory is at stake.
"""

from __future__ import annotations

from collections.abc import Set

from railings.errors import ConfigurationError, EventTooLarge, IllegalTransition, MalformedStream
from railings.events import StreamEvent
from railings.providers import FALLBACK, NAMES, ProviderDecoder, ProviderName, detect, spec
from railings.turn.assembler import TurnAssembler
from railings.turn.model import Turn
from railings.turn.stop_reason import DEFAULT_EXEMPTIONS
from railings.wire.openai_chat import OpenAIChatDecoder
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
    """Reads one streamed response. ``provider`` may be ``"auto"`` (decided by the first event).

    ``feed(chunk)`` returns the normalized events the chunk completed, up to and
    including the termination proof; ``close()`` marks EOF. ``turn()`` gives the
    verdict-ready :class:`Turn` once the stream has terminated.
    """

    def __init__(
        self,
        provider: str = "auto",
        *,
        max_tokens: int | None = None,
        service: str | None = None,
        exemptions: Set[str] = DEFAULT_EXEMPTIONS,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        choice: int = 0,
    ) -> None:
        if provider != "auto":
            provider_decoder(provider)  # validate early
        self.provider = provider
        self.choice = choice
        self.events_seen = 0  # SSE events dispatched by the SSE layer
        self._sse = SSEDecoder(max_event_size=max_event_size)
        self._decoder: ProviderDecoder | None = None
        self._assembler: TurnAssembler | None = None
        self._options = (max_tokens, service, exemptions)
        self._closed = False
        # ``auto``: the events read before one said which wire this is (with whether
        # the chunk that brought each held invalid UTF-8).
        self._held: list[tuple[ServerSentEvent, bool]] = []
        self._held_room = max_event_size  # data the held events may still hold
        if provider != "auto":
            self._start(provider)

    def _start(self, provider: str) -> tuple[ProviderDecoder, TurnAssembler]:
        max_tokens, service, exemptions = self._options
        self.provider = provider
        self._decoder = provider_decoder(provider, choice=self.choice)
        self._assembler = TurnAssembler(
            provider, max_tokens=max_tokens, service=service, exemptions=exemptions
        )
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
    def content(self) -> bool:
        """True once any content delta has been applied (the Empty / Partial divide)."""
        return self._assembler is not None and self._assembler.content

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """The normalized events ``chunk`` completed, up to and including the one that ended
        the turn; bytes after the end are ignored. Malformed data or invalid UTF-8 ends the
        turn abruptly instead of raising; an oversized event raises :class:`EventTooLarge`,
        and feeding after :meth:`close` :class:`IllegalTransition`."""
        if self._closed:
            raise IllegalTransition("closed", "feed")
        if not chunk:
            return []
        if self._assembler is not None:
            self._assembler.received()
            if self._assembler.machine.terminated:
                return []  # data after the proof (or after an abrupt end) is ignored
        try:
            events = self._sse.feed(chunk)
        except EventTooLarge as exc:
            self.assembler.fault(str(exc))
            raise
        # Providers send UTF-8 JSON: bytes that are not UTF-8 are corruption, not text.
        # The SSE layer decodes them as U+FFFD (WHATWG); the event that carries one ends
        # the turn here instead of reaching the caller as a plausible answer.
        corrupted = self._sse.invalid_utf8 > 0
        self.events_seen += len(events)
        out: list[StreamEvent] = []
        for sse in events:
            if self._decoder is None:
                found = detect(sse)
                self._held_room -= len(sse.data)
                if found is None and len(self._held) < _UNRECOGNISED_LIMIT and self._held_room > 0:
                    # Not yet known (an event type no spec recognises): decided by the
                    # first event that is, then read from the first event on.
                    self._held.append((sse, corrupted))
                    continue
                self._start((found or FALLBACK).name)[1].received()
                if self._release(out):
                    return out
            if self._apply(sse, corrupted, out):
                return out
        return out

    def _release(self, out: list[StreamEvent]) -> bool:
        """Apply the events held before the wire was known; True once the turn ended."""
        held, self._held = self._held, []
        return any(self._apply(sse, corrupted, out) for sse, corrupted in held)

    def _apply(self, sse: ServerSentEvent, corrupted: bool, out: list[StreamEvent]) -> bool:
        """Decode one event and apply what it says, appending to ``out``; True once the
        turn has ended (with its proof or abruptly)."""
        decoder, assembler = self._decoder, self._assembler
        if decoder is None or assembler is None:
            raise IllegalTransition("undetected", "apply")
        if corrupted and "\ufffd" in sse.data:
            assembler.fault("invalid UTF-8 in the stream")
            return True
        try:
            normalized = decoder.feed(sse)
        except MalformedStream as exc:
            assembler.fault(str(exc))
            return True
        for event in normalized:
            assembler.apply(event)
            out.append(event)
            if assembler.machine.terminated:
                return True
        return False

    def close(self) -> list[StreamEvent]:
        """EOF. Without the proof, the turn is interrupted (Empty or Partial)."""
        if self._closed:
            return []
        self._closed = True
        self._sse.close()
        assembler = self.assembler
        assembler.eof()
        return []

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
