"""The Responses API request body, and the conversation's round trip through it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from railings import replay
from railings.errors import ConfigurationError
from railings.messages import (
    Assistant,
    ResponsesItems,
    ServerBlock,
    System,
    Text,
    ToolResult,
    ToolUse,
    User,
)
from railings.providers.anthropic.encoder import anthropic_messages_body
from railings.providers.openai_chat.encoder import openai_chat_body
from railings.providers.openai_responses.encoder import openai_responses_body
from railings.testing.script import assistant_turns
from railings.testing.wire_responses import events, parse_ask
from railings.turn.model import Outcome
from railings.turn.reader import StreamReader
from railings.turn.verdict import judge
from test_messages import HISTORY, SHELL


def test_the_body_has_instructions_input_items_and_the_always_armed_limit() -> None:
    body = openai_responses_body("gpt-5", HISTORY, max_tokens=100, tools=[SHELL])
    assert body["stream"] is True and body["store"] is False
    assert body["max_output_tokens"] == 100
    assert body["instructions"] == "You are terse."
    assert body["tools"] == [
        {
            "type": "function",
            "name": "shell",
            "description": "Run a shell command.",
            "parameters": dict(SHELL.parameters),
            "strict": False,
        }
    ]
    assert body["input"] == [
        {"role": "user", "content": "clean up"},
        {"role": "assistant", "content": "Looking."},  # reasoning is never sent back
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "shell",
            "arguments": '{"command": "ls"}',
        },
        # the cut call goes back as the model wrote it, beside its rejection notice
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "shell",
            "arguments": '{"command": "rm -rf /tmp/leg',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "a b c"},
        {"type": "function_call_output", "call_id": "call_2", "output": "NOT executed: truncated"},
        {"role": "user", "content": "go on"},
    ]
    json.dumps(body)  # plain JSON all the way down


def test_several_system_messages_join_and_none_means_no_instructions() -> None:
    body = openai_responses_body("m", [System("a"), User("x"), System("b")], max_tokens=5)
    assert body["instructions"] == "a\n\nb"
    assert "instructions" not in openai_responses_body("m", [User("x")], max_tokens=5)
    assert "tools" not in openai_responses_body("m", [User("x")], max_tokens=5)


def test_text_after_a_call_stays_after_it_and_empty_turns_send_nothing() -> None:
    history = [
        User("x"),
        Assistant((ToolUse("c1", "shell", {}), Text("then "), Text("this"))),
        Assistant(()),
        Assistant((Text(""),)),
    ]
    items = openai_responses_body("m", history, max_tokens=5)["input"]
    assert [i.get("type") or i["role"] for i in items] == ["user", "function_call", "assistant"]
    assert items[2]["content"] == "then this"
    assert ToolUse("c1", "shell", {}).arguments_json() == items[1]["arguments"] == "{}"


def test_other_providers_blocks_are_not_sent() -> None:
    history = [
        User("x"),
        Assistant((ServerBlock({"type": "server_tool_use", "id": "srv"}), Text("ok"))),
    ]
    items = openai_responses_body("m", history, max_tokens=5)["input"]
    assert items[1] == {"role": "assistant", "content": "ok"}


def test_extra_overrides_and_bad_input_is_refused() -> None:
    body = openai_responses_body(
        "m", [User("x")], max_tokens=5, extra={"reasoning": {"effort": "low"}, "store": True}
    )
    assert body["reasoning"] == {"effort": "low"} and body["store"] is True
    with pytest.raises(ConfigurationError):
        openai_responses_body("m", [User("x")], max_tokens=0)
    with pytest.raises(ConfigurationError):
        openai_responses_body("m", ["not a message"], max_tokens=5)  # type: ignore[list-item]


def test_one_assistant_message_is_one_turn_for_the_scripted_server() -> None:
    body = openai_responses_body("m", HISTORY, max_tokens=5, tools=[SHELL])
    assert assistant_turns(body["input"]) == 1
    later = [*HISTORY, Assistant.of("done")]
    assert assistant_turns(openai_responses_body("m", later, max_tokens=5)["input"]) == 2


def _stream(script_turn: dict[str, Any], max_tokens: int = 1000) -> bytes:
    """What the scripted server streams for one turn, without the network."""
    from railings.testing.ids import Ids
    from railings.testing.script import ScriptTurn, plan_turn

    ids = Ids(1)
    ask = parse_ask({"model": "m", "input": "x", "max_output_tokens": max_tokens})
    assert not isinstance(ask, str)
    plan = plan_turn(ScriptTurn.from_dict(script_turn), max_tokens, ids.openai_call)
    return b"".join(
        events(
            plan,
            ask,
            response_id=ids.response(),
            created=0,
            model="m",
            chunk_size=7,
            new_item_id=ids.response_item,
        )
    )


def test_a_streamed_turn_round_trips_through_the_body() -> None:
    """Decoder -> Turn -> Assistant.from_turn -> body: the calls go back under their
    call_id with their exact arguments; the results follow as function_call_output."""
    body = _stream(
        {
            "thinking": "hmm",
            "text": "Running both.",
            "tool_calls": [
                {"name": "shell", "arguments": {"command": "ls"}},
                {"name": "shell", "arguments": {"command": "pwd"}},
            ],
        }
    )
    reader = StreamReader("openai-responses")
    reader.feed(body)
    reader.close()
    turn = reader.turn()
    assert turn.outcome is Outcome.COMPLETE and turn.thinking == "hmm"
    assistant = Assistant.from_turn(turn)
    results = [ToolResult(c.id, f"ran {c.name}") for c in turn.tool_calls]
    items = openai_responses_body("m", [User("go"), assistant, *results], max_tokens=5)["input"]
    calls = [i for i in items if i.get("type") == "function_call"]
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    assert (
        [c["call_id"] for c in calls]
        == [o["call_id"] for o in outputs]
        == [c.id for c in turn.tool_calls]
    )
    assert [json.loads(c["arguments"]) for c in calls] == [{"command": "ls"}, {"command": "pwd"}]
    # The turn reasoned, its encrypted content came: the output items go back as they came.
    assert [i["type"] for i in items[1:5]] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    assert items[1]["encrypted_content"] and items[2]["content"][0]["text"] == "Running both."


def test_a_cut_call_round_trips_with_its_rejection() -> None:
    body = _stream(
        {
            "text": "Writing.",
            "tool_calls": [{"name": "shell", "arguments": {"command": "x" * 200}}],
        },
        max_tokens=20,
    )
    reader = StreamReader("openai-responses", max_tokens=20)
    reader.feed(body)
    reader.close()
    turn = reader.turn()
    assert turn.stop_reason == "max_tokens" and turn.truncated
    (verdict,) = judge(turn)
    assert not verdict.execute
    call = turn.tool_calls[0]
    items = openai_responses_body(
        "m",
        [User("go"), Assistant.from_turn(turn), ToolResult(call.id, "NOT executed")],
        max_tokens=5,
    )["input"]
    assert items[2]["arguments"] == call.raw_arguments and items[3]["call_id"] == call.id


# -- reasoning goes back with the items it produced ------------------------------------------

CAPTURES = Path(__file__).parent / "corpus" / "responses"


def completed_output(name: str) -> list[dict[str, Any]]:
    """The ``output`` of the capture's ``response.completed`` event, read independently."""
    for block in (CAPTURES / name).read_text().split("\n\n"):
        data = "\n".join(
            line[5:].lstrip(" ") for line in block.splitlines() if line.startswith("data:")
        )
        if '"response.completed"' in data:
            event = json.loads(data)
            if event["type"] == "response.completed":
                return list(event["response"]["output"])
    raise AssertionError(f"no response.completed in {name}")


