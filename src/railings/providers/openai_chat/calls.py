"""The tool calls of one Chat Completions stream: which delta continues which call.

Theory of operation. A call is known by its position in the turn (0, 1, ... in the
order the calls started). The wire says which call a delta continues in two shapes:

* ``tool_calls[]`` (``tools=``): keyed by ``index``; Mistral omits ``index`` (keyed by
  ``id``, or the latest call when neither is sent); Alibaba repeats ``id: ""`` on
  continuations (same call); some providers send several whole calls all at index 0
  with distinct ids (a new id at a known index starts a new call).
* ``function_call`` (``functions=``, the Chat API's first tool interface, still served
  by OpenAI, Azure and the OpenAI-compatible servers): one call per answer, with no id
  and no index, its ``name`` in the first fragment and its ``arguments`` in the
  following ones; the finish reason is ``function_call``, or ``length`` when the output
  limit cut it. It is the same call to the turn: started once, its arguments
  accumulated and parsed strictly when the turn ends, so a cut one is never run.

Either way ``function.arguments`` sent as a JSON object instead of a string (some
OpenAI-compatible servers) is serialized and marked ``parsed``: in a turn cut by the
output limit such a call is never executed (see ``turn/verdict.py``). A call's block
closes when a later call starts or the choice finishes (:meth:`ChatCalls._close_all`).
"""

from __future__ import annotations

import json
from typing import Any

from railings.events import StreamEvent, ToolArgumentsDelta, ToolCallEnd, ToolCallStart, Unknown
from railings.providers.openai_chat.fields import CALL_FIELDS, FUNCTION_FIELDS, unknown_fields
from railings.wire._events import arguments_delta

__all__ = ["ChatCalls"]


class ChatCalls:
    """The call bookkeeping of
    :class:`~railings.providers.openai_chat.decoder.OpenAIChatDecoder` (its base): the
    handlers of the delta's ``tool_calls`` and ``function_call`` keys."""

    __slots__ = (
        "_by_id",
        "_by_index",
        "_call_keys",
        "_function_keys",
        "_last",
        "_legacy",
        "_next",
        "_open",
    )

    def __init__(self) -> None:
        self._next = 0  # position of the next call to start
        self._by_index: dict[int, tuple[int, str]] = {}  # wire index -> (position, id)
        self._by_id: dict[str, int] = {}  # id -> position
        self._last: int | None = None  # position of the latest call
        self._legacy: int | None = None  # position of the ``function_call`` call
        self._open: set[int] = set()  # positions whose argument block is not closed yet
        # The fields last checked for a call and its function (see fields.py).
        self._call_keys: list[str] = []
        self._function_keys: list[str] = []

    # -- the delta's keys ----------------------------------------------------------------------

    def _tool_calls(self, calls: object, out: list[StreamEvent]) -> None:
        if not isinstance(calls, list):
            out.append(Unknown(name="openai:delta:tool_calls"))
            return
        for call in calls:
            if isinstance(call, dict):
                self._tool_call(call, out)
            else:
                out.append(Unknown(name="openai:tool_call"))

    def _function_call(self, call: object, out: list[StreamEvent]) -> None:
        """``delta.function_call`` (``functions=``): the one call of the answer. Its first
        fragment that is not ``{}`` starts it; every later one continues it."""
        if not isinstance(call, dict):
            out.append(Unknown(name="openai:delta:function_call"))
            return
        if not FUNCTION_FIELDS.issuperset(call):
            unknown_fields("function_call", call, FUNCTION_FIELDS, out)
        position = self._legacy
        if position is None and not call:
            return  # ``{}``: no call begun (a name or arguments begin one)
        if position is None:
            position = self._legacy = self._start(None, "")
            out.extend(self._close_others(position))
            out.append(ToolCallStart(index=position, id="", name=str(call.get("name") or "")))
        self._arguments(position, call.get("arguments"), out)

    # -- tool calls ----------------------------------------------------------------------------

    def _tool_call(self, call: dict[str, Any], out: list[StreamEvent]) -> None:
        ident = call.get("id") or ""
        if not isinstance(ident, str):
            ident = str(ident)
        function = call.get("function")
        if not isinstance(function, dict):
            function = {}
        keys = [*call]
        if keys != self._call_keys:  # see railings.providers.openai_chat.fields
            self._call_keys = keys
            unknown_fields("tool_call", call, CALL_FIELDS, out)
        keys = [*function]
        if keys != self._function_keys:
            self._function_keys = keys
            unknown_fields("function", function, FUNCTION_FIELDS, out)
        wire_index = call.get("index")
        position = self._position(wire_index if isinstance(wire_index, int) else None, ident)
        if position is None:
            position = self._start(wire_index if isinstance(wire_index, int) else None, ident)
            name = function.get("name") or ""
            out.extend(self._close_others(position))
            out.append(ToolCallStart(index=position, id=ident, name=str(name)))
        self._arguments(position, function.get("arguments"), out)

    @staticmethod
    def _arguments(position: int, arguments: object, out: list[StreamEvent]) -> None:
        if arguments is not None and not isinstance(arguments, str):
            # Some servers send the arguments as an object rather than a JSON string. The
            # server parsed (often repaired) the model's text: serialized here, it parses
            # strictly whatever the model wrote, so it is marked as proving nothing.
            out.append(
                ToolArgumentsDelta(index=position, fragment=json.dumps(arguments), parsed=True)
            )
        elif arguments:
            out.append(arguments_delta(position, arguments))

    def _position(self, wire_index: int | None, ident: str) -> int | None:
        """The position of the call this delta continues, or None for a new call."""
        if wire_index is None:
            if ident:
                return self._by_id.get(ident)
            return self._last
        known = self._by_index.get(wire_index)
        if known is None:
            return None
        position, known_id = known
        if ident and known_id and ident != known_id:
            return None  # several whole calls at one index: a new id is a new call
        return position

    def _start(self, wire_index: int | None, ident: str) -> int:
        position = self._next
        self._next += 1
        if wire_index is not None:
            self._by_index[wire_index] = (position, ident)
        if ident:
            self._by_id[ident] = position
        self._last = position
        self._open.add(position)
        return position

    def _close_others(self, started: int) -> list[StreamEvent]:
        """A later call starting closes the argument blocks of the earlier ones."""
        ended = [p for p in sorted(self._open) if p != started]
        for position in ended:
            self._open.discard(position)
        return [ToolCallEnd(index=p) for p in ended]

    def _close_all(self, out: list[StreamEvent]) -> None:
        """The choice finished: every argument block still open closes."""
        for position in sorted(self._open):
            out.append(ToolCallEnd(index=position))
        self._open.clear()
