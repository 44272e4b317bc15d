"""Each decoder is a handler table: what the table does not know becomes an Unknown event.

For every decoder, an unknown event type, an unknown delta type (Chat: a delta key)
and an unknown field each give an ``Unknown`` event, counted in the turn, while the
turn around it reads as before. Each case runs whole, byte by byte and with trailing
data after the proof. The last test holds the known-but-ignored fields to their
tables: no real capture decodes to a single ``Unknown``.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import CORPUS, captures
from railings import replay
from railings.events import StreamEvent, TextDelta, Unknown
from railings.turn.reader import provider_decoder
from railings.wire.sse import SSEDecoder
from streams import anthropic_event, openai_chunk, sse

DONE = b"data: [DONE]\n\n"


def decoded(provider: str, body: bytes) -> list[StreamEvent]:
    decoder = provider_decoder(provider)
    out: list[StreamEvent] = []
    for event in SSEDecoder().feed(body):
        out.extend(decoder.feed(event))
    return out


def unknown_counted(provider: str, body: bytes, proof: bytes) -> tuple[int, str]:
    """The turn's Unknown count and text, the same whole, byte by byte and with data after
    the proof (which is never read)."""
    seen = set()
    for data, size in ((body + proof, None), (body + proof, 1), (body + proof + body, None)):
        turn = replay(data, provider=provider, chunk_size=size).turn
        assert turn.complete
        seen.add((turn.unknown_events, turn.text))
    (result,) = seen
    return result


# -- OpenAI Chat Completions ---------------------------------------------------------------


def chat(*chunks: bytes) -> bytes:
    return b"".join([openai_chunk({"role": "assistant", "content": ""}), *chunks])


CHAT_CASES: dict[str, tuple[bytes, str]] = {
    "event type": (sse({"choices": []}, "brand_new"), "openai:event:brand_new"),
    "delta key": (openai_chunk({"audio": {"data": "UklGR"}}), "openai:delta:audio"),
    "chunk field": (openai_chunk({"content": ""}, brand_new=1), "openai:chunk:brand_new"),
    "choice field": (
        sse({"choices": [{"index": 0, "delta": {}, "message": {"content": "lost?"}}]}),
        "openai:choice:message",
    ),
    "tool call field": (
        openai_chunk({"tool_calls": [{"index": 0, "id": "c", "function": {}, "x": 1}]}),
        "openai:tool_call:x",
    ),
    "function field": (
        openai_chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"strict": True}}]}),
        "openai:function:strict",
    ),
    "content part type": (
        openai_chunk({"content": [{"type": "image_url", "image_url": {}}]}),
        "openai:content:image_url",
    ),
    "a known key with a value of another type": (
        openai_chunk({"reasoning": {"text": "?"}}),
        "openai:delta:reasoning",
    ),
}


@pytest.mark.parametrize("case", sorted(CHAT_CASES))
def test_chat_decoder_reports_what_its_table_does_not_know(case: str) -> None:
    chunk, name = CHAT_CASES[case]
    assert Unknown(name=name) in decoded("openai", chunk)
    body = chat(openai_chunk({"content": "a"}), chunk, openai_chunk({"content": "b"}, "stop"))
    assert unknown_counted("openai", body, DONE) == (1, "ab")


def test_chat_unknown_delta_key_beside_content_keeps_the_content() -> None:
    events = decoded("openai", openai_chunk({"content": "hi", "audio": {}}))
    assert events[-2:] == [TextDelta(text="hi"), Unknown(name="openai:delta:audio")]


def test_chat_known_fields_read_past_give_no_event() -> None:
    chunk = sse(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "system_fingerprint": "fp",
            "obfuscation": "xyz",
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "refusal": None, "channel": "analysis"},
                    "logprobs": None,
                    "finish_reason": None,
                    "content_filter_results": {},
                }
            ],
        }
    )
    assert [type(e).__name__ for e in decoded("openai", chunk)] == ["MessageStart"]


# -- Anthropic Messages ----------------------------------------------------------------------


def anthropic(*events: dict[str, Any]) -> bytes:
    start = {
        "type": "message_start",
        "message": {"id": "msg_1", "model": "claude", "content": [], "usage": {}},
    }
    text = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}},
    ]
    more = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "b"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
    ]
    return b"".join(anthropic_event(e) for e in [start, *text, *events, *more])


ANTHROPIC_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "event type": ({"type": "brand_new_event"}, "anthropic:brand_new_event"),
    "delta type": (
        {"type": "content_block_delta", "index": 0, "delta": {"type": "brand_new_delta"}},
        "anthropic:delta:brand_new_delta",
    ),
    # Anthropic carries content only in typed blocks: a block type is its field.
    "block type": (
        {"type": "content_block_start", "index": 1, "content_block": {"type": "brand_new"}},
        "anthropic:block:brand_new",
    ),
}


@pytest.mark.parametrize("case", sorted(ANTHROPIC_CASES))
def test_anthropic_decoder_reports_what_its_table_does_not_know(case: str) -> None:
    event, name = ANTHROPIC_CASES[case]
    assert decoded("anthropic", anthropic_event(event)) == [Unknown(name=name)]
    proof = anthropic_event({"type": "message_stop"})
    assert unknown_counted("anthropic", anthropic(event), proof) == (1, "ab")


# -- OpenAI Responses ------------------------------------------------------------------------


def responses(*events: dict[str, Any]) -> bytes:
    head = [{"type": "response.created", "response": {"id": "resp_1", "model": "gpt"}}]
    text = [{"type": "response.output_text.delta", "item_id": "m", "delta": d} for d in "ab"]
    return b"".join(sse(e, e["type"]) for e in [*head, text[0], *events, text[1]])


def completed(output: list[Any]) -> bytes:
    return sse({"type": "response.completed", "response": {"output": output}}, "x")


RESPONSES_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "event type": (
        {"type": "response.brand_new.delta"},
        "openai-responses:response.brand_new.delta",
    ),
    # The API's deltas are typed events: an unknown output item is its unknown delta type.
    "item type": (
        {"type": "response.output_item.added", "item": {"type": "brand_new_call", "id": "x"}},
        "openai-responses:item:brand_new_call",
    ),
    "field": (
        {"type": "response.output_item.done", "output_index": 3},
        "openai-responses:response.output_item.done",
    ),
}


@pytest.mark.parametrize("case", sorted(RESPONSES_CASES))
def test_responses_decoder_reports_what_its_table_does_not_know(case: str) -> None:
    event, name = RESPONSES_CASES[case]
    assert decoded("openai-responses", sse(event, event["type"])) == [Unknown(name=name)]
    assert unknown_counted("openai-responses", responses(event), completed([])) == (1, "ab")


def test_responses_output_that_is_not_items_is_unknown_and_not_kept() -> None:
    events = decoded("openai-responses", completed([{"type": "message"}, "not an item"]))
    assert Unknown(name="openai-responses:response.completed:output") in events
    turn = replay(responses() + completed(["not an item"])).turn
    assert turn.complete and turn.unknown_events == 1 and turn.output_items == ()


# -- the real captures ----------------------------------------------------------------------


@pytest.mark.parametrize(("path", "provider"), captures(), ids=lambda v: str(v))
def test_no_real_capture_has_an_unknown_event(path: str, provider: str) -> None:
    # Every field a real provider sends is in its decoder's table, handled or read past.
    events = decoded(provider, (CORPUS / path).read_bytes())
    assert [e for e in events if isinstance(e, Unknown)] == []
