"""The Empty table (railings.turn.billable): a turn cut short is Empty only when every
event it received is known to carry nothing billable, on every wire of the corpus; and
what the table says is what the reader, the client and replay do."""

from __future__ import annotations

import asyncio
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from _formats import CORPUS, manifest
from _server import CannedServer, Reply, sse
from railings import replay
from railings.events import BilledOutput, StreamEvent, Unknown
from railings.messages import User
from railings.providers import Framing, spec
from railings.providers.openai_chat.fields import CHOICE_FIELDS, CHUNK_FIELDS
from railings.sse_blocks import EventSplitter
from railings.transport import AsyncProviderClient, ClientConfig, Timeouts, no_waits
from railings.turn.billable import billable
from railings.turn.model import Outcome
from railings.turn.reader import StreamReader
from railings.wire.eventstream import EventStreamDecoder, Message
from railings.wire.sse import SSEDecoder

# Every capture of the corpus with its wire: the manifests spell two of the names longer.
_WIRE = {"openai-chat": "openai", "anthropic-messages": "anthropic"}
CAPTURES: list[tuple[str, Path]] = [
    (_WIRE.get(row["provider"], row["provider"]), CORPUS / folder / row["file"])
    for folder in ("real", "responses", "gemini", "ollama", "bedrock")
    for row in manifest(folder)
]
_CUTS = 48  # cuts per capture: the first frames (where Empty turns Partial), then a sample


def frame_ends(provider: str, body: bytes) -> list[int]:
    """The offset just after each frame of ``body`` (SSE event, event-stream frame, line)."""
    framing = spec(provider).framing
    ends: list[int] = []
    if framing is Framing.EVENTSTREAM:  # each frame opens with its total length
        at = 0
        while at + 4 <= len(body):
            at += int.from_bytes(body[at : at + 4], "big")
            ends.append(at)
    elif framing is Framing.NDJSON:
        ends = [i + 1 for i, byte in enumerate(body) if byte == 0x0A]
    else:
        at = 0
        for block in EventSplitter().feed(body):
            at += len(block)
            ends.append(at)
    return [end for end in ends if end <= len(body)]


# -- what each wire sends that the table (docs/verdicts.md) says carries nothing ----------
# An oracle apart from the decoders: each frame is read here from its own JSON, by the
# list of the docs, so a decoder that reads billed output past as nothing fails the test.


def _empty(value: object) -> bool:
    return value in (None, "", [], {})


def _chat(obj: dict[str, Any]) -> bool:
    """A role-only or empty delta, a usage chunk, Azure's prompt filter chunk."""
    if set(obj) - CHUNK_FIELDS or obj.get("error"):
        return False
    for choice in obj.get("choices") or []:
        if set(choice) - CHOICE_FIELDS or choice.get("finish_reason") is not None:
            return False
        delta = dict(choice.get("delta") or {})
        details = delta.pop("reasoning_details", None) or []  # OpenRouter: entries, maybe empty
        if any(not _empty(v) for k, v in delta.items() if k not in ("role", "channel")):
            return False
        if any(not _empty(d.get(k)) for d in details for k in ("text", "data", "summary")):
            return False
        if any(not _empty(d.get("signature")) for d in details):
            return False
    return True


def _anthropic(obj: dict[str, Any]) -> bool:
    """message_start, ping, the start of an empty text or thinking block, an empty delta,
    a block's end, usage alone."""
    kind = obj.get("type")
    if kind in ("message_start", "ping", "content_block_stop"):
        return kind != "message_start" or _empty(obj["message"].get("stop_reason"))
    if kind == "content_block_start":
        block = obj["content_block"]
        return block["type"] in ("text", "thinking") and all(
            _empty(v) for k, v in block.items() if k != "type"
        )
    if kind == "content_block_delta":
        delta = obj["delta"]
        return delta["type"] in ("text_delta", "input_json_delta", "thinking_delta") and all(
            _empty(v) for k, v in delta.items() if k != "type"
        )
    return kind == "message_delta" and _empty(obj.get("delta", {}).get("stop_reason"))


_RESPONSES_NOTHING = {
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.content_part.added",
    "response.reasoning_summary_part.added",
}


def _responses(obj: dict[str, Any]) -> bool:
    """Lifecycle notices and the opening of an empty message or reasoning item."""
    kind = obj.get("type")
    if kind == "response.output_item.added":
        item = obj["item"]
        return item["type"] in ("message", "reasoning", "mcp_list_tools") and all(
            _empty(item.get(k)) for k in ("content", "summary", "encrypted_content", "tools")
        )
    if isinstance(kind, str) and kind.endswith(".delta"):
        return _empty(obj.get("delta"))
    return kind in _RESPONSES_NOTHING or bool(_PROGRESS.fullmatch(str(kind)))


