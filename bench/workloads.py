"""The benchmark workloads: deterministic SSE bodies, and how they are cut into pieces.

Every body is generated from a fixed seed, in the shapes the providers really
send (the chunk fields of ``tests/corpus/real/openai/*.sse`` and
``tests/corpus/real/anthropic/*.sse``), so every consumer reads the same bytes
and a run on another machine reads them too.

* **W1** OpenAI Chat Completions text: a role chunk, ``n`` content chunks, the
  finish chunk, the ``include_usage`` chunk and ``data: [DONE]``.
* **W2** OpenAI, one tool call whose argument JSON (``n`` x 50 characters, about
  1 MB at n = 20,000) arrives in ``n`` fragments.
* **W3** Anthropic Messages text: ``n`` ``text_delta`` events, a ``ping`` every 25.
* **W4** Anthropic, one ``tool_use`` whose input JSON (``n`` x 50 characters)
  arrives in ``n`` ``input_json_delta`` events.
* **W5** OpenAI Responses API text: ``response.created`` ... ``n`` numbered
  ``response.output_text.delta`` events ... ``response.completed`` (the shapes of
  ``tests/corpus/responses/``).

W2 and W4 keep the fragment size fixed and grow the count (5k, 10k, 20k), so
the argument grows with it: a linear consumer takes 4x the time at 20k that it
takes at 5k, one that re-parses its growing buffer per fragment takes 16x.

Each body is fed two ways: in network-sized pieces (1-4 KiB from a seeded
generator, cut at any byte, inside UTF-8 characters too), and one SSE event per
piece.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

__all__ = ["FRAGMENT", "MODES", "Workload", "build", "pieces", "size_label"]

FRAGMENT = 50  # characters of argument JSON per tool-call fragment (W2, W4)
PING_EVERY = 25  # W3: one ping per this many text deltas
MODES = ("net", "event")  # 1-4 KiB network pieces; one event per piece

_WORDS = (
    " the",
    " model",
    " stream",
    " of",
    " tokens",
    " arrives",
    " in",
    " small",
    " pieces",
    ",",
    ".",
    " and",
    " a",
    " proof",
    " of",
    " termination",
    " ends",
    " it",
    " turn",
    " railings",
    " café",
    " naïve",
    " —",
    " 日本",
    " ✓",
    "\n",
    "\n\n",
    ' "quoted"',
    " x\\y",
)
_CODE = (
    "def handler(request):\n",
    "    body = request.json()\n",
    '    name = body.get("name", "world")\n',
    '    return {"greeting": f"Hello, {name}!"}\n',
    "\n",
    "# café: naïve — 日本 ✓\n",
    "    for i in range(10):\n",
    "        total += i * 2\t# tab\n",
)


@dataclass(frozen=True, slots=True)
class Workload:
    """One generated body and what a correct consumer must get out of it."""

    name: str  # "W1" .. "W5"
    provider: str  # "openai" | "anthropic" | "openai-responses"
    n: int  # content chunks / argument fragments
    body: bytes
    events: int  # SSE events in the body (pings and [DONE] included)
    text: str  # the assembled answer text ("" for W2, W4)
    arguments: Any  # the parsed tool arguments (None for W1, W3, W5)

    @property
    def key(self) -> str:
        return f"{self.name}@{size_label(self.n)}"


def size_label(n: int) -> str:
    """20000 -> "20k", 1250 -> "1.25k"."""
    return f"{n / 1000:g}k"


def _text_deltas(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3))) for _ in range(n)]


def _arguments(rng: random.Random, n: int) -> tuple[str, list[str]]:
    """A tool call's argument JSON of exactly ``n * FRAGMENT`` characters, and its fragments."""
    target = n * FRAGMENT
    head = '{"path": "src/generated/handler.py", "content": "'
    tail = '", "mode": "overwrite"}'
    lines: list[str] = []
    size = 0
    budget = target - len(head) - len(tail)
    while size < budget:
        line = json.dumps(rng.choice(_CODE), ensure_ascii=False)[1:-1]
        lines.append(line)
        size += len(line)
    content = "".join(lines)[:budget]
    while content.endswith("\\") and not content.endswith("\\\\"):
        content = content[:-1] + " "  # never leave half an escape before the closing quote
    raw = head + content + tail
    assert len(raw) == target
    json.loads(raw)
    return raw, [raw[i : i + FRAGMENT] for i in range(0, target, FRAGMENT)]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _openai(chunks: list[dict[str, Any]], rng: random.Random, usage: dict[str, int]) -> bytes:
    """Chat Completions chunks with the ``include_usage`` fields real streams carry."""
    base = {
        "id": "chatcmpl-Bench8W0XpqH8w09uBXwq1zFGYdETjt",
        "object": "chat.completion.chunk",
        "created": 1782955817,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": "fp_d0469e1700",
    }
    out: list[str] = []
    for extra in chunks:
        chunk = {**base, **extra, "usage": None, "obfuscation": "x" * rng.randint(2, 16)}
        out.append(f"data: {_dumps(chunk)}\n\n")
    out.append(f"data: {_dumps({**base, 'choices': [], 'usage': usage, 'obfuscation': 'pad'})}\n\n")
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def _choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


def _w1(n: int) -> Workload:
    rng = random.Random(8_001)
    deltas = _text_deltas(rng, n)
    chunks = [_choice({"role": "assistant", "content": "", "refusal": None})]
    chunks += [_choice({"content": d}) for d in deltas]
    chunks.append(_choice({}, "stop"))
    usage = {"prompt_tokens": 17, "completion_tokens": n, "total_tokens": n + 17}
    body = _openai(chunks, rng, usage)
    return Workload("W1", "openai", n, body, len(chunks) + 2, "".join(deltas), None)


