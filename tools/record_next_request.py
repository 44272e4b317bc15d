"""Record the next request railings builds after every capture, in each wire format.

For each capture in tests/corpus, the turn it replays to goes into a history
(a system line, a user line, ``Assistant.from_turn(turn)`` and a result for each
of its tool calls) and is rendered as an OpenAI Chat, an OpenAI Responses and an
Anthropic Messages request body. The SHA-256 of each body's JSON is the
reference ``tests/test_next_request_recorded.py`` compares against: a change to
the turn model or the encoders that alters what is sent back fails there.
Re-record only when such a change is intended.

    .venv/bin/python tools/record_next_request.py
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from railings import messages as m
from railings.replay import replay
from tools.record_replay import CORPUS, ROOT, captures

OUT = CORPUS / "next_request_recorded.json"

ENCODERS = {
    "openai-chat": m.openai_chat_body,
    "openai-responses": m.openai_responses_body,
    "anthropic-messages": m.anthropic_messages_body,
}


def bodies(path: str, provider: str) -> dict[str, str]:
    """The SHA-256 of each next request body after the capture at ``path``."""
    turn = replay((CORPUS / path).read_bytes(), provider=provider).turn
    history: list[m.Message] = [m.System("s"), m.User("u"), m.Assistant.from_turn(turn)]
    history += [m.ToolResult(call.id, "r") for call in turn.tool_calls]
    out: dict[str, str] = {}
    for name, encode in ENCODERS.items():
        body: dict[str, Any] = encode("x", history, max_tokens=5)
        text = json.dumps(body, ensure_ascii=False, default=dict)
        out[name] = hashlib.sha256(text.encode()).hexdigest()
    return out


def record() -> None:
    recorded = {path: bodies(path, provider) for path, provider in captures()}
    OUT.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(recorded)} captures -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    record()
