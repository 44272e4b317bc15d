"""Attacks on the Empty verdict: a cut turn whose stream already reported billed output,
in a spelling the decoders read past, must be Partial (kept, never resent and paid twice).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from railings import replay
from railings.turn.model import Outcome


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


OPENAI_ROLE = sse({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant"}}]})
ANTHROPIC_START = sse(
    {
        "type": "message_start",
        "message": {"id": "m", "model": "c", "content": [], "usage": {"output_tokens": 1}},
    },
    "message_start",
)


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        # hidden reasoning billed, reported by a usage chunk (continuous usage stats)
        (
            "openai",
            OPENAI_ROLE
            + sse(
                {
                    "id": "c",
                    "choices": [{"index": 0, "delta": {}}],
                    "usage": {
                        "prompt_tokens": 5,
                        "completion_tokens": 300,
                        "total_tokens": 305,
                        "completion_tokens_details": {"reasoning_tokens": 300},
                    },
                }
            ),
        ),
        # Gemini's thoughts are billed as output; this chunk reports 500 of them
        (
            "gemini",
            sse({"usageMetadata": {"promptTokenCount": 5, "thoughtsTokenCount": 500}}),
        ),
        # Anthropic's running count after message_start: 300 output tokens billed
        (
            "anthropic",
            ANTHROPIC_START
            + sse(
                {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 300}},
                "message_delta",
            ),
        ),
    ],
    ids=["openai-reasoning-usage", "gemini-thoughts", "anthropic-running-count"],
)
def test_a_cut_after_usage_that_reports_billed_output_is_partial(
    provider: str, body: bytes
) -> None:
    assert replay(body, provider=provider).turn.outcome is Outcome.PARTIAL


def test_text_in_anthropic_message_start_is_billed_output() -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "model": "c",
            "content": [{"type": "text", "text": "Hello there"}],
            "usage": {"input_tokens": 5, "output_tokens": 40},
        },
    }
    assert replay(sse(start, "message_start"), provider="anthropic").turn.outcome is Outcome.PARTIAL


def test_text_in_a_chat_choice_other_than_the_first_is_billed_output() -> None:
    body = sse({"id": "c", "choices": [{"index": 1, "delta": {"content": "Hello"}}]})
    assert replay(body, provider="openai").turn.outcome is Outcome.PARTIAL
