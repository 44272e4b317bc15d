"""Attacks on the verdicts and on when a call runs: a cut turn whose stream already
reported billed output, in a spelling the decoders read past, must be Partial (kept,
never resent and paid twice); billed output at the cap must keep a cut call from
running; a call whose approval rule asks must not have run before the answer.
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


def chat(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def usage(completion_tokens: object) -> bytes:
    return sse({"id": "c", "choices": [], "usage": {"completion_tokens": completion_tokens}})


# A call cut mid-arguments in a turn whose billed output reached the requested 64 tokens,
# while the server says "tool_calls" (as vLLM does): the call must not run repaired.
CUT_CALL = (
    chat(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "shell", "arguments": ""},
                }
            ],
        }
    )
    + chat({"tool_calls": [{"index": 0, "function": {"arguments": '{"command": "rm -rf build'}}]})
    + chat({}, "tool_calls")
)
DONE = b"data: [DONE]\n\n"


def _executed(body: bytes) -> list[str]:
    result = replay(body, provider="openai", max_tokens=64)
    return [v.verdict.name for v in result.verdicts if v.verdict.name == "EXECUTE"]


def test_usage_at_the_cap_stays_evidence_after_a_later_smaller_report() -> None:
    assert _executed(CUT_CALL + usage(64) + DONE) == []  # holds: the cut call is refused
    assert _executed(CUT_CALL + usage(64) + usage(3) + DONE) == []


@pytest.mark.parametrize("spelled", ["64", 64.0], ids=["string", "float"])
def test_usage_at_the_cap_is_read_however_the_number_is_spelled(spelled: object) -> None:
    assert _executed(CUT_CALL + usage(spelled) + DONE) == []


def test_a_speculative_tool_with_an_approval_rule_waits_for_the_approval() -> None:
    # A read-only tool may start while the turn streams; one whose approval rule asks for
    # this call (reading a secret) must not have run when the user denies it.
    import asyncio

    from railings.dispatch import (
        Dispatcher,
        OutcomeStatus,
        SpeculativeRunner,
        ToolRegistry,
        default_chain,
        tool,
    )
    from streams import openai_chunk
    from test_dispatch_speculative import chunk_args, chunk_call, stream

    ran: list[str] = []

    def secret_rule(arguments: Any) -> str | None:
        return "it reads a secret" if arguments.get("path") == "secret" else None

    @tool(read_only=True, speculative=True, approval=secret_rule)
    def peek(path: str) -> str:
        ran.append(path)
        return "the secret"

    body = b"".join(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            chunk_call(0, "peek", "call_0"),
            chunk_args(0, '{"path": "secret"}'),
            openai_chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    )

    async def go() -> Any:
        registry = ToolRegistry([peek])
        chain = default_chain(approve=lambda call: False, needs_approval=lambda t: False)
        async with SpeculativeRunner(registry) as runner:
            reader = await stream(body, runner)
            return await Dispatcher(registry, chain=chain).dispatch_turn(
                reader.turn(), speculative=runner
            )

    result = asyncio.run(go())
    assert [o.status for o in result.outcomes] == [OutcomeStatus.DENIED]
    assert ran == []
