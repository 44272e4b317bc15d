"""Fault classes for the fault proxy and their spec syntax.

The byte-exact SSE block tools the proxy acts with (:class:`EventSplitter`,
:func:`is_terminator`, :func:`corrupt_event`) are in :mod:`railings.testing.blocks`
and importable here too.

A spec is ``name`` or ``name:key=value,key=value``; a bare value sets the
fault's first parameter (``status:529`` is ``status:code=529``). Events are the
stream's own units, numbered from 1 in the order the upstream sent them: SSE
blocks (everything up to and including a blank line), event-stream frames
(Bedrock), NDJSON lines (Ollama) -- :mod:`railings.testing.frames`. ``times=K``
on any fault applies it to the first K requests that ask for it, then lets
requests pass (``status:code=429,times=1``: one 429, then the real answer).
``end`` says how a cut stream ends: ``clean`` (the chunked body's
``0\\r\\n\\r\\n``: HTTP says the response is complete, only the proof is
missing), ``abrupt`` (close without it) or ``reset`` (TCP RST).

=====================  ==========================================================
``none``                pass everything through unchanged
``truncate``            ``events=N`` or ``bytes=N`` (body bytes), then end
                        (``end=clean`` default)
``drop_terminator``     remove the proof -- ``data: [DONE]``, the ``message_stop``
                        event, Responses' ``response.completed`` /
                        ``response.incomplete``, Gemini's chunk with the final
                        ``finishReason``, Bedrock's ``messageStop`` frame, Ollama's
                        ``done: true`` line -- and everything after it, then end
                        (``end=clean`` default); ``rest=keep`` drops the proof
                        alone and sends what follows (Bedrock's ``metadata``)
``cut_mid_event``       send the first half of event ``event=N`` (default 2), then
                        end (``end=clean`` default): an SSE block without its blank
                        line, an event-stream frame cut mid-frame, half a line
``idle``                after ``events=N`` (default 1), silent for ``seconds=S``
                        (default 30) without closing, then the rest of the stream
``reorder``             swap event ``event=N`` (default 2) with the one after it
``duplicate``           send event ``event=N`` (default 2) ``count=K`` (default 1)
                        extra times
``reset``               TCP RST (SO_LINGER 0, then close) after ``events=N``
                        (default 3) or ``bytes=N``
``close_after_terminator``  the whole stream with its proof, then close without the
                        chunked terminator (proven, then broken)
``drip``                every byte as its own chunk (``size=1``), ``delay=S``
                        (default 0.01) seconds apart
``status``              answer ``code=`` 429 (default) / 500 / 503 / 529 … without
                        contacting the upstream, with a provider-shaped error body and
                        optional ``retry_after=S`` / ``retry_after_ms=MS`` headers
``error_event``         after ``events=N`` (default 2) inject the provider's error
                        event (Anthropic ``event: error`` with ``type=overloaded_error``;
                        OpenAI ``data: {"error": {...}}``; Responses an ``error``
                        event, code ``server_error``, or with
                        ``type=response.failed`` a ``response.failed`` for the
                        stream's own response), then end
``corrupt``             break event ``event=N`` (default 2): ``kind=json`` (the data
                        line cut in half) or ``kind=utf8`` (bytes ``FF FE`` inside
                        its first string value); for event-stream frames also
                        ``kind=crc`` (the message CRC) or ``kind=prelude`` (the
                        prelude CRC) that does not match
=====================  ==========================================================
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from railings.errors import ConfigurationError
from railings.testing.blocks import EventSplitter, corrupt_event, is_terminator

__all__ = [
    "FAULTS",
    "CloseAfterTerminator",
    "Corrupt",
    "CutMidEvent",
    "Drip",
    "DropTerminator",
    "Duplicate",
    "ErrorEvent",
    "EventSplitter",
    "Fault",
    "Idle",
    "Passthrough",
    "Reorder",
    "Reset",
    "Status",
    "Truncate",
    "corrupt_event",
    "is_terminator",
]

End = Literal["clean", "abrupt", "reset"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """Base of every fault. ``Fault.parse(spec)`` builds the right subclass."""

    name: ClassVar[str] = ""
    times: int | None = None

    @staticmethod
    def parse(spec: str | Fault | None) -> Fault:
        """The fault a spec names (a :class:`Fault` is returned as it is; None is ``none``).

        An unknown name, parameter or value raises
        :class:`~railings.errors.ConfigurationError` naming it.
        """
        if spec is None:
            return Passthrough()
        if isinstance(spec, Fault):
            return spec
        name, _, rest = spec.strip().partition(":")
        cls = FAULTS.get(name.strip().replace("-", "_"))
        if cls is None:
            raise ConfigurationError(
                f"unknown fault {name!r}: expected one of {', '.join(sorted(FAULTS))}"
            )
        # The fault's own parameters, then ``times``: a bare value sets the first.
        names = [f.name for f in dataclasses.fields(cls) if f.name != "times"] + ["times"]
        hints = typing.get_type_hints(cls)
        kwargs: dict[str, Any] = {}
        for i, item in enumerate(p for p in rest.split(",") if p.strip()):
            key, sep, value = item.partition("=")
            if not sep:
                if i or item.strip() in names:
                    raise ConfigurationError(f"fault {spec!r}: expected key=value, got {item!r}")
                key, value = names[0], item
            key = key.strip().replace("-", "_")
            if key not in names:
                raise ConfigurationError(f"fault {name!r} has no parameter {key!r}")
            kwargs[key] = _convert(value.strip(), hints[key], f"{spec!r}: {key}")
        try:
            return cls(**kwargs)
        except ValueError as exc:
            raise ConfigurationError(f"fault {spec!r}: {exc}") from exc

    @property
    def spec(self) -> str:
        """The canonical spec string (parameters that differ from the defaults)."""
        params = [
            f"{f.name}={getattr(self, f.name)}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != f.default
        ]
        return self.name + (":" + ",".join(params) if params else "")

    def __str__(self) -> str:
        return self.spec


def _convert(value: str, hint: Any, where: str) -> Any:
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    for arg in args:
        if typing.get_origin(arg) is Literal:
            if value in typing.get_args(arg):
                return value
            raise ConfigurationError(f"{where}: one of {typing.get_args(arg)}, got {value!r}")
    # Counts and durations: plain decimal digits, so no sign, no "0x", no "_", no "inf".
    if int in args:
        if not _INT.fullmatch(value):
            raise ConfigurationError(f"{where}: expected a whole number >= 0, got {value!r}")
        return int(value)
    if float in args:
        if not _FLOAT.fullmatch(value):
            raise ConfigurationError(f"{where}: expected a number >= 0, got {value!r}")
        return float(value)
    return value


_INT = re.compile(r"[0-9]+")
_FLOAT = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


@dataclass(frozen=True, slots=True, kw_only=True)
class Passthrough(Fault):
    """``none``: every byte passes through unchanged."""

    name: ClassVar[str] = "none"


@dataclass(frozen=True, slots=True, kw_only=True)
class Truncate(Fault):
    """``truncate``: the first ``events`` events (default 3) or ``bytes`` body bytes, then
    ``end``; give one count, not both."""

    name: ClassVar[str] = "truncate"
    events: int | None = None
    bytes: int | None = None
    end: End = "clean"

    def __post_init__(self) -> None:
        _check(self.events is None or self.bytes is None, "give events or bytes, not both")
        if self.events is None and self.bytes is None:
            object.__setattr__(self, "events", 3)
        _check(min(self.events or 0, self.bytes or 0) >= 0, "counts must be >= 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class DropTerminator(Fault):
    """``drop_terminator``: the stream up to its termination proof, which is dropped with
    everything after it (``rest=keep``: alone), then ``end``."""

    name: ClassVar[str] = "drop_terminator"
    end: End = "clean"
    rest: Literal["drop", "keep"] = "drop"


@dataclass(frozen=True, slots=True, kw_only=True)
class CutMidEvent(Fault):
    """``cut_mid_event``: the first half of event number ``event``, then ``end``."""

    name: ClassVar[str] = "cut_mid_event"
    event: int = 2
    end: End = "clean"

    def __post_init__(self) -> None:
        _check(self.event >= 1, "event numbers start at 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class Idle(Fault):
    """``idle``: after ``events`` events, silent for ``seconds`` without closing, then the rest."""

    name: ClassVar[str] = "idle"
    events: int = 1
    seconds: float = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Reorder(Fault):
    """``reorder``: event number ``event`` swapped with the one after it."""

    name: ClassVar[str] = "reorder"
    event: int = 2

    def __post_init__(self) -> None:
        _check(self.event >= 1, "event numbers start at 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class Duplicate(Fault):
    """``duplicate``: event number ``event`` sent ``count`` extra times."""

    name: ClassVar[str] = "duplicate"
    event: int = 2
    count: int = 1

    def __post_init__(self) -> None:
        _check(self.event >= 1 and self.count >= 1, "event and count start at 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class Reset(Fault):
    """``reset``: a TCP RST after ``events`` events (default 3) or ``bytes`` body bytes."""

    name: ClassVar[str] = "reset"
    events: int | None = None
    bytes: int | None = None

    def __post_init__(self) -> None:
        _check(self.events is None or self.bytes is None, "give events or bytes, not both")
        if self.events is None and self.bytes is None:
            object.__setattr__(self, "events", 3)


@dataclass(frozen=True, slots=True, kw_only=True)
class CloseAfterTerminator(Fault):
    """``close_after_terminator``: the whole stream with its proof, then a close without the
    chunked terminator (proven, then broken)."""

    name: ClassVar[str] = "close_after_terminator"


@dataclass(frozen=True, slots=True, kw_only=True)
class Drip(Fault):
    """``drip``: the body in chunks of ``size`` bytes, ``delay`` seconds apart."""

    name: ClassVar[str] = "drip"
    delay: float = 0.01
    size: int = 1

    def __post_init__(self) -> None:
        _check(self.size >= 1 and self.delay >= 0, "size >= 1 and delay >= 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class Status(Fault):
    """``status``: answer ``code`` without contacting the upstream, with the provider's error
    body (``message`` replaces its text) and the optional retry-after headers."""

    name: ClassVar[str] = "status"
    code: int = 429
    retry_after: float | None = None
    retry_after_ms: int | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        # A success is not a fault: a 2xx or 3xx here would answer without a body.
        _check(400 <= self.code <= 599, "an HTTP error status, 400-599")


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorEvent(Fault):
    """``error_event``: after ``events`` events, the provider's error event of kind ``type``,
    then ``end``."""

    name: ClassVar[str] = "error_event"
    events: int = 2
    type: str = "overloaded_error"
    end: End = "clean"


@dataclass(frozen=True, slots=True, kw_only=True)
class Corrupt(Fault):
    """``corrupt``: event number ``event`` broken, as JSON cut in half (``kind=json``),
    with invalid UTF-8 in its first string (``kind=utf8``), or (event-stream frames)
    with a message or prelude CRC that does not match (``kind=crc`` / ``prelude``)."""

    name: ClassVar[str] = "corrupt"
    event: int = 2
    kind: Literal["json", "utf8", "crc", "prelude"] = "json"

    def __post_init__(self) -> None:
        _check(self.event >= 1, "event numbers start at 1")


FAULTS: dict[str, type[Fault]] = {
    cls.name: cls
    for cls in (
        Passthrough,
        Truncate,
        DropTerminator,
        CutMidEvent,
        Idle,
        Reorder,
        Duplicate,
        Reset,
        CloseAfterTerminator,
        Drip,
        Status,
        ErrorEvent,
        Corrupt,
    )
}
