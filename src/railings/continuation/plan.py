"""One continuation, sans-IO: what is asked, what is passed on, and the turn it makes.

:class:`Continuation` is driven by :mod:`railings.continuation.drive` (or by any code
that can send a conversation and read the events back): ``messages()`` is the
conversation of the next request; ``refused(error)`` says whether an error that request
raised is answered by asking again; ``feed(event)`` returns the events to pass on, the
continuation's repeat of the partial text removed; ``finish(turn)`` the last events, and
``result`` the joined turn (:class:`Continued`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from railings.continuation.seam import Seam
from railings.conversation import Assistant, Message, Text, User
from railings.errors import BadRequest, CannotContinue, ConfigurationError, ContextWindowExceeded
from railings.events import (
    OutputItems,
    RefusalDelta,
    ServerToolResult,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from railings.providers import spec
from railings.turn.model import Outcome, Turn
from railings.turn.parts import Part, TextPart
from railings.turn.usage import combine

__all__ = [
    "Continuation",
    "Continued",
    "Strategy",
    "check",
    "default_strategy",
    "join",
    "request",
]

Strategy = Literal["prefill", "user"]
"""How the rest is asked for: ``prefill``, the partial text as the last, assistant,
message; ``user``, the partial text in a trailing user message that asks for the rest."""

# The events that begin a part other than text: the text before them is decided.
_OTHER_PARTS = (
    ThinkingDelta,
    RefusalDelta,
    ToolCallStart,
    ToolArgumentsDelta,
    ToolCallEnd,
    ServerToolResult,
    OutputItems,
)


def check(turn: Turn) -> None:
    """Raise :class:`~railings.errors.CannotContinue` unless ``turn`` is a Partial text
    answer: not complete, holding no tool call (whole or cut), with text."""
    if turn.outcome is Outcome.COMPLETE:
        raise CannotContinue("the turn is complete: its proof arrived", reason="complete")
    if turn.tool_calls or turn.server_tool_calls:
        raise CannotContinue(
            "the turn holds a tool call: a call is never continued (a cut one is resent whole)",
            reason="tool_call",
        )
    if not turn.text.strip():
        raise CannotContinue("the turn has no answer text to continue", reason="no_text")


def default_strategy(provider: str) -> Strategy:
    """The wire's way (``ProviderSpec.continues_by_prefill``): prefill on the Anthropic
    Messages wire, a user message on the others."""
    return "prefill" if spec(provider).continues_by_prefill else "user"


def request(messages: Sequence[Message], text: str, strategy: Strategy) -> tuple[Message, ...]:
    """The conversation that asks for the rest of ``text``, the partial answer to
    ``messages``, by ``strategy`` (:mod:`railings.continuation` says what each sends)."""
    if strategy == "prefill":
        return (*messages, Assistant((Text(text.rstrip()),)))
    return (*messages, User(_asking(text)))


def _asking(text: str) -> str:
    return (
        "Your previous answer was cut off before it ended. This is all of it that arrived:"
        f"\n\n{text}\n\n"
        "Continue it from exactly where it stops. Write only the rest: do not repeat any "
        "of it, and add nothing before it."
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Continued:
    """A continued turn.

    ``turn`` is one turn: the parts of every attempt in order, the continuation's repeat
    of the text before it removed, so ``turn.text`` is the joined answer; its outcome,
    termination, stop reason, error and truncation are the last attempt's (a
    continuation that was cut too is Partial, and may be continued again); its usage is
    the attempts' sum, a count any of them lacks None. ``attempts`` is each attempt's
    own turn as it arrived, the partial one first; ``attempt_of[i]`` the attempt (1, 2,
    ...) that ``turn.parts[i]`` came from. ``strategy`` is how the last continuation was
    asked for, ``fell_back`` True when a prefill was refused and the rest asked for by
    user message, and ``repeated`` the characters of its text removed as a repeat.
    """

    turn: Turn
    attempts: tuple[Turn, ...]
    attempt_of: tuple[int, ...]
    strategy: Strategy
    fell_back: bool = False
    repeated: int = 0

    def parts_of(self, attempt: int) -> tuple[Part, ...]:
        """The parts of ``turn`` that attempt ``attempt`` (1-based) contributed."""
        return tuple(
            p for p, a in zip(self.turn.parts, self.attempt_of, strict=True) if a == attempt
        )


def join(
    previous: Turn | Continued,
    continuation: Turn,
    *,
    repeated: int,
    strategy: Strategy,
    fell_back: bool = False,
) -> Continued:
    """``previous`` continued by ``continuation``, whose first ``repeated`` characters of
    text repeat the end of ``previous``'s text and are left out."""
    if isinstance(previous, Continued):
        base, attempts, origins = previous.turn, previous.attempts, previous.attempt_of
    else:
        base, attempts, origins = previous, (previous,), (1,) * len(previous.parts)
    added = _without(continuation.parts, repeated)
    turn = dataclasses.replace(
        continuation,
        parts=base.parts + added,
        usage=combine(base.usage, continuation.usage),
        unknown_events=base.unknown_events + continuation.unknown_events,
    )
    return Continued(
        turn=turn,
        attempts=(*attempts, continuation),
        attempt_of=origins + (len(attempts) + 1,) * len(added),
        strategy=strategy,
        fell_back=fell_back,
        repeated=repeated,
    )


