"""The requests ``railings probe`` sends: few, small, each asking one question.

Every request has a tiny output limit, so the whole battery costs at most
:func:`budget` output tokens, printed before anything is sent. One complete answer
(Chat Completions: two, one with ``stream_options.include_usage`` and one without, to
see whether usage comes unasked; no other wire has a way to ask for usage, nor one
to leave it out), one answer the output limit cuts in its text, and one it cuts inside
a tool call's arguments (a tool that needs long arguments, the conversation holding
one assistant turn already: the scripted server answers it with its second turn).
Every wire ``railings run`` speaks is probed, each body built by the wire's own
encoder (the limit in its own field: ``max_output_tokens``, ``maxOutputTokens``,
``maxTokens``, ``num_predict``). Sans-IO: bodies, not requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from railings.conversation import Assistant, Message, ToolSpec, User
from railings.providers import NAMES, SPECS, EncodeRequest, Framing, spec

__all__ = ["DEMO_SCRIPT", "NAMED_ENDING_WIRES", "WIRES", "Ask", "battery", "body", "budget"]

# Every wire ``railings run`` speaks.
WIRES = NAMES
# The wires whose stop reason and usage arrive in frames of their own before the
# terminator, so an endpoint that never sends the terminator may still end with them
# (the ending a profile may name). Ollama's ``done_reason`` and counts come on the
# ``done: true`` line itself, and the other wires' proof carries the stop reason: an
# answer without the proof has neither.
NAMED_ENDING_WIRES = tuple(s.name for s in SPECS if s.framing is Framing.SSE and s.proof.structure)

ANSWER_LIMIT = 32
TEXT_CUT_LIMIT = 4
CALL_CUT_LIMIT = 16
# The smallest output limit a wire's API accepts, where it refuses a smaller one: the
# Responses API answers 400 to ``max_output_tokens`` below 16 (``integer_below_min_value``).
_FLOOR = {"openai-responses": 16}


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
    floor = _FLOOR.get(provider, 1)
    answers: tuple[Ask, ...] = (Ask("a short answer", ANSWER_LIMIT, _SHORT),)
    if spec(provider).asks_for_usage:
        unasked = Ask(
            "a short answer, no stream_options", ANSWER_LIMIT, _SHORT, include_usage=False
        )
        answers = (*answers, unasked)
    return (
        *answers,
        Ask("text the limit cuts", max(TEXT_CUT_LIMIT, floor), _COUNT, cut=True),
        Ask(
            "a tool call the limit cuts",
            max(CALL_CUT_LIMIT, floor),
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
# question with turn 1 (short enough for ANSWER_LIMIT, longer than every wire's text
# cut limit: 16 on Responses, at 4 characters a token) and the tool-call question with
# turn 2 (arguments far past CALL_CUT_LIMIT).
DEMO_SCRIPT: dict[str, Any] = {
    "model": "railings-scripted-1",
    "turns": [
        {"text": "OK. One, two, three, four, five, six, seven, eight, nine, ten, eleven."},
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
