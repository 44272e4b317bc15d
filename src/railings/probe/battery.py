"""The requests ``railings probe`` sends: few, small, each asking one question.

Every request has a tiny output limit, so the whole battery costs at most
:func:`budget` output tokens, printed before anything is sent. Two complete answers
(Chat Completions: one with ``stream_options.include_usage``, one without, to see
whether usage comes unasked), one answer the output limit cuts in its text, and one it
cuts inside a tool call's arguments (a tool that needs long arguments, the conversation
holding one assistant turn already: the scripted server answers it with its second
turn). Sans-IO: bodies, not requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from railings.conversation import Assistant, Message, ToolSpec, User
from railings.providers import SPECS, EncodeRequest, Framing, spec

__all__ = ["DEMO_SCRIPT", "WIRES", "Ask", "battery", "body", "budget"]

# The wires a probe can rule on: SSE (whose comments are the keep-alives), with a stop
# reason sent apart from the proof (what ``structural`` asks for).
WIRES = tuple(s.name for s in SPECS if s.framing is Framing.SSE and s.proof.structure)

ANSWER_LIMIT = 32
TEXT_CUT_LIMIT = 4
CALL_CUT_LIMIT = 16


@dataclass(frozen=True, slots=True)
class Ask:
    """One request of the battery: what it asks (``label``), its output limit, and how
    its body is built."""

    label: str
    max_tokens: int
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    include_usage: bool = True
    cut: bool = False  # the output limit is meant to cut this answer

    @property
    def cuts_call(self) -> bool:
        """True for the request whose answer the limit cuts inside a tool call."""
        return self.cut and bool(self.tools)


WRITE_FILE = ToolSpec(
    name="write_file",
    description="Write a text file.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)

_SHORT = (User("Reply with the single word: OK"),)
_COUNT = (User("Count from 1 to 200, separated by commas."),)
_WRITE = (
    User("Reply with the single word: OK"),
    Assistant.of("OK"),
    User("Call write_file with path poem.txt and a poem of 300 words as its content."),
)


def battery(provider: str) -> tuple[Ask, ...]:
    """The requests for one wire (module docstring)."""
    asks_for_usage = spec(provider).asks_for_usage
    answers = (
        Ask("a short answer", ANSWER_LIMIT, _SHORT),
        Ask(
            "a short answer, no stream_options" if asks_for_usage else "another short answer",
            ANSWER_LIMIT,
            _SHORT,
            include_usage=False,
        ),
    )
    return (
        *answers,
        Ask("text the limit cuts", TEXT_CUT_LIMIT, _COUNT, cut=True),
        Ask(
            "a tool call the limit cuts",
            CALL_CUT_LIMIT,
            _WRITE,
            tools=(WRITE_FILE,),
            cut=True,
        ),
    )


def budget(asks: tuple[Ask, ...]) -> int:
    """The most output tokens the battery can cost: the sum of its limits."""
    return sum(ask.max_tokens for ask in asks)


def body(ask: Ask, provider: str, model: str) -> dict[str, Any]:
    """The request body, by the wire's own encoder."""
    return spec(provider).encode(
        EncodeRequest(
            model=model,
            messages=ask.messages,
            max_tokens=ask.max_tokens,
            tools=ask.tools,
            include_usage=ask.include_usage,
        )
    )


# What ``railings probe --demo`` talks to: the scripted server answers the first
# question with turn 1 (short enough for ANSWER_LIMIT, longer than TEXT_CUT_LIMIT) and
# the tool-call question with turn 2 (arguments far past CALL_CUT_LIMIT).
DEMO_SCRIPT: dict[str, Any] = {
    "model": "railings-scripted-1",
    "turns": [
        {"text": "OK. One, two, three, four, five."},
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "poem.txt", "content": {"$filler": 1500}},
                }
            ]
        },
    ],
}