def _without(parts: tuple[Part, ...], chars: int) -> tuple[Part, ...]:
    """``parts`` without the first ``chars`` characters of their text."""
    out: list[Part] = []
    for part in parts:
        if chars and type(part) is TextPart:
            dropped = min(chars, len(part.text))
            chars -= dropped
            if dropped == len(part.text):
                continue
            part = TextPart(text=part.text[dropped:])
        out.append(part)
    return tuple(out)


def _seam(text: str, strategy: Strategy) -> Seam:
    """Where a continuation asked by ``strategy`` meets ``text``. A prefill is carried on
    by the model: all it writes is the rest, so the only repeat there is the whitespace
    the prefill left out (``"ha ha"`` carried on with ``" ha ha!"`` keeps both). Asked by
    user message, the model may write any end of ``text`` again, or all of it."""
    return Seam(text[len(text.rstrip()) :] if strategy == "prefill" else text)


class Continuation:
    """Continuing ``previous``, the Partial answer to ``messages``, on ``provider``'s wire.

    Refused at once (:class:`~railings.errors.CannotContinue`) unless the turn is a
    Partial text answer (:func:`check`). ``strategy`` None is the wire's default
    (:func:`default_strategy`).
    """

    def __init__(
        self,
        messages: Sequence[Message],
        previous: Turn | Continued,
        *,
        provider: str,
        strategy: Strategy | None = None,
    ) -> None:
        base = previous.turn if isinstance(previous, Continued) else previous
        check(base)
        if strategy is not None and strategy not in get_args(Strategy):
            raise ConfigurationError(
                f"strategy must be 'prefill' or 'user' (or None: the wire's), not {strategy!r}"
            )
        self._history = tuple(messages)
        self._previous = previous
        self._text = base.text
        self.strategy: Strategy = strategy or default_strategy(provider)
        self.fell_back = False
        self._seam = _seam(self._text, self.strategy)
        self._queued: list[StreamEvent] = []
        self._passed = False  # an event went to the caller
        self.result: Continued | None = None

    def messages(self) -> tuple[Message, ...]:
        """The conversation of the next request."""
        return request(self._history, self._text, self.strategy)

    def refused(self, error: Exception) -> bool:
        """True when ``error`` refused a prefill before anything was passed on: ask again,
        once, by user message (:meth:`messages` has changed). A 400 is not billed, and the
        two requests differ only in their last message: a 400 for any other cause comes
        back, and is raised then. A prompt too long is raised at once."""
        if (
            self.strategy != "prefill"
            or self.fell_back
            or self._passed
            or not isinstance(error, BadRequest)
            or isinstance(error, ContextWindowExceeded)
            or error.status != 400
        ):
            return False
        self.strategy, self.fell_back = "user", True
        self._seam, self._queued = _seam(self._text, "user"), []  # the next request afresh
        return True

    def feed(self, event: StreamEvent) -> list[StreamEvent]:
        """The events to pass on now. Text is held while it may repeat the partial text;
        the other events wait behind it, in order, so none is shown before the text that
        came first; a part other than text decides what is held."""
        out: list[StreamEvent]
        if isinstance(event, TextDelta):
            decided = self._seam.cut is not None
            out = [event] if decided else self._release(self._seam.feed(event.text))
        elif isinstance(event, _OTHER_PARTS):
            out = [*self._release(self._seam.settle()), event]
        elif self._seam.holding:
            self._queued.append(event)
            out = []
        else:
            out = [event]
        self._passed = self._passed or bool(out)
        return out

    def _release(self, text: str) -> list[StreamEvent]:
        if self._seam.holding:
            return []
        out: list[StreamEvent] = [TextDelta(text=text)] if text else []
        out.extend(self._queued)
        self._queued.clear()
        return out

    def finish(self, turn: Turn) -> list[StreamEvent]:
        """The continuation's turn arrived: the last events to pass on. :attr:`result`
        is the joined turn from now on."""
        out = self._release(self._seam.close())
        self.result = join(
            self._previous,
            turn,
            repeated=self._seam.cut or 0,
            strategy=self.strategy,
            fell_back=self.fell_back,
        )
        return out
