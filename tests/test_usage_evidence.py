"""Usage reports as evidence: a count above the stream's opening one is billed output
(Partial, never resent), a count at or below it is not; the largest count reported is
the evidence at the cap; counts are read however a JSON body spells a number; and the
output the decoders read past (Anthropic's ``message_start`` content, another Chat
choice) is billed, on the fast path as on the general one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from railings import replay
from railings.events import BilledOutput, StreamEvent, UsageUpdate
from railings.turn.billable import billable
from railings.turn.model import Outcome, Turn
from railings.turn.reader import StreamReader
from railings.wire._json import as_count


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def anthropic_start(output_tokens: object, content: list[Any] | None = None) -> bytes:
    message = {"id": "m", "model": "c", "content": content or [], "usage": {}}
    message["usage"] = {"input_tokens": 5, "output_tokens": output_tokens}
    return sse({"type": "message_start", "message": message}, "message_start")


def anthropic_usage(output_tokens: object) -> bytes:
    body = {"type": "message_delta", "delta": {}, "usage": {"output_tokens": output_tokens}}
    return sse(body, "message_delta")


def read(provider: str, body: bytes) -> tuple[list[StreamEvent], Turn]:
    reader = StreamReader(provider)
    events = reader.feed(body) + reader.close()
    return events, reader.turn()


def chat(choice: int, delta: dict[str, Any]) -> bytes:
    return sse({"id": "c", "choices": [{"index": choice, "delta": delta}]})


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        # the opening count repeated: nothing billed since, as far as the count says
        ("anthropic", anthropic_start(1) + anthropic_usage(1)),
        ("anthropic", anthropic_start(3) + anthropic_usage(2)),
        # a usage chunk that counts no output (continuous usage stats' first chunk)
        (
            "openai",
            chat(0, {"role": "assistant"})
            + sse({"id": "c", "choices": [], "usage": {"completion_tokens": 0}}),
        ),
        ("gemini", sse({"usageMetadata": {"promptTokenCount": 5}})),
        # another choice's role-only delta carries nothing
        ("openai", chat(0, {"role": "assistant"}) + chat(1, {"role": "assistant"})),
    ],
    ids=["anthropic-same", "anthropic-smaller", "openai-zero", "gemini-prompt-only", "role-only"],
)
def test_a_cut_after_a_count_of_nothing_is_empty(provider: str, body: bytes) -> None:
    assert replay(body, provider=provider).turn.outcome is Outcome.EMPTY


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        ("anthropic", anthropic_start(1) + anthropic_usage("2")),
        ("anthropic", anthropic_usage(1)),  # no opening report: the baseline is 0
        ("gemini", sse({"usageMetadata": {"promptTokenCount": 5, "thoughtsTokenCount": "7"}})),
        # a second opening report is no baseline: it counts like any other
        ("anthropic", anthropic_start(1) + anthropic_start(300)),
    ],
    ids=["anthropic-string", "anthropic-no-opening", "gemini-string", "second-opening"],
)
def test_a_cut_after_a_count_above_the_opening_is_partial(provider: str, body: bytes) -> None:
    assert replay(body, provider=provider).turn.outcome is Outcome.PARTIAL


def test_the_baseline_is_the_opening_count_only() -> None:
    assert not billable(UsageUpdate(input_tokens=5, output_tokens=4, opening=True))
    assert billable(UsageUpdate(input_tokens=5, output_tokens=4, opening=True), baseline=1)
    assert not billable(UsageUpdate(input_tokens=None, output_tokens=4), baseline=4)
    assert billable(UsageUpdate(input_tokens=None, output_tokens=5), baseline=4)
    assert not billable(UsageUpdate(input_tokens=900, output_tokens=None))


def test_the_usage_reported_stays_the_last_while_the_evidence_is_the_largest() -> None:
    body = (
        chat(0, {"content": "hi"})
        + sse({"id": "c", "choices": [], "usage": {"completion_tokens": 64}})
        + sse({"id": "c", "choices": [], "usage": {"completion_tokens": 3}})
        + b"data: [DONE]\n\n"
    )
    turn = replay(body, provider="openai", max_tokens=64).turn
    assert turn.usage is not None and turn.usage.output_tokens == 3
    assert turn.peak_output_tokens == 64
    assert turn.truncated
    assert turn.stop_reason == "max_tokens"  # derived from the evidence, no stop on the wire


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (64, 64),
        (0, 0),
        (64.0, 64),
        ("64", 64),
        ("064", 64),
        (True, None),
        (False, None),
        (64.5, None),
        (-1, None),
        (-1.0, None),
        ("-1", None),
        ("+1", None),
        (" 64", None),
        ("6e1", None),
        ("", None),
        ("\u0663", None),  # ARABIC-INDIC DIGIT THREE: isdigit, but no JSON body's number
        ("9" * 21, None),
        (float("inf"), None),
        (float("nan"), None),
        (None, None),
        ([64], None),
    ],
)
def test_a_count_is_read_however_json_spells_it(value: object, count: int | None) -> None:
    assert as_count(value) == count


def test_anthropic_message_start_content_is_reported_once() -> None:
    start = anthropic_start(40, [{"type": "text", "text": "Hello"}])
    events, turn = read("anthropic", start)
    assert turn.outcome is Outcome.PARTIAL
    assert [e for e in events if isinstance(e, BilledOutput)] == [
        BilledOutput(name="anthropic:message_start:content")
    ]


def test_another_choice_is_billed_once_and_never_read_as_the_turn() -> None:
    body = (
        chat(0, {"role": "assistant"})
        + chat(1, {"content": "Hello"})
        + chat(1, {"content": " there"})
        + chat(0, {"content": "Hi"})
    )
    events, turn = read("openai", body)
    assert turn.text == "Hi"
    assert [e for e in events if isinstance(e, BilledOutput)] == [
        BilledOutput(name="openai:choice:other")
    ]


@pytest.mark.parametrize("size", [1, 7, 64, 10**6])
def test_another_choice_is_billed_however_the_stream_is_chunked(size: int) -> None:
    # The fast path reads choice 0's text chunks by template; another choice's chunk has
    # the same keys, so it must fall back to the table and be billed there too.
    body = (
        chat(0, {"role": "assistant"})
        + chat(0, {"content": ""})
        + chat(0, {"content": ""})
        + chat(1, {"content": "Hello"})
    )
    assert replay(body, provider="openai", chunk_size=size).turn.outcome is Outcome.PARTIAL
