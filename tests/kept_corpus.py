"""The Responses captures the resume tests cut and read again, and how a provider that
keeps a response streams it again: shared by the client's and the gateway's tests."""

from __future__ import annotations

from pathlib import Path

from railings.providers import spec
from railings.wire.blocks import EventSplitter

CORPUS = Path(__file__).parent / "corpus" / "responses"
WIRE = "openai-responses"
# Every capture whose events are numbered from its response.created on.
NUMBERED = sorted(
    p
    for p in CORPUS.glob("*.sse")
    if spec(WIRE).sequence_numbers(p.read_bytes()) and b"response.created" in p.read_bytes()
)


def blocks(body: bytes) -> list[bytes]:
    """``body`` cut into whole SSE events, byte for byte."""
    return EventSplitter().feed(body)


def after(body: bytes, number: int) -> bytes:
    """What the provider streams again after event ``number``: from the next numbered
    event on (a trailing ``data: [DONE]`` some servers add included)."""
    parts = blocks(body)
    wire = spec(WIRE)
    for i, block in enumerate(parts):
        if (wire.sequence_numbers(block) or [-1])[-1] > number:
            return b"".join(parts[i:])
    return b""