# The progress notices of an item (``response.mcp_list_tools.in_progress`` ...).
_PROGRESS = re.compile(
    r"response\.\w+\.(in_progress|searching|interpreting|generating|completed|failed)"
)


def _gemini(obj: dict[str, Any]) -> bool:
    """A chunk with no finish reason whose parts hold no text, thought or call."""
    if set(obj) - {"candidates", "usageMetadata", "modelVersion", "responseId", "createTime"}:
        return False
    for candidate in obj.get("candidates") or []:
        if candidate.get("finishReason"):
            return False
        for part in (candidate.get("content") or {}).get("parts") or []:
            if set(part) != {"text"} or part["text"]:
                return False
    return True


def _bedrock(message: Message) -> bool:
    """messageStart, an empty block start or delta, a block's end, usage metadata, an
    exception (an error is not output)."""
    if message.text_header(":message-type") != "event":
        return True
    kind = message.text_header(":event-type")
    obj = json.loads(message.payload)
    if kind == "contentBlockStart":
        return _empty(obj.get("start"))
    if kind == "contentBlockDelta":
        return all(_empty(v) for v in obj["delta"].values())
    return kind in ("messageStart", "contentBlockStop", "metadata")


def _ollama(obj: dict[str, Any]) -> bool:
    """A line that is not the last, whose message holds no text, thinking or call."""
    if obj.get("done") or set(obj) - {"model", "created_at", "message", "done"}:
        return False
    message = obj.get("message") or {}
    return all(_empty(v) for k, v in message.items() if k != "role")


def known_nothing(provider: str, body: bytes) -> list[tuple[int, bool]]:
    """Each frame's end offset, and whether the docs' list says it carries nothing."""
    ends = frame_ends(provider, body)
    framing = spec(provider).framing
    if framing is Framing.EVENTSTREAM:
        return list(zip(ends, map(_bedrock, EventStreamDecoder().feed(body)), strict=True))
    if framing is Framing.NDJSON:
        lines = body.split(b"\n")
        return [(end, _ollama(json.loads(line))) for end, line in zip(ends, lines, strict=False)]
    judge = {"openai": _chat, "anthropic": _anthropic, "openai-responses": _responses}
    read = judge.get(provider, _gemini)
    out, start, sse = [], 0, SSEDecoder()
    for end in ends:
        events = sse.feed(body[start:end])
        start = end
        out.append((end, all(e.data == "[DONE]" or read(json.loads(e.data)) for e in events)))
    return out


def cuts(provider: str, body: bytes) -> list[int]:
    ends = [0, *frame_ends(provider, body)]
    first, rest = ends[: _CUTS // 2], ends[_CUTS // 2 :]
    rng = random.Random(len(body))
    return first + sorted(rng.sample(rest, min(len(rest), _CUTS - len(first))))


def read(provider: str, body: bytes) -> tuple[list[StreamEvent], Outcome]:
    reader = StreamReader(provider)
    events = reader.feed(body) if body else []
    events += reader.close()
    return events, reader.turn().outcome


@pytest.mark.parametrize(
    ("provider", "path"), CAPTURES, ids=[f"{p}:{path.name}" for p, path in CAPTURES]
)
def test_a_cut_is_empty_iff_every_event_before_it_is_known_to_carry_nothing(
    provider: str, path: Path
) -> None:
    body = path.read_bytes()
    frames = known_nothing(provider, body)
    assert frames, "the capture was cut into frames"
    for cut in cuts(provider, body):
        events, outcome = read(provider, body[:cut])
        if outcome is Outcome.COMPLETE:
            continue
        # The table, as the docs list what the wire sends, and as the decoded events.
        listed = all(nothing for end, nothing in frames if end <= cut)
        nothing = not any(billable(e) for e in events)
        assert (outcome is Outcome.EMPTY) == listed == nothing, (cut, outcome, events)


def test_the_corpus_covers_every_wire() -> None:
    assert {provider for provider, _ in CAPTURES} == {
        "openai",
        "anthropic",
        "openai-responses",
        "gemini",
        "bedrock",
        "ollama",
    }


# -- named cuts ----------------------------------------------------------------------------


def responses_event(kind: str, number: int, **fields: Any) -> bytes:
    return sse({"type": kind, "sequence_number": number, **fields}, event=kind)


REASONING = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [],
    "encrypted_content": "gAAAAB-hidden-reasoning",
}
REASONING_THEN_CUT = [
    responses_event("response.created", 0, response={"id": "resp_1", "model": "gpt-5"}),
    responses_event("response.in_progress", 1, response={"id": "resp_1"}),
    responses_event(
        "response.output_item.added",
        2,
        output_index=0,
        item={**REASONING, "encrypted_content": None},
    ),
    responses_event("response.output_item.done", 3, output_index=0, item=REASONING),
]


