"""The output limit is sticky on every wire: once a turn has said it stopped at the output
limit, a later stop reason does not clear it, and the turn's calls are judged as cut.

One body per wire, each with an output-limit stop and then a natural one, read through the
core reader whole, byte by byte and in odd pieces (``replay``), with the verdict each time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import railings
from _server import CannedServer, Reply
from railings import inspect, replay
from railings.replay import Replay
from railings.testing.eventstream import event_frame
from railings.turn.verdict import RejectReason, Verdict
from streams import anthropic_event, anthropic_tool_stream, openai_chunk, openai_tool_stream

# The tree under test, for the CLI's subprocesses.
SOURCE = str(Path(railings.__file__).resolve().parents[1])
CUT = '{"command": "rm -rf /tmp/leg'


def _sse(*objects: Any) -> bytes:
    return b"".join(f"data: {json.dumps(o)}\n\n".encode() for o in objects)


def _responses(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def openai_chat() -> bytes:
    # finish_reason "length" on the call, then a server's own "tool_calls" chunk.
    return (
        openai_tool_stream([CUT], "length", done=False, usage=None)
        + openai_chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )


def anthropic() -> bytes:
    later = {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}}
    return (
        anthropic_tool_stream([CUT], "max_tokens", stop=False)
        + anthropic_event(later)
        + anthropic_event({"type": "message_stop"})
    )


def openai_responses() -> bytes:
    item = {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": ""}
    item |= {"call_id": "call_1", "name": "shell"}

    def terminal(status: str, details: dict[str, str] | None) -> bytes:
        response = {"id": "resp_1", "status": status, "incomplete_details": details}
        return _responses(f"response.{status}", response=response)

    # The stop and the proof share one event here: a later stop can only come after the end.
    return (
        _responses("response.output_item.added", output_index=0, item=item)
        + _responses(
            "response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta=CUT
        )
        + terminal("incomplete", {"reason": "max_output_tokens"})
        + terminal("completed", None)
    )


def gemini() -> bytes:
    # MAX_TOKENS on the chunk that carries the call, then a contentless chunk saying STOP
    # (what a translation proxy stamps on its last chunk).
    call = {"functionCall": {"name": "shell", "args": {"command": "rm -rf /tmp/leg"}}}

    def chunk(parts: list[dict[str, Any]], finish: str) -> dict[str, Any]:
        candidate = {"content": {"role": "model", "parts": parts}, "finishReason": finish}
        return {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}

    usage = {"usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 16}}
    return _sse(chunk([call], "MAX_TOKENS"), {**chunk([{"text": ""}], "STOP"), **usage})


def bedrock() -> bytes:
    start = {"start": {"toolUse": {"toolUseId": "tooluse_1", "name": "shell"}}}
    return b"".join(
        [
            event_frame("messageStart", {"role": "assistant"}),
            event_frame("contentBlockStart", {**start, "contentBlockIndex": 0}),
            event_frame(
                "contentBlockDelta", {"delta": {"toolUse": {"input": CUT}}, "contentBlockIndex": 0}
            ),
            event_frame("contentBlockStop", {"contentBlockIndex": 0}),
            event_frame("messageStop", {"stopReason": "max_tokens"}),
            event_frame("messageStop", {"stopReason": "end_turn"}),
            event_frame("metadata", {"usage": {"inputTokens": 9, "outputTokens": 16}}),
        ]
    )


def ollama() -> bytes:
    call = {"function": {"name": "shell", "arguments": {"command": "rm -rf /tmp/leg"}}}
    message = {"role": "assistant", "content": "", "tool_calls": [call]}
    head = {"model": "llama3.2", "created_at": "2025-10-14T08:00:00.000000Z"}
    lines = [
        {**head, "message": message, "done": False},
        {**head, "message": {"role": "assistant", "content": ""}, "done": True}
        | {"done_reason": "length", "eval_count": 16},
        {**head, "message": {"role": "assistant", "content": ""}, "done": True}
        | {"done_reason": "stop"},
    ]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


WIRES = {
    "openai": (openai_chat, "length"),
    "anthropic": (anthropic, "max_tokens"),
    "openai-responses": (openai_responses, "max_output_tokens"),
    "gemini": (gemini, "MAX_TOKENS"),
    "bedrock": (bedrock, "max_tokens"),
    "ollama": (ollama, "length"),
}


def _readings(provider: str, body: bytes) -> list[Replay]:
    return [replay(body, provider=provider, chunk_size=size) for size in (None, 1, 7, 97)] + [
        replay(body, chunk_size=size) for size in (None, 1)
    ]  # detected, too


@pytest.mark.parametrize("provider", sorted(WIRES))
def test_a_later_stop_reason_does_not_clear_the_output_limit(provider: str) -> None:
    make, spelling = WIRES[provider]
    for result in _readings(provider, make()):
        turn = result.turn
        assert turn.provider == provider
        assert turn.stop_reason == "max_tokens", provider
        assert turn.stop_reason_wire == spelling
        assert turn.truncated
        (verdict,) = result.verdicts
        assert verdict.verdict is Verdict.REJECT
        assert verdict.reason is RejectReason.TRUNCATED
        assert verdict.notice is not None and "output limit" in verdict.notice


def test_inspect_keeps_the_output_limit_of_gemini_chunks() -> None:
    # The SDK's chunks go through the same decoder and assembler as the stream.
    chunks = [json.loads(line[6:]) for line in gemini().decode().split("\n\n") if line]
    result = inspect(chunks)
    assert (result.turn.stop_reason, result.turn.truncated) == ("max_tokens", True)
    (verdict,) = result.verdicts
    assert verdict.reason is RejectReason.TRUNCATED


def _gemini_text(*chunks: tuple[str, str | None]) -> bytes:
    out = []
    for text, finish in chunks:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
        if finish is not None:
            candidate["finishReason"] = finish
        out.append({"candidates": [candidate]})
    return _sse(*out)


def test_gemini_max_tokens_anywhere_in_the_turn_makes_its_stop_the_output_limit() -> None:
    body = _gemini_text(("Hel", "MAX_TOKENS"), ("lo", None), ("", "STOP"))
    for size in (None, 1, 5):
        turn = replay(body, provider="gemini", chunk_size=size).turn
        assert turn.text == "Hello"
        assert (turn.stop_reason, turn.stop_reason_wire, turn.truncated) == (
            "max_tokens",
            "MAX_TOKENS",
            True,
        )


def test_gemini_a_stray_stop_before_the_last_chunk_is_not_the_turns_stop() -> None:
    # STOP stamped on early chunks (translation proxies): the last chunk's reason wins.
    body = _gemini_text(("Hel", "STOP"), ("lo", "MAX_TOKENS"))
    turn = replay(body, provider="gemini").turn
    assert (turn.text, turn.stop_reason, turn.truncated) == ("Hello", "max_tokens", True)
    body = _gemini_text(("Hel", "STOP"), ("lo", "STOP"))
    turn = replay(body, provider="gemini").turn
    assert (turn.stop_reason, turn.truncated) == ("end_turn", False)


# -- the attack end to end: `railings run` against a real server on 127.0.0.1 --------------


def _planting_gemini_turn() -> list[bytes]:
    """A call whose chunk says MAX_TOKENS, then a contentless chunk that says STOP."""
    call = {"functionCall": {"name": "write_file", "args": {"path": "planted.txt", "content": "c"}}}
    cut = {
        "candidates": [
            {"content": {"role": "model", "parts": [call]}, "finishReason": "MAX_TOKENS"}
        ]
    }
    stop = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}
        ]
    }
    usage = {"usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 16}}
    return [
        f"data: {json.dumps(cut)}\r\n\r\n".encode(),
        f"data: {json.dumps(stop | usage)}\r\n\r\n".encode(),
    ]


def test_railings_run_refuses_a_gemini_call_the_output_limit_cut(tmp_path: Path) -> None:
    answer = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "Sorry."}]}, "finishReason": "STOP"}
        ]
    }
    kind = (("content-type", "text/event-stream"),)
    with CannedServer() as server:
        server.push(
            Reply(chunks=_planting_gemini_turn(), headers=kind),
            Reply(chunks=[f"data: {json.dumps(answer)}\r\n\r\n".encode()], headers=kind),
        )
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "NO_COLOR": "1",
            "HOME": str(tmp_path),
            "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
            "GEMINI_API_KEY": "gemini-key-0123456789",
            "PYTHONPATH": SOURCE,
        }
        done = subprocess.run(
            [sys.executable, "-m", "railings", "run", "write it", "--provider", "gemini",
             "--base-url", server.url, "--workdir", str(tmp_path), "--json", "--yes"],
            capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
        )  # fmt: skip
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "planted.txt").exists()
    (run,) = json.loads(done.stdout)["runs"]
    first = run["turns"][0]
    assert first["stop_reason"] == "max_tokens"
    ((call,),) = [first["tool_calls"]]
    assert (call["verdict"], call["reason"]) == ("reject", "truncated")
    # The model was told why, in the result that went back in place of the call's.
    assert len(requests) == 2
    assert "output limit" in json.dumps(json.loads(requests[1].body)["contents"][-1])


def test_replay_refuses_the_same_cut_call(tmp_path: Path) -> None:
    body = tmp_path / "gemini.sse"
    body.write_bytes(b"".join(_planting_gemini_turn()))
    done = subprocess.run(
        [sys.executable, "-m", "railings", "replay", str(body), "--json"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path),
            "PYTHONPATH": SOURCE,
        },
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["provider"], report["stop_reason"], report["truncated"]) == (
        "gemini",
        "max_tokens",
        True,
    )
    ((call,),) = [report["tool_calls"]]
    assert (call["verdict"], call["reason"]) == ("reject", "truncated")
