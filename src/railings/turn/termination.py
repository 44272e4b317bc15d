"""The termination state machine: only the provider's proof ends a turn cleanly.

Theory of operation. A response starts CONNECTING. The first byte moves it to
STREAMING. From there exactly one thing moves it to TERMINATED_CLEANLY: the
provider's proof of termination (``data: [DONE]``, ``message_stop``,
``response.completed``). Everything else that ends a stream -- EOF, a data line
that is not the protocol, a provider error event -- moves it to
TERMINATED_ABRUPTLY. Both terminal states absorb whatever follows: data after
the proof is ignored, and nothing after an abrupt end is applied.

Pairs missing from the table are programming errors and raise
:class:`~railings.errors.IllegalTransition` naming both.
"""

from __future__ import annotations

import enum

from railings.errors import IllegalTransition

__all__ = ["TRANSITIONS", "Signal", "State", "TerminationMachine"]


class State(enum.Enum):
    """Where a response stands; the two TERMINATED states are final."""

    CONNECTING = "connecting"
    STREAMING = "streaming"
    TERMINATED_CLEANLY = "terminated_cleanly"
    TERMINATED_ABRUPTLY = "terminated_abruptly"


class Signal(enum.Enum):
    """What the reader tells the machine about the stream."""

    RECEIVED = "received"  # bytes arrived
    PROOF = "proof"  # the provider's termination proof
    FAULT = "fault"  # malformed data or a provider error event
    EOF = "eof"  # the byte stream ended


_C, _S, _OK, _BAD = (
    State.CONNECTING,
    State.STREAMING,
    State.TERMINATED_CLEANLY,
    State.TERMINATED_ABRUPTLY,
)

TRANSITIONS: dict[State, dict[Signal, State]] = {
    _C: {Signal.RECEIVED: _S, Signal.EOF: _BAD, Signal.FAULT: _BAD},
    _S: {Signal.RECEIVED: _S, Signal.PROOF: _OK, Signal.FAULT: _BAD, Signal.EOF: _BAD},
    # After the proof: trailing bytes, garbage and EOF change nothing.
    _OK: {Signal.RECEIVED: _OK, Signal.PROOF: _OK, Signal.FAULT: _OK, Signal.EOF: _OK},
    # After an abrupt end: nothing is applied any more.
    _BAD: {Signal.RECEIVED: _BAD, Signal.PROOF: _BAD, Signal.FAULT: _BAD, Signal.EOF: _BAD},
}


class TerminationMachine:
    """Drives :data:`TRANSITIONS`; ``state`` is the current state."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = State.CONNECTING

    def signal(self, signal: Signal) -> State:
        """Apply ``signal`` and return the new state; a pair missing from the table raises
        :class:`~railings.errors.IllegalTransition`."""
        try:
            self.state = TRANSITIONS[self.state][signal]
        except KeyError:
            raise IllegalTransition(self.state.value, signal.value) from None
        return self.state

    @property
    def terminated(self) -> bool:
        """True in either terminal state, clean or abrupt."""
        # Read after every event: identity tests, no enum comparison.
        state = self.state
        return state is _OK or state is _BAD

    @property
    def open(self) -> bool:
        """True while events may still be applied (not terminated)."""
        return self.state is _C or self.state is _S