def test_responses_cut_after_a_finished_reasoning_item_is_partial() -> None:
    body = b"".join(REASONING_THEN_CUT)
    result = replay(body, provider="openai-responses")
    assert result.turn.outcome is Outcome.PARTIAL
    # Before the item finished, nothing billable had arrived: that cut is Empty.
    before = replay(b"".join(REASONING_THEN_CUT[:3]), provider="openai-responses")
    assert before.turn.outcome is Outcome.EMPTY


def test_the_finished_reasoning_item_is_reported_as_billed_output() -> None:
    reader = StreamReader("openai-responses")
    events = reader.feed(b"".join(REASONING_THEN_CUT))
    assert BilledOutput(name="openai-responses:item:reasoning") in events
    assert reader.content  # the gateway's judge reads this attribute


def test_the_client_does_not_resend_a_cut_after_reasoning() -> None:
    async def go(server: CannedServer) -> Outcome:
        cfg = ClientConfig(
            provider="openai-responses",
            model="m",
            max_tokens=64,
            base_url=server.openai_base_url,
            api_key="sk-test",
            timeouts=Timeouts(connect=2.0, first_byte=5.0, idle=2.0),
        )
        async with AsyncProviderClient(cfg) as client:
            stream = client.stream_turn([User("hi")])
            async for _ in stream:
                pass
            return stream.turn.outcome

    with CannedServer() as server, no_waits():
        server.push(Reply(chunks=REASONING_THEN_CUT, end="close", framing="close"))
        server.push(Reply(chunks=REASONING_THEN_CUT, end="close", framing="close"))
        outcome = asyncio.run(go(server))
        assert outcome is Outcome.PARTIAL
        assert len(server.requests) == 1  # the reasoning was billed once, not twice


def test_the_guard_marks_a_cut_after_reasoning_partial() -> None:
    import httpx2
    import openai

    from railings import guard

    with CannedServer() as server:
        server.push(Reply(chunks=REASONING_THEN_CUT, end="reset"))
        http = httpx2.Client(transport=guard.transport())
        client = openai.OpenAI(
            api_key="sk-test", base_url=server.openai_base_url, http_client=http, max_retries=0
        )
        with (
            client,
            pytest.raises(openai.APIConnectionError) as raised,
            client.responses.create(model="m", input="hi", stream=True) as stream,
        ):
            for _ in stream:
                pass
    cause = guard.interruption(raised.value)
    assert cause is not None and not cause.empty and not cause.retryable


def test_an_unknown_line_before_a_cut_is_partial() -> None:
    # An Ollama /api/generate line: its text is in "response", a key /api/chat lacks.
    line = {"model": "m", "created_at": "2026-01-01T00:00:00Z", "response": "Hi", "done": False}
    body = json.dumps(line).encode() + b"\n"
    result = replay(body, provider="ollama")
    assert result.turn.outcome is Outcome.PARTIAL


def test_an_unknown_event_type_before_a_cut_is_partial() -> None:
    body = sse({"type": "content_block_future", "index": 0}, event="content_block_future")
    reader = StreamReader("anthropic")
    events = reader.feed(body) + reader.close()
    assert any(isinstance(e, Unknown) for e in events)
    assert reader.turn().outcome is Outcome.PARTIAL


def test_a_finish_reason_without_done_is_partial_even_without_text() -> None:
    # A reasoning model that spent its budget on hidden reasoning (real capture, cut
    # before its usage chunk and [DONE]): the reasoning was billed.
    body = (CORPUS / "real" / "openai" / "gpt5mini_length_reasoning_only.sse").read_bytes()
    first_two = b"\n\n".join(body.split(b"\n\n")[:2]) + b"\n\n"
    assert replay(first_two, provider="openai").turn.outcome is Outcome.PARTIAL
    role_only = body.split(b"\n\n")[0] + b"\n\n"
    assert replay(role_only, provider="openai").turn.outcome is Outcome.EMPTY


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        (
            "anthropic",
            sse({"type": "message_start", "message": {"id": "m", "model": "c"}}, "message_start")
            + sse({"type": "ping"}, "ping")
            + sse(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
                "content_block_start",
            ),
        ),
        ("openai", sse({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant"}}]})),
    ],
)
def test_known_nothing_before_a_cut_is_empty(provider: str, body: bytes) -> None:
    assert replay(body, provider=provider).turn.outcome is Outcome.EMPTY
