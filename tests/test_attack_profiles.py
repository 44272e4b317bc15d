"""Attacks on endpoint profiles and ``railings probe``: a profile file whose field has a
type the reader could let slip (a rule the file asks for left silently unset, a flag read
as a number), a base URL spelled another way, a stop reason that content followed, and a
probe that writes a credential of the URL it was given into the profile file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from _server import DONE, CannedServer, Reply, anthropic_text, openai_chunk, openai_text, sse
from railings import guard, profiles, replay
from railings.cli import main
from railings.errors import ConfigurationError
from railings.gateway import app as gateway_app
from railings.probe import DEMO_SCRIPT
from railings.testing import Script, ScriptedServer
from railings.turn.attempt import Attempt
from railings.turn.ending import Partial
from railings.turn.model import Outcome
from railings.turn.profile import RULES, WIRE, Profile
from railings.turn.reader import StreamReader

_EVIDENCE = {"observed": "o", "seen": 1, "date": "2026-12-03", "source": "s"}


def _file(**fields: Any) -> dict[str, Any]:
    rule = next((r for r in RULES if r in fields), "structural")
    return {"name": "x", "base_urls": ["http://h"], "evidence": {rule: _EVIDENCE}, **fields}


@pytest.mark.parametrize(
    "fields",
    [
        {"structural": "true"},
        {"structural": 1},
        {"misreports_length": "yes"},
        {"first_content": True},
        {"wire": 3},
        {"evidence": {"structural": "seen once"}},
        {"evidence": {"structural": {**_EVIDENCE, "observed": 5}}},
    ],
)
def test_attack_a_profile_field_of_the_wrong_type_is_refused_by_name(
    fields: dict[str, Any],
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        profiles.parse(_file(**fields), "profile box.toml")
    assert str(raised.value).count("box.toml") == 1, raised.value  # named, once


def test_attack_the_probe_writes_no_credential_of_the_url_into_the_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-probe-key-0a1b2c3d4e5f")
    out = tmp_path / "mine.toml"
    with ScriptedServer(DEMO_SCRIPT) as server:
        plain = server.openai_base_url
        url = plain.replace("://", "://probe-user:pw-9f8e7d6c5b4a@")
        code = main(["probe", url, "--yes", "--json", "--out", str(out)])
    shown = capsys.readouterr()
    assert code == 0, shown.err
    written = out.read_text(encoding="utf-8")
    assert "pw-9f8e7d6c5b4a" not in shown.out + shown.err + written
    (loaded,) = profiles.load(out)
    assert loaded.base_urls == (plain,)


@pytest.mark.parametrize(
    "url",
    [
        "https://sk-user:sk-pass@api.openai.com/v1",
        "https://api.openai.com:443/v1",
        "https://api.openai.com./v1",
        "https://API.OpenAI.com.:443/v1",
    ],
)
def test_attack_a_spelling_of_the_same_origin_is_judged_by_its_profile(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(profiles.ENV, raising=False)
    # Each reaches api.openai.com; none may fall back to the wire's laxer rule.
    assert profiles.choose(None, url, directory=None).name == "openai"
    # And a profile's own entry may be spelled so (a probe writes the URL it was given).
    spelled = Profile(name="mine", base_urls=(url.replace("/v1", ""),))
    assert spelled.matches("https://api.openai.com/v1") and spelled.matches(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com@evil.example/v1",
        "https://api.openai.com:pw@evil.example/v1",
        "https://api.openai.com.evil.example/v1",
        "https://api.openai.com:8443/v1",
        "http://api.openai.com/v1",
        "https://evil.example/https://api.openai.com",
    ],
)
def test_attack_another_origin_dressed_as_a_known_one_is_not_matched(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(profiles.ENV, raising=False)
    assert profiles.choose(None, url, directory=None) is WIRE


def _chat_reason_then_text() -> bytes:
    # A finish_reason in the first content chunk, more text after it, then a terminator
    # added where the stream broke: the stop reason said nothing about where it ended.
    start, *_ = openai_text([], finish=None, done=False)
    return b"".join(
        [
            start,
            openai_chunk({"content": "Your refund"}, "stop"),
            openai_chunk({"content": " will be processed within"}),
            DONE,
        ]
    )


def _anthropic_reason_then_text() -> bytes:
    # message_start carrying a stop_reason, text, no message_delta, then message_stop.
    start, *rest = anthropic_text(["Your refund", " will be"])
    message = json.loads(start.partition(b"data: ")[2])
    message["message"]["stop_reason"] = "end_turn"
    stop = sse({"type": "message_stop"}, "message_stop")
    return b"".join([sse(message, "message_start"), *rest[:-3], stop])


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
@pytest.mark.parametrize("size", [None, 1, 7])
@pytest.mark.parametrize(
    ("wire", "forged"),
    [("openai", _chat_reason_then_text), ("anthropic", _anthropic_reason_then_text)],
)
def test_attack_a_stop_reason_followed_by_content_is_not_the_structure(
    wire: str, forged: Any, fast: bool, size: int | None
) -> None:
    body = forged()
    assert replay(body, provider=wire).turn.outcome is Outcome.COMPLETE  # the wire's rule
    strict = profiles.builtin(wire)
    attempt = Attempt(wire, hold=False, profile=strict)
    attempt.reader = StreamReader(wire, fast=fast, profile=strict)
    step = size or len(body)
    for at in range(0, len(body), step):
        attempt.feed(body[at : at + step], 0.0)
    result = attempt.close()
    assert isinstance(result, Partial), result
    assert "Your refund will be" in result.turn.text
    assert result.turn.error is not None and "after the last content" in result.turn.error.message


def test_attack_a_request_the_server_received_is_never_sent_again_by_the_probe(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plan promises so many requests and output tokens: a request that reached the
    # server (it may have billed it) and lost its answer is not resent behind the plan.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-probe-key-0a1b2c3d4e5f")
    monkeypatch.chdir(tmp_path)
    answer = Reply(chunks=openai_text(["Hi."]))
    with CannedServer() as server:
        server.push(Reply(end="drop"), *[answer] * 4)
        code = main(["probe", server.openai_base_url, "--yes"])
        sent = len(server.requests)
    err = capsys.readouterr().err.splitlines()
    assert code == 1 and sent == 1
    assert err[-1].startswith("railings probe: request 1 (a short answer): ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_attack_a_server_echoing_the_key_in_its_stop_reason_never_gets_it_shown(
    as_json: bool,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = "sk-probe-echoed-7c6b5a4d3e2f1a0b"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    out = tmp_path / "mine.toml"
    answer = Reply(chunks=openai_text(["Hi."], finish=key))
    with CannedServer() as server:
        server.push(*[answer] * 4)
        argv = ["probe", server.openai_base_url, "--yes", "--out", str(out)]
        code = main([*argv, "--json"] if as_json else argv)
    shown = capsys.readouterr()
    assert code == 0, shown.err
    assert key not in shown.out + shown.err + out.read_text(encoding="utf-8")
    assert profiles.load(out)  # and the file still reads


@pytest.mark.parametrize("key", ["keepalive_delay", "delay"])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_attack_a_script_delay_that_is_no_number_of_seconds_is_refused(
    key: str, value: float
) -> None:
    # A NaN or infinite wait would hang the scripted server, and the test using it.
    with pytest.raises(ConfigurationError, match=key):
        Script.from_dict({key: value, "turns": [{"text": "x"}]})


def test_attack_the_probe_earns_no_rule_the_endpoint_s_own_answers_would_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server that sends its finish_reason with the first text, then more text: every
    # answer is proven, but not with the structure a strict profile asks for.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-probe-key-0a1b2c3d4e5f")
    out = tmp_path / "mine.toml"
    body = _chat_reason_then_text()
    with CannedServer() as server:
        server.push(*[Reply(chunks=[body])] * 4)
        assert main(["probe", server.openai_base_url, "--yes", "--out", str(out)]) == 0
    (written,) = profiles.load(out)
    assert not written.structural
    assert replay(body, provider="openai", profile=written).turn.outcome is Outcome.COMPLETE


@pytest.fixture
def unusable_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "box.toml").write_text('name = "box"\nstructural = "yes"\n', encoding="utf-8")
    monkeypatch.setenv(profiles.ENV, str(folder))
    return folder


def test_attack_an_unusable_profiles_directory_stops_the_gateway_before_any_call(
    unusable_directory: Path, tmp_path: Path
) -> None:
    # Read per call, it failed only once the upstream had answered (and billed) each one.
    with CannedServer() as server:
        server.push(Reply(chunks=openai_text(["Hi."])))
        with pytest.raises(ConfigurationError, match=r"box\.toml"):
            gateway_app(server.url, journal=tmp_path / "journal.sqlite3")
        assert server.requests == []


def test_attack_an_unusable_profiles_directory_fails_the_guard_at_install(
    unusable_directory: Path,
) -> None:
    with pytest.raises(ConfigurationError, match=r"box\.toml"):
        guard.transport()
    with pytest.raises(ConfigurationError, match=r"box\.toml"):
        guard.async_transport()


def test_attack_a_server_echoing_the_key_in_its_content_type_never_gets_it_shown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-probe-echoed-7c6b5a4d3e2f1a0b"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.chdir(tmp_path)
    with CannedServer() as server:
        server.push(Reply(chunks=[b"hello"], headers=(("content-type", f"text/x-{key}"),)))
        code = main(["probe", server.openai_base_url, "--yes"])
    shown = capsys.readouterr()
    assert code == 1 and "text/x-" in shown.err
    assert key not in shown.out + shown.err