def _w2(n: int) -> Workload:
    rng = random.Random(8_002)
    raw, fragments = _arguments(rng, n)
    start = {
        "index": 0,
        "id": "call_ZR5UUuTt3pf61kjwAJIYdVMj",
        "type": "function",
        "function": {"name": "write_file", "arguments": ""},
    }
    chunks = [
        _choice({"role": "assistant", "content": None, "tool_calls": [start], "refusal": None})
    ]
    chunks += [
        _choice({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments
    ]
    chunks.append(_choice({}, "tool_calls"))
    usage = {"prompt_tokens": 61, "completion_tokens": n, "total_tokens": n + 61}
    body = _openai(chunks, rng, usage)
    return Workload("W2", "openai", n, body, len(chunks) + 2, "", json.loads(raw))


def _sse(kind: str, obj: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {_dumps(obj)}\n\n"


def _anthropic(blocks: list[str], stop: str, n: int) -> tuple[bytes, int]:
    message: dict[str, Any] = {
        "model": "claude-haiku-4-5-20251001",
        "id": "msg_01CD3XaZfhNabxRt1SG5ybtK",
        "type": "message",
        "role": "assistant",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 843,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
            "service_tier": "standard",
        },
    }
    head = [_sse("message_start", {"type": "message_start", "message": message})]
    tail = [
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"input_tokens": 843, "output_tokens": n},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    events = head + blocks + tail
    return "".join(events).encode(), len(events)


def _w3(n: int) -> Workload:
    rng = random.Random(8_003)
    deltas = _text_deltas(rng, n)
    blocks = [
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        _sse("ping", {"type": "ping"}),
    ]
    for i, d in enumerate(deltas, 1):
        blocks.append(
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": d},
                },
            )
        )
        if i % PING_EVERY == 0:
            blocks.append(_sse("ping", {"type": "ping"}))
    blocks.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    body, events = _anthropic(blocks, "end_turn", n)
    return Workload("W3", "anthropic", n, body, events, "".join(deltas), None)


def _w4(n: int) -> Workload:
    rng = random.Random(8_004)
    raw, fragments = _arguments(rng, n)
    start = {
        "type": "tool_use",
        "id": "toolu_019Zvehfe1XQWweT1pm7okyt",
        "name": "write_file",
        "input": {},
    }
    blocks = [
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": start},
        ),
        _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": ""},
            },
        ),
    ]
    blocks += [
        _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": f},
            },
        )
        for f in fragments
    ]
    blocks.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    body, events = _anthropic(blocks, "tool_use", n)
    return Workload("W4", "anthropic", n, body, events, "", json.loads(raw))


def _w5(n: int) -> Workload:
    """Responses API text: the lifecycle events of one message item around ``n``
    ``response.output_text.delta`` events, numbered, as gpt-5 streams them."""
    rng = random.Random(8_005)
    deltas = _text_deltas(rng, n)
    text = "".join(deltas)
    item = "msg_68d930427844819ebda216a5dcfbec4603aa6e5a972b3b23"
    response = {
        "id": "resp_68d93041848c819e90d610c34d125a8f03aa6e5a972b3b23",
        "object": "response",
        "created_at": 1759064129,
        "status": "in_progress",
        "error": None,
        "incomplete_details": None,
        "model": "gpt-5-2025-08-07",
        "output": [],
        "service_tier": "auto",
        "usage": None,
    }
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    message = {"id": item, "type": "message", "status": "in_progress", "content": []}
    where = {"item_id": item, "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": {**message}},
        {"type": "response.content_part.added", **where, "part": part},
    ]
    for delta in deltas:
        events.append(
            {
                "type": "response.output_text.delta",
                **where,
                "delta": delta,
                "logprobs": [],
                "obfuscation": "x" * rng.randint(2, 16),
            }
        )
    done = {**part, "text": text}
    whole = {**message, "status": "completed", "content": [done], "role": "assistant"}
    usage = {"input_tokens": 17, "output_tokens": n, "total_tokens": n + 17}
    events += [
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": done},
        {"type": "response.output_item.done", "output_index": 0, "item": whole},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [whole], "usage": usage},
        },
    ]
    body = "".join(
        _sse(event["type"], {"type": event["type"], "sequence_number": number, **event})
        for number, event in enumerate(events)
    )
    return Workload("W5", "openai-responses", n, body.encode(), len(events), text, None)


_BUILDERS = {"W1": _w1, "W2": _w2, "W3": _w3, "W4": _w4, "W5": _w5}


def build(name: str, n: int) -> Workload:
    """The workload ``name`` (W1..W5) with ``n`` content chunks or fragments."""
    return _BUILDERS[name](n)


def pieces(body: bytes, mode: str, *, seed: int = 8) -> list[bytes]:
    """The body as the network would hand it over: ``net`` (1-4 KiB) or ``event`` pieces."""
    if mode == "event":
        blocks = body.split(b"\n\n")
        assert blocks[-1] == b""
        return [block + b"\n\n" for block in blocks[:-1]]
    if mode != "net":
        raise ValueError(f"unknown mode {mode!r}")
    rng = random.Random(seed)
    out: list[bytes] = []
    at = 0
    while at < len(body):
        size = rng.randint(1024, 4096)
        out.append(body[at : at + size])
        at += size
    return out
