"""The reader frames each wire as its spec says: Gemini's proof at EOF, Bedrock's frames
and the usage after its proof, Ollama's lines; cuts are never clean before the proof;
the provider's malformed-call stop rejects every call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS
from railings.events import StopReason, TerminationProof, UsageUpdate
from railings.replay import replay
from railings.testing.eventstream import event_frame
from railings.turn.model import ErrorKind, Termination, UsageSource
from railings.turn.reader import StreamReader
from railings.turn.verdict import RejectReason, Verdict
from railings.wire.eventstream import EventStreamDecoder

GEMINI = CORPUS / "gemini"
BEDROCK = CORPUS / "bedrock"
OLLAMA = CORPUS / "ollama"


def _clean(body: bytes, provider: str = "auto") -> bool:
    return replay(body, provider=provider).turn.termination is Termination.CLEAN


# -- Gemini --------------------------------------------------------------------------------


def test_gemini_proof_comes_at_close_from_the_last_event() -> None:
    body = (GEMINI / "text_max_tokens_gemini_2_0_flash.sse").read_bytes()
    reader = StreamReader("gemini", max_tokens=200)
    events = reader.feed(body)
    assert not any(isinstance(e, TerminationProof) for e in events)
    assert StopReason(wire="MAX_TOKENS") in events  # the model's word, where it came
    assert not reader.terminated  # finishReason is proof only on the last event
    closed = reader.close()
    assert [type(e) for e in closed] == [TerminationProof]
    turn = reader.turn()
    assert turn.termination is Termination.CLEAN and turn.truncated


def test_gemini_an_event_cut_after_the_finish_reason_withdraws_the_proof() -> None:
    body = (GEMINI / "tool_call_gemini_3_pro.sse").read_bytes()
    cut = body + b'data: {"candidates":[{"content":{"parts":[{"text":"more'
    assert _clean(body) and not _clean(cut) and not _clean(cut, "gemini")


def _array(sse: bytes) -> bytes:
    objects = [
        json.loads(line[5:]) for line in sse.decode().splitlines() if line.startswith("data:")
    ]
    return json.dumps(objects, indent=2).encode()


@pytest.mark.parametrize("provider", ["auto", "gemini"])
def test_gemini_json_array_body_is_read_whole(provider: str) -> None:
    sse = (GEMINI / "tool_call_gemini_3_pro.sse").read_bytes()
    streamed, whole = replay(sse).turn, replay(_array(sse), provider=provider)
    assert whole.framing == "whole" and whole.turn.provider == "gemini"
    assert whole.turn.termination is Termination.CLEAN
    assert [c.arguments for c in whole.turn.tool_calls] == [
        c.arguments for c in streamed.tool_calls
    ]
    assert replay(_array(sse), chunk_size=3).turn == whole.turn
    # Cut short, the array is not JSON: a malformed stream, never a finished turn.
    cut = replay(_array(sse)[:-40], provider=provider).turn
    assert cut.termination is Termination.ABRUPT
    assert cut.error is not None and cut.error.kind is ErrorKind.MALFORMED_STREAM


def test_the_cli_replays_a_gemini_array(tmp_path: Path) -> None:
    path = tmp_path / "answer.json"
    path.write_bytes(_array((GEMINI / "tool_call_gemini_3_pro.sse").read_bytes()))
    done = subprocess.run(
        [sys.executable, "-m", "railings", "replay", "--json", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == ""
    report = json.loads(done.stdout)
    assert report["provider"] == "gemini" and report["termination"] == "clean"


# -- Bedrock -------------------------------------------------------------------------------


def _frames(body: bytes) -> list[tuple[str, int]]:
    """(event type, end offset) of each frame."""
    out, end = [], 0
    for message in EventStreamDecoder().feed(body):
        end += message.total_length
        out.append((message.text_header(":event-type"), end))
    return out


def test_bedrock_usage_after_the_proof_is_kept() -> None:
    body = (BEDROCK / "text_end_turn.bin").read_bytes()
    frames = _frames(body)
    assert [kind for kind, _ in frames[-2:]] == ["messageStop", "metadata"]
    stop_end = frames[-2][1]
    reader = StreamReader("bedrock")
    reader.feed(body[:stop_end])
    assert reader.terminated and reader.reads_on  # proven; usage may still come
    # Proven, and no usage yet: the output is railings' estimate, marked as one ...
    assert reader.turn().usage.output_source is UsageSource.ESTIMATED
    trailing = reader.feed(body[stop_end:])
    assert [type(e) for e in trailing] == [UsageUpdate]
    reader.close()
    turn = reader.turn()
    # ... until the provider's own count arrives, which replaces it.
    assert turn.termination is Termination.CLEAN
    assert (turn.usage.output_tokens, turn.usage.output_source) == (55, UsageSource.REPORTED)


def test_bedrock_a_corrupted_frame_is_a_malformed_stream() -> None:
    body = bytearray((BEDROCK / "text_end_turn.bin").read_bytes())
    middle = _frames(bytes(body))[3][1] - 6  # inside the payload of the fourth frame
    body[middle] ^= 0x01
    turn = replay(bytes(body)).turn
    assert turn.provider == "bedrock" and turn.termination is Termination.ABRUPT
    assert turn.error is not None and turn.error.kind is ErrorKind.MALFORMED_STREAM
    assert "checksum" in turn.error.message


def test_bedrock_the_provider_said_the_call_was_malformed() -> None:
    body = b"".join(
        [
            event_frame("messageStart", {"role": "assistant"}),
            event_frame(
                "contentBlockStart",
                {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "rm"}}},
            ),
            event_frame(
                "contentBlockDelta",
                {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"path": "/tmp"}'}}},
            ),
            event_frame("contentBlockStop", {"contentBlockIndex": 0}),
            event_frame("messageStop", {"stopReason": "malformed_tool_use"}),
        ]
    )
    result = replay(body)
    assert result.turn.termination is Termination.CLEAN
    assert result.turn.stop_reason == "malformed_tool_use"
    (verdict,) = result.verdicts
    assert verdict.verdict is Verdict.REJECT and verdict.reason is RejectReason.MALFORMED
    assert result.turn.tool_calls[0].arguments == {"path": "/tmp"}  # parses, yet never runs


def test_bedrock_a_call_cut_by_the_full_context_window_is_truncated() -> None:
    body = b"".join(
        [
            event_frame("messageStart", {"role": "assistant"}),
            event_frame(
                "contentBlockStart",
                {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "sh"}}},
            ),
            event_frame(
                "contentBlockDelta",
                {
                    "contentBlockIndex": 0,
                    "delta": {"toolUse": {"input": '{"cmd": "rm -rf /tmp/le'}},
                },
            ),
            event_frame("contentBlockStop", {"contentBlockIndex": 0}),
            event_frame("messageStop", {"stopReason": "model_context_window_exceeded"}),
        ]
    )
    result = replay(body)
    assert result.turn.stop_reason == "max_tokens" and result.turn.truncated
    assert result.turn.stop_reason_wire == "model_context_window_exceeded"
    (verdict,) = result.verdicts
    assert verdict.verdict is Verdict.REJECT and verdict.reason is RejectReason.TRUNCATED


# -- cuts at every offset ------------------------------------------------------------------


def _proof_end(folder: str, body: bytes) -> int:
    """The fewest bytes a prefix needs to hold the proof whole."""
    if folder == "bedrock":
        return next(end for kind, end in _frames(body) if kind == "messageStop")
    if folder == "ollama":
        return body.rstrip().rindex(b"}") + 1  # the done line's closing brace
    return len(body.rstrip(b"\r\n")) + 2  # the last event and the blank line that ends it


@pytest.mark.parametrize(
    ("folder", "name"),
    [
        ("gemini", "streamed_args_two_calls_gemini_3_1_pro.sse"),
        ("gemini", "prompt_blocked_gemini_3_7_flash.sse"),
        ("bedrock", "redacted_reasoning_tool_use.bin"),
        ("bedrock", "several_tools.bin"),
        ("ollama", "docs_streaming_tool_call.ndjson"),
        ("ollama", "text_stop_qwen3_5.ndjson"),
    ],
)
def test_a_cut_before_the_proof_is_never_clean(folder: str, name: str) -> None:
    body = (CORPUS / folder / name).read_bytes()
    need = _proof_end(folder, body)
    assert _clean(body)
    for offset in range(len(body)):
        for provider in ("auto", folder):
            clean = _clean(body[:offset], provider)
            assert clean == (offset >= need), (offset, provider)


def _frame_ends(body: bytes) -> list[int]:
    """Where each event-stream frame of ``body`` ends (its own total length)."""
    ends, at = [], 0
    while at < len(body):
        at += int.from_bytes(body[at : at + 4], "big")
        ends.append(at)
    return ends


def _read(body: bytes, size: int) -> tuple[object, ...]:
    reader = StreamReader("bedrock")
    for at in range(0, len(body), size):
        reader.feed(body[at : at + size])
    reader.close()
    turn = reader.turn()
    error = turn.error.kind if turn.error is not None else None
    return (turn.outcome, turn.text, turn.termination, error, len(turn.tool_calls))


@pytest.mark.parametrize("name", sorted(p.name for p in BEDROCK.glob("*.bin")))
def test_a_bad_frame_checksum_reads_the_same_however_the_bytes_are_split(name: str) -> None:
    # Frames a chunk completed before a corrupt one are applied before the fault, fed
    # whole or a byte at a time alike.
    body = (BEDROCK / name).read_bytes()
    for end in _frame_ends(body):
        corrupt = bytearray(body)
        corrupt[end - 1] ^= 0xFF  # the frame's message CRC
        reports = {_read(bytes(corrupt), size) for size in (len(corrupt), 64, 7, 1)}
        assert len(reports) == 1, (name, end, reports)
