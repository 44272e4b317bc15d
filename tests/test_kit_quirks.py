"""The scripted server plays the compatible endpoints' quirks on request: no proof, no
stop reason, ``tool_calls`` at the output limit, keep-alive comments before content.
Each is read back through railings' own reader, so the quirk is shown on the wire."""

from __future__ import annotations

from typing import Any

import pytest

from railings import replay
from railings.errors import ConfigurationError
from railings.testing import Script, ScriptedServer
from railings.testing.raw import raw_request
from railings.turn.model import Outcome, Termination
from railings.wire.sse import SSEDecoder

PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
HEADERS = {"openai": {}, "anthropic": {"anthropic-version": "2023-06-01"}}
TEXT = "Paris is the capital of France."


def _ask(server: ScriptedServer, wire: str, max_tokens: int = 64) -> bytes:
    body: dict[str, Any] = {
        "model": "m",
        "stream": True,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": "Capital of France?"}],
    }
    if wire == "openai":
        body["stream_options"] = {"include_usage": True}
    response = raw_request(server.url, PATHS[wire], body, headers=HEADERS[wire])
    assert response.status == 200
    return response.body


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_without_the_quirks_the_answer_is_proven_with_its_stop_reason(wire: str) -> None:
    with ScriptedServer(Script.text(TEXT)) as server:
        turn = replay(_ask(server, wire), provider=wire).turn
    assert turn.outcome is Outcome.COMPLETE and turn.stop_reason_source == "wire"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("where", ["script", "turn"])
def test_proof_false_ends_the_stream_without_its_proof(wire: str, where: str) -> None:
    script = (
        {"proof": False, "turns": [{"text": TEXT}]}
        if where == "script"
        else {"turns": [{"text": TEXT, "proof": False}]}
    )
    with ScriptedServer(script) as server:
        turn = replay(_ask(server, wire), provider=wire).turn
    assert turn.termination is Termination.ABRUPT and turn.outcome is Outcome.PARTIAL
    assert turn.text == TEXT  # everything but the proof arrived


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_null_stop_reason_sends_the_proof_and_no_stop_reason(wire: str) -> None:
    with ScriptedServer({"null_stop_reason": True, "turns": [{"text": TEXT}]}) as server:
        body = _ask(server, wire)
    turn = replay(body, provider=wire).turn
    assert turn.outcome is Outcome.COMPLETE
    assert turn.stop_reason_wire is None and turn.stop_reason_source == "derived"
    key = b'"finish_reason":null' if wire == "openai" else b'"stop_reason":null'
    assert key in body


def test_a_turn_may_send_its_stop_reason_when_the_script_does_not() -> None:
    script = {"null_stop_reason": True, "turns": [{"text": TEXT, "null_stop_reason": False}]}
    with ScriptedServer(script) as server:
        turn = replay(_ask(server, "openai"), provider="openai").turn
    assert turn.stop_reason_source == "wire" and turn.stop_reason_wire == "stop"


@pytest.mark.parametrize(
    ("wire", "spelling"), [("openai", "tool_calls"), ("anthropic", "tool_use")]
)
def test_cut_stop_reason_reports_a_call_at_the_output_limit_as_vllm_does(
    wire: str, spelling: str
) -> None:
    script = {
        "cut_stop_reason": "tool_calls",
        "turns": [{"tool_calls": [{"name": "write_file", "arguments": {"content": "x" * 400}}]}],
    }
    with ScriptedServer(script) as server:
        body = _ask(server, wire, max_tokens=8)
    cut = replay(body, provider=wire, max_tokens=8)
    assert cut.turn.stop_reason_wire == spelling and cut.turn.stop_reason == "tool_use"
    assert cut.turn.peak_output_tokens == 8
    # Usage at the cap still tells the truth: the cut call is refused.
    assert cut.turn.truncated and [v.verdict.value for v in cut.verdicts] == ["reject"]


def test_cut_stop_reason_leaves_a_complete_turn_alone() -> None:
    with ScriptedServer({"cut_stop_reason": "tool_calls", "turns": [{"text": "ok"}]}) as server:
        turn = replay(_ask(server, "openai"), provider="openai").turn
    assert turn.stop_reason_wire == "stop"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_keepalives_come_as_comments_before_the_first_event(wire: str) -> None:
    script = {"keepalives": 3, "keepalive_delay": 0.01, "turns": [{"text": TEXT}]}
    with ScriptedServer(script) as server:
        body = _ask(server, wire)
    decoder = SSEDecoder()
    assert decoder.feed(body[: body.index(b"data:")]) == []  # nothing but comments first
    assert decoder.comments == 3
    assert replay(body, provider=wire).turn.outcome is Outcome.COMPLETE


@pytest.mark.parametrize(
    ("key", "value"),
    [("proof", "no"), ("null_stop_reason", 1), ("cut_stop_reason", 3), ("keepalives", -1)],
)
def test_a_quirk_of_the_wrong_type_is_refused_naming_it(key: str, value: Any) -> None:
    with pytest.raises(ConfigurationError, match=key):
        Script.from_dict({key: value, "turns": [{"text": "x"}]})
