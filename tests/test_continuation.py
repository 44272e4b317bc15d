"""Continuing a Partial answer, sans-IO: the repeat where the texts meet, the requests of
each strategy, the join, the refusals, and the events passed on while the rest streams."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from railings.continuation import (
    Continuation,
    Continued,
    Seam,
    check,
    default_strategy,
    join,
    overlap,
    request,
)
from railings.continuation.seam import _boundary
from railings.errors import BadRequest, CannotContinue, ContextWindowExceeded, RateLimited
from railings.events import StopReason, TerminationProof, TextDelta, ThinkingDelta, UsageUpdate
from railings.messages import Assistant, System, Text, User
from railings.providers import SPECS
from railings.turn.model import Outcome, Termination, Turn, Usage, UsageSource
from railings.turn.parts import Part, TextPart, ThinkingPart, ToolCall

HISTORY = (System("Be brief."), User("Tell me a story."))


def turn(
    *parts: Part,
    outcome: Outcome = Outcome.PARTIAL,
    usage: Usage | None = None,
    stop: str | None = None,
) -> Turn:
    return Turn(
        provider="anthropic",
        termination=Termination.CLEAN if outcome is Outcome.COMPLETE else Termination.ABRUPT,
        outcome=outcome,
        parts=parts,
        usage=usage or Usage(input_tokens=None, output_tokens=None),
        stop_reason=stop,
        stop_reason_wire=stop,
        stop_reason_source=None,
        truncated=False,
        error=None,
    )


def text(value: str) -> TextPart:
    return TextPart(text=value)


# -- the repeat -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("partial", "continuation", "repeated"),
    [
        # No repeat: the model went on where the text stopped.
        ("Once upon a time there", " was a king.", 0),
        ("Once upon a ti", "me there was a king.", 0),
        # The end again: the last words, from a word's start.
        ("Once upon a time there", "there was a king.", 5),
        ("Once upon a time. There", "time. There was a king.", 11),
        # Starting over: the whole text, however it ended (here inside a word).
        ("Once upon a ti", "Once upon a time there was a king.", 14),
        ("Once upon a time", "Once upon a time", 16),
        # The whitespace a prefill left out, sent by the model or not.
        ("Once upon a time. ", " There was a king.", 1),
        ("Once upon a time. ", "There was a king.", 0),
        ("First line.\n\n", "\nSecond line.", 1),
        ("def f():\n    ", "\n    return 1", 5),
        # Never inside a word: "bo" then "ok" is "book".
        ("I read a bo", "ok.", 0),
        ("I like tea", "a lot", 0),
        # Never inside a run of one mark.
        ("Title\n=====", "==\n", 0),
        # Unicode: code points, words in any script, punctuation as boundaries.
        ("Grüße aus Köln. Wir", "Wir sehen uns.", 3),
        ("今天天气很好，我们去公园", "我们去公园散步。", 5),
        ("我们今天去", "今天去公园", 0),  # no boundary inside a run of CJK characters
        ("Done 👍", "👍 and more", 1),
        ("cafe\u0301", "\u0301 au lait", 0),  # a combining mark belongs to the letter before it
        ("", "anything", 0),
        ("something", "", 0),
    ],
)
def test_the_repeat_where_the_texts_meet(partial: str, continuation: str, repeated: int) -> None:
    assert overlap(partial, continuation) == repeated
    assert _released(partial, [continuation]) == continuation[repeated:]


def _released(partial: str, pieces: list[str]) -> str:
    seam = Seam(partial)
    out = "".join(seam.feed(piece) for piece in pieces) + seam.close()
    assert seam.cut is not None
    return out


def _reference(partial: str, continuation: str) -> int:
    """The definition, by brute force."""
    for size in range(min(len(partial), len(continuation)), 0, -1):
        start = len(partial) - size
        if partial.endswith(continuation[:size]) and _boundary(partial, start):
            return size
    return 0


# Small alphabets, so that repeats happen: letters, a space, punctuation, a CJK character,
# a combining mark.
CHARS = st.sampled_from(list("ab ab.=\n好\u0301"))
TEXTS = st.text(CHARS, max_size=40)


@given(TEXTS, TEXTS)
def test_overlap_is_the_longest_end_that_begins_at_a_boundary(partial: str, cont: str) -> None:
    size = overlap(partial, cont)
    assert size == _reference(partial, cont)
    assert partial.endswith(cont[:size])


@given(st.text(min_size=1), st.text())
def test_starting_over_is_removed_whole(partial: str, rest: str) -> None:
    assert overlap(partial, partial + rest) == len(partial)


@given(TEXTS, TEXTS, st.lists(st.integers(min_value=0, max_value=40)))
def test_the_seam_releases_the_same_however_the_continuation_is_split(
    partial: str, continuation: str, cuts: list[int]
) -> None:
    points = sorted({min(c, len(continuation)) for c in cuts} | {0, len(continuation)})
    pieces = [continuation[a:b] for a, b in itertools.pairwise(points)]
    assert _released(partial, pieces) == continuation[overlap(partial, continuation) :]


def test_the_seam_releases_text_as_soon_as_it_cannot_be_a_repeat() -> None:
    seam = Seam("Once upon a time there")
    assert seam.feed("Once ") == ""  # may be starting over
    assert seam.feed("upon a ") == ""
    assert seam.feed("midnight") == "Once upon a midnight"
    assert seam.cut == 0 and seam.feed(" dreary") == " dreary"
    restart = Seam("Once upon a ti")
    assert restart.feed("Once upon a ti") == ""
    assert restart.feed("me.") == "me."  # longer than the partial text: decided
    assert restart.cut == 14


def test_another_part_decides_what_is_held() -> None:
    seam = Seam("Once upon a time")
    assert seam.feed("a time") == ""
    assert seam.settle() == ""  # "a time" repeated the end
    assert seam.cut == 6 and seam.feed(" there") == " there"


# -- refusals and strategies --------------------------------------------------------------


def test_only_a_partial_text_answer_is_continued() -> None:
    check(turn(text("Once upon")))
    check(turn(ThinkingPart(text="a story"), text("Once")))
    cut_call = ToolCall(
        index=0, id="c", name="shell", raw_arguments='{"cmd": "r', arguments=None, closed=False
    )
    cases = [
        (turn(text("The end."), outcome=Outcome.COMPLETE), "complete"),
        (turn(text("Let me run it."), cut_call), "tool_call"),
        (turn(ThinkingPart(text="hmm")), "no_text"),
        (turn(text("  \n")), "no_text"),
        (turn(), "no_text"),
    ]
    for partial, reason in cases:
        with pytest.raises(CannotContinue) as info:
            check(partial)
        assert info.value.reason == reason
        with pytest.raises(CannotContinue):
            Continuation(HISTORY, partial, provider="openai")


def test_the_default_strategy_is_the_wires() -> None:
    chosen = {s.name: default_strategy(s.name) for s in SPECS}
    assert {name for name, strategy in chosen.items() if strategy == "prefill"} == {"anthropic"}


def test_a_prefill_ends_on_the_text_without_its_trailing_whitespace() -> None:
    asked = request(HISTORY, "Once upon a time. \n", "prefill")
    assert asked[:-1] == HISTORY
    assert asked[-1] == Assistant((Text("Once upon a time."),))


def test_a_user_message_holds_the_text_and_the_conversation_ends_on_it() -> None:
    asked = request(HISTORY, "Once upon a time. ", "user")
    assert asked[:-1] == HISTORY
    last = asked[-1]
    assert isinstance(last, User) and "Once upon a time. \n" in last.text
    assert "do not repeat" in last.text
    assert not any(isinstance(m, Assistant) for m in asked)


def test_a_refused_prefill_is_asked_again_by_user_message_once() -> None:
    plan = Continuation(HISTORY, turn(text("Once upon")), provider="anthropic")
    assert plan.strategy == "prefill" and isinstance(plan.messages()[-1], Assistant)
    assert not plan.refused(RateLimited("slow down", status=429))
    assert not plan.refused(ContextWindowExceeded("too long", status=400))
    refusal = BadRequest("This model does not support assistant message prefill.", status=400)
    assert plan.refused(refusal)
    assert plan.strategy == "user" and plan.fell_back
    assert isinstance(plan.messages()[-1], User)
    assert not plan.refused(refusal)  # once
    user = Continuation(HISTORY, turn(text("Once upon")), provider="openai")
    assert user.strategy == "user" and not user.refused(refusal)


def test_an_unknown_strategy_is_a_configuration_error() -> None:
    from railings.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="'prefill' or 'user'"):
        Continuation(HISTORY, turn(text("x")), provider="openai", strategy="again")  # type: ignore[arg-type]


# -- the join -------------------------------------------------------------------------------


def test_the_joined_turn_is_the_partial_then_the_rest() -> None:
    partial = turn(
        ThinkingPart(text="a story", signature="sig"),
        text("Once upon a ti"),
        usage=Usage(input_tokens=10, output_tokens=7),
    )
    rest = turn(
        text("Once upon a time there was a king."),
        outcome=Outcome.COMPLETE,
        usage=Usage(input_tokens=30, output_tokens=9),
        stop="end_turn",
    )
    joined = join(partial, rest, repeated=14, strategy="user")
    assert joined.turn.text == "Once upon a time there was a king."
    assert joined.turn.thinking == "a story"
    assert joined.turn.outcome is Outcome.COMPLETE and joined.turn.stop_reason == "end_turn"
    assert joined.turn.usage == Usage(input_tokens=40, output_tokens=16)
    assert joined.attempt_of == (1, 1, 2)
    assert joined.parts_of(2) == (text("me there was a king."),)
    assert joined.attempts == (partial, rest)
    assert joined.repeated == 14 and joined.strategy == "user" and not joined.fell_back


def test_a_count_either_attempt_lacks_is_unknown_not_guessed() -> None:
    partial = turn(text("Once"), usage=Usage(input_tokens=10, output_tokens=None))
    rest = turn(text(" upon"), usage=Usage(input_tokens=30, output_tokens=2))
    assert join(partial, rest, repeated=0, strategy="user").turn.usage == Usage(
        input_tokens=40, output_tokens=None
    )
    unreported = join(turn(text("Once")), rest, repeated=0, strategy="user").turn.usage
    assert unreported == Usage(input_tokens=None, output_tokens=None)
    nothing = join(turn(text("Once")), turn(text("!")), repeated=0, strategy="user").turn.usage
    assert nothing == Usage(input_tokens=None, output_tokens=None)
    # A cut answer's output is usually an estimate: the sum says so, and how it was made.
    guessed = Usage(
        input_tokens=10,
        output_tokens=3,
        output_source=UsageSource.ESTIMATED,
        method="chars/4",
    )
    summed = join(turn(text("Once"), usage=guessed), rest, repeated=0, strategy="user")
    assert summed.turn.usage == Usage(
        input_tokens=40,
        output_tokens=5,
        output_source=UsageSource.ESTIMATED,
        method="chars/4",
    )


def test_a_continuation_cut_again_is_partial_and_continues_from_the_joined_text() -> None:
    first = join(turn(text("Once upon")), turn(text(" a time")), repeated=0, strategy="prefill")
    assert first.turn.outcome is Outcome.PARTIAL
    plan = Continuation(HISTORY, first, provider="anthropic")
    assert plan.messages()[-1] == Assistant((Text("Once upon a time"),))
    plan.feed(TextDelta(text=" there."))
    plan.finish(turn(text(" there."), outcome=Outcome.COMPLETE))
    assert isinstance(plan.result, Continued)
    assert plan.result.turn.text == "Once upon a time there."
    assert plan.result.attempt_of == (1, 2, 3) and len(plan.result.attempts) == 3


# -- the events passed on ---------------------------------------------------------------------


def test_events_wait_behind_held_text_and_the_repeat_is_never_passed_on() -> None:
    plan = Continuation(HISTORY, turn(text("Once upon a ti")), provider="openai")
    out = plan.feed(TextDelta(text="Once upon"))
    out += plan.feed(UsageUpdate(input_tokens=3, output_tokens=1))
    assert out == []  # still possibly starting over
    out += plan.feed(TextDelta(text=" a time there"))
    out += plan.feed(StopReason(wire="stop"))
    out += plan.feed(TerminationProof(marker="[DONE]"))
    rest = turn(text("Once upon a time there"), outcome=Outcome.COMPLETE)
    out += plan.finish(rest)
    assert out == [
        TextDelta(text="me there"),
        UsageUpdate(input_tokens=3, output_tokens=1),
        StopReason(wire="stop"),
        TerminationProof(marker="[DONE]"),
    ]
    assert plan.result is not None and plan.result.turn.text == "Once upon a time there"


def test_thinking_before_the_text_passes_at_once() -> None:
    plan = Continuation(HISTORY, turn(text("Once upon")), provider="openai")
    assert plan.feed(ThinkingDelta(text="go on")) == [ThinkingDelta(text="go on")]
    assert plan.feed(TextDelta(text=" a time")) == [TextDelta(text=" a time")]
