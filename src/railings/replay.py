"""Replay a captured response body through the core and report its verdict.

``replay`` is pure: bytes in, a :class:`Replay` out. The CLI and the tests use it,
and its JSON form (:func:`to_json`) is the stable machine-readable verdict.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from railings.turn.attempt import Attempt
from railings.turn.model import Turn
from railings.turn.profile import WIRE, Profile
from railings.turn.usage import usage_fields
from railings.turn.verdict import CallVerdict, judge
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE

__all__ = ["Replay", "replay", "to_json"]


@dataclass(frozen=True, slots=True)
class Replay:
    """One replayed body: the turn it assembled and the verdict on each of its tool calls,
    in the order the calls started."""

    turn: Turn
    verdicts: tuple[CallVerdict, ...]
    # Frames in the body (SSE events, event-stream frames, NDJSON lines, or the one
    # whole JSON body): 0 means it held no stream at all.
    sse_events: int = 0
    choices: frozenset[int] = frozenset()  # Chat Completions choice indexes (n > 1: several)
    framing: str = "sse"  # how the body was framed: sse, eventstream, ndjson or whole


def _pieces(body: bytes, chunk_size: int | None) -> Iterator[bytes]:
    if not chunk_size or chunk_size <= 0:
        yield body
        return
    for start in range(0, len(body), chunk_size):
        yield body[start : start + chunk_size]


def replay(
    body: bytes,
    *,
    provider: str = "auto",
    max_tokens: int | None = None,
    chunk_size: int | None = None,
    max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
    choice: int = 0,
    profile: Profile = WIRE,
) -> Replay:
    """Feed ``body`` (whole, or ``chunk_size`` bytes at a time) and judge the turn
    (``choice``: which Chat Completions choice, for ``n`` > 1). ``max_tokens``: the
    output limit the request was sent with; billed output that reached it truncates the
    turn whatever its stop reason, and a missing stop reason is derived from it.
    ``profile``: the endpoint profile to judge by (:mod:`railings.turn.profile`; the
    files and built-ins are :func:`railings.profiles.choose`'s)."""
    # The same attempt the client, the guard and the gateway judge a body with, read
    # offline: nothing is held back, and no clock runs.
    attempt = Attempt(
        provider,
        max_tokens=max_tokens,
        max_event_size=max_event_size,
        choice=choice,
        hold=False,
        profile=profile,
    )
    for piece in _pieces(body, chunk_size):
        if attempt.feed(piece, 0.0).done:
            break  # ended (Bedrock's usage after its proof is read on to the end)
    attempt.close()
    turn, reader = attempt.turn(), attempt.reader
    return Replay(
        turn,
        judge(turn),
        sse_events=reader.events_seen,
        choices=reader.choices,
        framing=reader.framing,
    )


def to_json(result: Replay) -> dict[str, Any]:
    """The verdict as one JSON object (the ``railings replay --json`` format)."""
    turn = result.turn
    error = turn.error
    return {
        "provider": turn.provider,
        "termination": turn.termination.value,
        "outcome": turn.outcome.value,
        "stop_reason": turn.stop_reason,
        "stop_reason_wire": turn.stop_reason_wire,
        "stop_reason_source": turn.stop_reason_source,
        "truncated": turn.truncated,
        "text": turn.text,
        "thinking": turn.thinking,
        "refusal": turn.refusal,
        "usage": usage_fields(turn.usage),
        "tool_calls": [
            {
                "index": v.call.index,
                "id": v.call.id,
                "name": v.call.name,
                "type": v.call.type,
                "origin": v.call.origin,
                "raw_arguments": v.call.raw_arguments,
                "arguments": v.arguments if v.execute else v.call.arguments,
                "verdict": v.verdict.value,
                "reason": None if v.reason is None else v.reason.value,
                "repaired": v.repaired,
                "notice": v.notice,
            }
            for v in result.verdicts
        ],
        "server_tool_calls": [
            {
                "index": c.index,
                "id": c.id,
                "name": c.name,
                "kind": c.kind,
                "input": c.input,
                "raw_input": c.raw_input,
                "result_arrived": c.result_arrived,
            }
            for c in turn.server_tool_calls
        ],
        "error": None
        if error is None
        else {
            "kind": error.kind.value,
            "message": error.message,
            "provider_type": error.provider_type,
            "retryable": error.retryable,
        },
    }
