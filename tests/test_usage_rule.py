"""The rule that settles a turn's usage (``railings.turn.usage``): each count reported,
estimated by a named method, or unknown; a reported count is never overwritten."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from railings import replay
from railings.errors import ConfigurationError
from railings.turn.model import Outcome, Usage, UsageSource
from railings.turn.parts import (
    Part,
    ProviderItem,
    RedactedThinkingPart,
    RefusalPart,
    ServerToolCall,
    TextPart,
    ThinkingPart,
    ToolCall,
)
from railings.turn.usage import (
    METHOD,
    describe,
    estimate,
    output_chars,
    request_chars,
    settle,
    shown,
    usage_fields,
)

REPORTED, ESTIMATED, UNKNOWN = UsageSource.REPORTED, UsageSource.ESTIMATED, UsageSource.UNKNOWN
TEXT = (TextPart(text="x" * 41),)  # 41 characters: ceil(41 / 4) = 11


def sources(usage: Usage) -> tuple[UsageSource, UsageSource]:
    return usage.input_source, usage.output_source


# -- the method ------------------------------------------------------------------------------


@pytest.mark.parametrize(("chars", "tokens"), [(0, 0), (1, 1), (4, 1), (5, 2), (41, 11)])
def test_the_estimate_is_the_ceiling_of_a_quarter_of_the_characters(
    chars: int, tokens: int
) -> None:
    assert estimate(chars) == tokens
    assert METHOD == "chars/4"


def test_the_output_text_is_text_refusal_thinking_and_what_each_call_wrote() -> None:
    call = ToolCall(
        index=0, id="c", name="shell", raw_arguments='{"a":1}', arguments={"a": 1}, closed=True
    )
    server = ServerToolCall(
        index=1,
        id="s",
        name="web",
        kind="server_tool_use",
        raw_input="{}",
        input={},
        result_arrived=True,
    )
    parts: tuple[Part, ...] = (
        TextPart(text="abc"),
        RefusalPart(text="no"),
        ThinkingPart(text="hmm", signature="opaque-signature"),
        RedactedThinkingPart(data="opaque-data"),
        call,
        server,
        ProviderItem(item={"type": "reasoning", "encrypted_content": "opaque"}),
    )
    assert output_chars(parts) == 3 + 2 + 3 + len("shell") + 7 + len("web") + 2


def test_the_request_text_is_every_string_but_the_payloads() -> None:
    body = {
        "model": "m",  # 1
        "max_tokens": 64,  # a number: structure
        "messages": [
            {"role": "user", "content": "hello"},  # 4 + 5
            {
                "role": "user",  # 4
                "content": [
                    {"type": "image", "source": {"type": "base64", "data": "A" * 9000}},  # 5 + 6
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},  # 9
                    {"type": "input_audio", "input_audio": {"data": "B" * 500}},  # 11
                ],
            },
        ],
        "images": ["C" * 700],
    }
    assert request_chars(body) == 1 + 4 + 5 + 4 + 5 + 6 + 9 + 11


def test_the_request_text_is_counted_at_any_depth() -> None:
    deep: object = "abcd"
    for _ in range(50_000):  # far deeper than Python recurses
        deep = [deep]
    assert request_chars(deep) == 4


# -- the rule, each combination --------------------------------------------------------------


@pytest.mark.parametrize("outcome", list(Outcome))
def test_reported_counts_stay_reported_and_unchanged(outcome: Outcome) -> None:
    usage = settle(input_tokens=7, output_tokens=3, outcome=outcome, parts=TEXT, request_chars=4000)
    assert usage == Usage(input_tokens=7, output_tokens=3)
    assert sources(usage) == (REPORTED, REPORTED) and usage.method is None
    assert usage.source is REPORTED


@pytest.mark.parametrize("outcome", [Outcome.PARTIAL, Outcome.COMPLETE])
def test_a_missing_output_count_of_a_turn_with_text_is_estimated(outcome: Outcome) -> None:
    usage = settle(input_tokens=7, output_tokens=None, outcome=outcome, parts=TEXT)
    assert (usage.output_tokens, usage.output_source, usage.method) == (11, ESTIMATED, "chars/4")
    assert (usage.input_tokens, usage.input_source) == (7, REPORTED)
    assert usage.source is ESTIMATED


def test_a_turn_that_received_no_text_has_an_unknown_output_not_zero() -> None:
    # A Partial turn whose only content was a stop reason or hidden reasoning.
    usage = settle(input_tokens=None, output_tokens=None, outcome=Outcome.PARTIAL, parts=())
    assert (usage.output_tokens, usage.output_source) == (None, UNKNOWN)
    assert usage.method is None and usage.source is UNKNOWN


def test_an_empty_turn_is_unknown_unless_the_provider_said_so() -> None:
    # Nothing billable arrived: no estimate of anything, whatever the shell passed in.
    usage = settle(
        input_tokens=None, output_tokens=None, outcome=Outcome.EMPTY, parts=TEXT, request_chars=400
    )
    assert (usage.input_tokens, usage.output_tokens) == (None, None)
    assert sources(usage) == (UNKNOWN, UNKNOWN) and usage.method is None
    said = settle(input_tokens=12, output_tokens=0, outcome=Outcome.EMPTY, parts=())
    assert (said.output_tokens, said.output_source) == (0, REPORTED)


@pytest.mark.parametrize("outcome", [Outcome.PARTIAL, Outcome.COMPLETE])
def test_a_missing_input_count_is_estimated_only_from_the_request_size(outcome: Outcome) -> None:
    known = settle(
        input_tokens=None, output_tokens=3, outcome=outcome, parts=TEXT, request_chars=401
    )
    assert (known.input_tokens, known.input_source, known.method) == (101, ESTIMATED, METHOD)
    assert (known.output_tokens, known.output_source) == (3, REPORTED)
    unknown = settle(input_tokens=None, output_tokens=3, outcome=outcome, parts=TEXT)
    assert (unknown.input_tokens, unknown.input_source, unknown.method) == (None, UNKNOWN, None)
    assert unknown.source is UNKNOWN


def test_the_opening_output_count_stands_only_when_no_text_followed_it() -> None:
    # Anthropic's message_start counts a token or so before any output: not the turn's count.
    cut = settle(
        input_tokens=11, output_tokens=1, outcome=Outcome.PARTIAL, parts=TEXT, opening_output=True
    )
    assert (cut.output_tokens, cut.output_source) == (11, ESTIMATED)
    assert (cut.input_tokens, cut.input_source) == (11, REPORTED)
    nothing = settle(
        input_tokens=11, output_tokens=1, outcome=Outcome.EMPTY, parts=(), opening_output=True
    )
    assert (nothing.output_tokens, nothing.output_source) == (1, REPORTED)


@given(
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=10**9),
    st.sampled_from(list(Outcome)),
    st.text(max_size=50),
    st.none() | st.integers(min_value=0, max_value=10**7),
)
def test_a_reported_count_is_never_overwritten(
    input_tokens: int, output_tokens: int, outcome: Outcome, text: str, size: int | None
) -> None:
    usage = settle(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        outcome=outcome,
        parts=(TextPart(text=text),),
        request_chars=size,
    )
    assert (usage.input_tokens, usage.output_tokens) == (input_tokens, output_tokens)
    assert sources(usage) == (REPORTED, REPORTED) and usage.method is None


# -- the value -------------------------------------------------------------------------------


def test_usage_built_as_before_means_what_it_meant() -> None:
    usage = Usage(input_tokens=5, output_tokens=None)
    assert sources(usage) == (REPORTED, UNKNOWN) and usage.source is UNKNOWN
    assert Usage(input_tokens=None, output_tokens=None).source is UNKNOWN


def test_usage_refuses_a_count_it_cannot_account_for() -> None:
    with pytest.raises(ConfigurationError, match="cannot be unknown"):
        Usage(input_tokens=5, output_tokens=None, input_source=UNKNOWN)
    with pytest.raises(ConfigurationError, match="method"):
        Usage(input_tokens=None, output_tokens=5, output_source=ESTIMATED)


# -- what readers see ------------------------------------------------------------------------


def test_an_estimate_is_never_shown_as_a_plain_number() -> None:
    usage = settle(
        input_tokens=9, output_tokens=None, outcome=Outcome.PARTIAL, parts=TEXT, request_chars=None
    )
    fields = usage_fields(usage)
    assert fields == {
        "input_tokens": 9,
        "output_tokens": 11,
        "input_source": "reported",
        "output_source": "estimated",
        "method": "chars/4",
    }
    assert describe(fields) == "9 in, ~11 (estimated, chars/4) out"
    assert shown(None, "unknown") == "unknown"


def test_an_entry_written_before_sources_were_kept_reads_as_reported() -> None:
    assert describe({"input_tokens": 12, "output_tokens": 40}) == "12 in, 40 out"
    assert describe({"input_tokens": None, "output_tokens": "\x1b[2J"}) == "unknown in, unknown out"


# -- through the reader ----------------------------------------------------------------------


def _sse(data: object, event: str) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def test_an_anthropic_stream_cut_after_its_text_estimates_the_output() -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "model": "c",
            "content": [],
            "usage": {"input_tokens": 11, "output_tokens": 1},
        },
    }
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "y" * 41},
    }
    body = (
        _sse(start, "message_start")
        + _sse(block, "content_block_start")
        + _sse(delta, "content_block_delta")
    )
    turn = replay(body, provider="anthropic").turn
    assert turn.outcome is Outcome.PARTIAL
    assert (turn.usage.input_tokens, turn.usage.input_source) == (11, REPORTED)
    assert (turn.usage.output_tokens, turn.usage.output_source) == (11, ESTIMATED)
    assert turn.peak_output_tokens == 1  # the evidence at the cap reads only reports
