"""Bounds on one turn, derived from the ``max_tokens`` it was asked for.

A provider that ignores ``max_tokens`` (or a server that streams keep-alives
without end) must not grow memory, the journal or the caller's screen without
limit. Four things are counted while a turn streams, and each has a bound:

* ``bytes``: bytes received, after content decoding (keep-alives included);
* ``events``: normalized stream events (each delta is one; keep-alives are none);
* ``text``: assembled text, thinking and refusal, in characters;
* ``arguments``: all tool-call arguments together, in characters.

The defaults are generous on purpose: a bound that a well-behaved provider
could reach would be a bug. A token is a few characters on average and rarely
more than a few dozen, and one token costs at most a few hundred bytes of wire
format (the Responses API repeats the whole text three or four times at the end,
JSON-escaped), so::

    bytes     = 16 MiB  + 4 KiB * max_tokens
    events    = 10,000  + 8 * max_tokens
    text      = 256 Ki  + 64 * max_tokens   (characters)
    arguments = 256 Ki  + 64 * max_tokens   (characters)

Past a bound the turn ends abruptly with :class:`~railings.errors.TurnTooLarge`
(a remote fault, never retried). Sans-IO: :class:`TurnMeter` is fed bytes and
events by whoever reads the stream (the client, the guard).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from railings.errors import ConfigurationError, TurnTooLarge
from railings.events import RefusalDelta, StreamEvent, TextDelta, ThinkingDelta, ToolArgumentsDelta

__all__ = ["UNKNOWN_MAX_TOKENS", "Bounds", "TurnLimits", "TurnMeter"]

# When the request named no output limit (the guard reads it from the request body):
# the largest output limit of current models, so the bounds stay generous.
UNKNOWN_MAX_TOKENS = 128_000

_FIELDS = ("bytes", "events", "text", "arguments")


@dataclass(frozen=True, slots=True)
class TurnLimits:
    """The bounds on one turn. A field left None is derived from ``max_tokens``
    (the formulas in the module docstring); set it to override."""

    bytes: int | None = None
    events: int | None = None
    text: int | None = None
    arguments: int | None = None

    def __post_init__(self) -> None:
        for name in _FIELDS:
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigurationError(f"limit {name} must be a positive integer or None")

    def resolve(self, max_tokens: int | None) -> TurnLimits:
        """Every field filled: the given ones kept, the others derived from ``max_tokens``."""
        b = self.bounds(max_tokens)
        return TurnLimits(bytes=b.bytes, events=b.events, text=b.text, arguments=b.arguments)

    def bounds(self, max_tokens: int | None) -> Bounds:
        """The four bounds as numbers: the given ones kept, the others derived."""
        n = max_tokens if max_tokens is not None and max_tokens > 0 else UNKNOWN_MAX_TOKENS
        return Bounds(
            bytes=self.bytes if self.bytes is not None else 16 * 2**20 + 4096 * n,
            events=self.events if self.events is not None else 10_000 + 8 * n,
            text=self.text if self.text is not None else 256 * 1024 + 64 * n,
            arguments=self.arguments if self.arguments is not None else 256 * 1024 + 64 * n,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Bounds:
    """One turn's resolved bounds (:meth:`TurnLimits.bounds`): every one a number."""

    bytes: int
    events: int
    text: int
    arguments: int


class TurnMeter:
    """Counts one turn against its resolved limits; raises :class:`TurnTooLarge` past one."""

    __slots__ = ("_bounds", "_limits", "arguments", "bytes", "events", "max_tokens", "text")

    def __init__(self, limits: TurnLimits | None, max_tokens: int | None) -> None:
        self._limits = (limits or TurnLimits()).resolve(max_tokens)
        self._bounds = (limits or TurnLimits()).bounds(max_tokens)
        self.max_tokens = max_tokens
        self.bytes = self.events = self.text = self.arguments = 0

    @property
    def limits(self) -> TurnLimits:
        """The limits this turn is counted against, every field filled."""
        return self._limits

    def received(self, size: int) -> None:
        """``size`` more bytes arrived (after content decoding)."""
        self.bytes += size
        limit = self._bounds.bytes
        if self.bytes > limit:
            raise self._exceeded("bytes", limit, f"{self.bytes:,} bytes received")

    def saw(self, events: Iterable[StreamEvent]) -> None:
        """Count a batch of normalized events (what one chunk completed)."""
        text = arguments = count = 0
        for event in events:
            count += 1
            if isinstance(event, (TextDelta, ThinkingDelta, RefusalDelta)):
                text += len(event.text)
            elif isinstance(event, ToolArgumentsDelta):
                arguments += len(event.fragment)
        if not count:
            return
        self.events += count
        self.text += text
        self.arguments += arguments
        limits = self._bounds
        if self.events > limits.events:
            raise self._exceeded("events", limits.events, f"{self.events:,} events")
        if self.text > limits.text:
            raise self._exceeded("text", limits.text, f"{self.text:,} characters of text")
        if self.arguments > limits.arguments:
            raise self._exceeded(
                "arguments", limits.arguments, f"{self.arguments:,} characters of tool arguments"
            )

    def _exceeded(self, bound: str, limit: int, what: str) -> TurnTooLarge:
        asked = f"max_tokens={self.max_tokens}" if self.max_tokens else "no max_tokens"
        return TurnTooLarge(
            f"turn too large: {what}, past the bound of {limit:,} derived from {asked}"
            " (the provider ignored its output limit)",
            bound=bound,
            limit=limit,
            max_tokens=self.max_tokens,
        )
