"""Tool calls held back until they prove themselves whole (``--cut-calls refuse``). Sans-IO.

Theory of operation. A client that acts on argument deltas as they arrive would hold
``{"command": "rm -rf /tmp/leg`` before any refusal could follow it, so under
``refuse`` a local call's events do not leave the gateway until the call is proven
complete, and neither does anything after them (the client's events stay in order):

* A call opens with its start event (Anthropic ``content_block_start`` of a
  ``tool_use``, a Chat delta that begins ``tool_calls[i]``, a Responses
  ``output_item.added`` of a call item). From that event on, the events are held.
* A call is proven when its block closed (Anthropic ``content_block_stop``,
  Responses ``output_item.done``, Chat: the next call's start or the finish reason)
  **and** its arguments, as the core assembled them, parse strictly **and** are the
  model's own JSON text (:attr:`~railings.turn.parts.ToolCall.provable`: the verdict
  rejects every other call of a turn the output limit stopped). Then the events held
  up to the start of the first call still open leave at once; a turn without another
  open call streams live again.
* A call that closed without proving itself (its arguments do not parse, or arrived
  parsed) stays held until the turn's end decides: the proof without a cut call
  releases everything, a cut call drops it (the refusal replaces it), and so does
  any break. A fragment that arrives for a call already proven opens it again.

Held bytes are bounded (``limit``, :data:`DEFAULT_MAX_HELD`): past it, the judge
refuses the answer rather than pass on arguments it cannot prove. Only local calls
are held; a provider-run call's events pass as they come.
"""

from __future__ import annotations

from collections.abc import Sequence

from railings.events import StreamEvent, ToolArgumentsDelta, ToolCallEnd, ToolCallStart
from railings.turn.assembler import TurnAssembler
from railings.turn.parts import ToolCall

__all__ = ["DEFAULT_MAX_HELD", "UNPROVEN_CODE", "HeldCalls", "touches_calls"]

# The most bytes of one stream held behind unproven calls: the reader's own event limit,
# enough for the longest call a model's output limit allows on every judged wire.
DEFAULT_MAX_HELD = 16 * 1024 * 1024

# The error event's code when a call outgrew the bound before it proved itself.
UNPROVEN_CODE = "tool_call_unproven"

_CALL_EVENTS = (ToolCallStart, ToolArgumentsDelta, ToolCallEnd)


def touches_calls(events: Sequence[StreamEvent]) -> bool:
    """True when ``events`` (one block's) start, continue or close a call."""
    for event in events:  # noqa: SIM110 (per event: a loop, not a generator for any())
        if type(event) in _CALL_EVENTS:
            return True
    return False


class HeldCalls:
    """The open calls of one stream and the blocks held behind them (module docstring)."""

    __slots__ = ("_assembler", "_base", "_names", "_open", "blocks", "limit", "size")

    def __init__(self, assembler: TurnAssembler, *, limit: int = DEFAULT_MAX_HELD) -> None:
        self._assembler = assembler
        self.limit = limit
        self.blocks: list[bytes] = []  # held, in order
        self.size = 0  # their bytes
        self._base = 0  # how many blocks were held and released before ``blocks[0]``
        self._open: dict[int, int] = {}  # open call index -> the block it was opened in
        self._names: dict[int, str] = {}  # every local call started -> its name

    @property
    def open(self) -> bool:
        """True while a call is not proven complete (its blocks and all after are held)."""
        return bool(self._open)

    def names(self) -> list[str]:
        """The names of the calls still open, in the order they started."""
        return [self._names[index] for index in sorted(self._open)]

    def take(self, block: bytes, events: Sequence[StreamEvent], out: list[bytes]) -> bool:
        """One block and the events the reader made of it: held, or passed to ``out`` with
        the held blocks it releases. False once more than ``limit`` bytes are held."""
        position = self._base + len(self.blocks)
        opened = self._open
        for event in events:
            if type(event) is ToolCallStart:
                if event.kind == "function":
                    opened[event.index] = position
                    self._names[event.index] = event.name
            elif type(event) is ToolArgumentsDelta:
                if event.index in self._names and event.index not in opened:
                    opened[event.index] = position  # more for a call already proven
            elif type(event) is ToolCallEnd and event.index in opened and self._proven(event.index):
                del opened[event.index]
        if not opened:
            out.extend(self.blocks)
            out.append(block)
            self._released(len(self.blocks))
            return True
        self.blocks.append(block)
        self.size += len(block)
        first = min(opened.values()) - self._base
        if first > 0:
            out.extend(self.blocks[:first])
            self._released(first)
        return self.size <= self.limit

    def _proven(self, index: int) -> bool:
        call = self._assembler.call(index)
        return (
            isinstance(call, ToolCall)
            and call.closed
            and call.provable
            and call.arguments is not None
        )

    def _released(self, count: int) -> None:
        if count == len(self.blocks):
            self.blocks.clear()
            self.size = 0
        else:
            self.size -= sum(map(len, self.blocks[:count]))
            del self.blocks[:count]
        self._base += count

    def release(self, out: list[bytes]) -> None:
        """The turn proved itself and no call was cut: everything held, in order."""
        out.extend(self.blocks)
        self.drop()

    def drop(self) -> None:
        """The answer is refused or broken: what is held never leaves."""
        self._released(len(self.blocks))
        self._open.clear()