def sent_after(name: str) -> list[dict[str, Any]]:
    turn = replay((CAPTURES / name).read_bytes()).turn
    assert turn.complete
    history = [
        User("q"),
        Assistant.from_turn(turn),
        *(ToolResult(call.id, "sunny") for call in turn.tool_calls),
    ]
    return openai_responses_body("gpt-5", history, max_tokens=64)["input"]


def test_encrypted_reasoning_goes_back_with_its_call_as_the_api_sent_them() -> None:
    sent = sent_after("swiftagent_function_call_gpt5.sse")
    output = completed_output("swiftagent_function_call_gpt5.sse")
    assert [item["type"] for item in output] == ["reasoning", "function_call"]
    assert output[0]["encrypted_content"] and output[1]["id"].startswith("fc_")
    assert sent == [
        {"role": "user", "content": "q"},
        *output,
        {"type": "function_call_output", "call_id": output[1]["call_id"], "output": "sunny"},
    ]


@pytest.mark.parametrize(
    "name",
    [
        "pydantic_ai_openrouter_gpt_oss_reasoning_text.sse",  # reasoning without encrypted content
        "pydantic_ai_file_search_gpt4o.sse",  # no reasoning at all
    ],
)
def test_without_encrypted_reasoning_the_turn_is_rebuilt_without_item_ids(name: str) -> None:
    sent = sent_after(name)
    assert all(item.get("type") != "reasoning" and "id" not in item for item in sent)
    assert sent[1]["role"] == "assistant"


def test_responses_items_never_reach_another_api() -> None:
    turn = replay((CAPTURES / "swiftagent_function_call_gpt5.sse").read_bytes()).turn
    assistant = Assistant.from_turn(turn)
    assert any(isinstance(block, ResponsesItems) for block in assistant.blocks)
    anthropic = anthropic_messages_body("claude", [User("q"), assistant], max_tokens=64)
    assert [b["type"] for b in anthropic["messages"][1]["content"]] == ["tool_use"]
    chat = openai_chat_body("gpt-4o", [User("q"), assistant], max_tokens=64)
    assert set(chat["messages"][1]) == {"role", "content", "tool_calls"}
