"""Continue a Partial answer, when the caller asks: the rest of a cut text answer, joined.

Theory of operation. A Partial turn is billed and kept; railings never resends it on its
own. When the caller asks (:func:`continue_turn`, ``/continue`` in ``railings chat``),
one new request asks the model for the rest of the turn's text, by one of two
strategies:

* ``"prefill"``: the conversation, then an assistant message holding the partial text,
  which the model carries on. Its trailing whitespace is left out of the request (the
  Messages API refuses a last assistant message that ends in whitespace); the text kept
  and shown still has it.
* ``"user"``: the conversation, then a user message holding the partial text and asking
  for the rest from exactly where it stops. The partial text is not sent as an assistant
  message: the conversation ends on the user's side, which every model accepts.

The default is the wire's, ``ProviderSpec.continues_by_prefill``: prefill on the
Anthropic Messages wire, a user message elsewhere; ``strategy=`` chooses. A prefill
refused with HTTP 400 (current Claude models: "This model does not support assistant
message prefill. The conversation must end with a user message.") is asked for once
more by user message: a 400 is not billed and nothing had reached the caller.

A model asked by user message often starts over, or writes the end of what it had
written again. That repeat is removed where the two texts meet
(:mod:`~railings.continuation.seam`), before the repeated text is passed on, so what a
caller shows as it streams is the joined text. A prefill is carried on, not repeated:
only the whitespace it left out is removed when the model sends it back.

The result, :class:`Continued`, is one turn: the partial turn's parts, then the
continuation's, with ``attempt_of`` saying which attempt each part came from. Its ending
(outcome, termination, stop reason, error) is the continuation's: a continuation that is
cut too is Partial, and can be continued again. Its usage is the sum (a count either
attempt lacks is None, not a guess). The continuation is a new request: the whole input
is billed again, and output only for the rest.

Never for a tool call: a turn holding one, whole or cut, is refused with
:class:`~railings.errors.CannotContinue`, as is a complete turn and one without text. A
cut call is answered with its notice and the model resends it whole, as always.

The parts: :mod:`~railings.continuation.seam` (the repeat, sans-IO),
:mod:`~railings.continuation.plan` (the strategies, the requests, the join: sans-IO) and
:mod:`~railings.continuation.drive` (the async and blocking drivers over a client).
"""

from __future__ import annotations

from railings.continuation.drive import (
    AsyncTurns,
    ContinuationStream,
    SyncContinuationStream,
    Turns,
    continue_turn,
    continue_turn_sync,
)
from railings.continuation.plan import (
    Continuation,
    Continued,
    Strategy,
    check,
    default_strategy,
    join,
    request,
)
from railings.continuation.seam import Seam, overlap

__all__ = [
    "AsyncTurns",
    "Continuation",
    "ContinuationStream",
    "Continued",
    "Seam",
    "Strategy",
    "SyncContinuationStream",
    "Turns",
    "check",
    "continue_turn",
    "continue_turn_sync",
    "default_strategy",
    "join",
    "overlap",
    "request",
]
