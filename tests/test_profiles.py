"""Endpoint profiles: a first-party endpoint's terminator counts only with the structure
that endpoint always sends before it, in every shell; without a profile nothing changes;
and a profile can tighten a rule but never accept a stream without its proof."""

from __future__ import annotations

import asyncio
import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from _server import CannedServer, Reply, anthropic_text, openai_text, sse
from railings import guard, profiles, replay
from railings.cli import main
from railings.errors import ConfigurationError, StreamInterrupted
from railings.messages import User
from railings.profiles import BUILTIN, builtin, choose, label, load, parse
from railings.testing.raw import raw_request
from railings.transport import AsyncProviderClient, ClientConfig, TurnStream
from railings.turn.attempt import Attempt, Clocks
from railings.turn.ending import Cut
from railings.turn.model import ErrorKind, Outcome, Termination
from railings.turn.profile import STOP_THEN_USAGE, WIRE, Evidence, Profile
from railings.turn.verdict import RejectReason
from tests.gateway_kit import PATHS, body, headers, running

CORPUS = Path(__file__).resolve().parent / "corpus"
# A stream ended by a layer in between: text, then the terminator, and no finish_reason.
CHAT_FORGED = b"".join(
    openai_text(
        [
            "Your refund will be processed within 5-7 days and you will receive a "
            "confirmation email at"
        ],
        finish=None,
    )
)
MESSAGE_STOP = sse({"type": "message_stop"}, "message_stop")
# A text block never closed, no message_delta (so no stop_reason), then message_stop.
ANTHROPIC_FORGED = b"".join([*anthropic_text(["Your refund", " will be"])[:-2], MESSAGE_STOP])
FORGED = {"openai": CHAT_FORGED, "anthropic": ANTHROPIC_FORGED}
WHY = {
    "openai": "`[DONE]` arrived without a `finish_reason`",
    "anthropic": "`message_stop` arrived without a `message_delta` with its `stop_reason`",
}


def _evidence(rule: str = "structural") -> dict[str, Evidence]:
    seen = Evidence(observed="seen in a test", seen=1, date="2026-12-03", source="this test")
    return {rule: seen}


def _mine(url: str, **rules: Any) -> Profile:
    rule = next(iter(rules))
    return Profile(name="mine", base_urls=(url,), evidence=_evidence(rule), **rules)


# -- the rule, offline: whole and byte by byte, fast path and plain -------------------------


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("chunk_size", [None, 1, 7])
def test_a_terminator_without_its_structure_is_not_proof_under_a_first_party_profile(
    wire: str, chunk_size: int | None
) -> None:
    judged = replay(FORGED[wire], provider=wire, chunk_size=chunk_size, profile=builtin(wire))
    turn = judged.turn
    assert turn.outcome is Outcome.PARTIAL and turn.termination is Termination.ABRUPT
    assert turn.error is not None and turn.error.kind is ErrorKind.INTERRUPTED
    assert WHY[wire] in turn.error.message and "layer in between" in turn.error.message
    # The text that arrived is kept, marked: Partial, never resent.
    assert "Your refund" in turn.text and not turn.error.retryable


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_without_a_profile_the_terminator_is_the_proof_as_before(wire: str) -> None:
    turn = replay(FORGED[wire], provider=wire).turn
    assert turn.outcome is Outcome.COMPLETE and turn.stop_reason_source == "derived"


@pytest.mark.parametrize("fast", [True, False])
def test_the_fast_path_and_the_plain_path_agree_on_the_structure(fast: bool) -> None:
    attempt = Attempt("openai", hold=False, profile=builtin("openai"))
    attempt.reader = type(attempt.reader)("openai", fast=fast, profile=builtin("openai"))
    attempt.feed(CHAT_FORGED, 0.0)
    assert type(attempt.close()).__name__ == "Partial"


def test_a_forged_ending_before_any_content_is_empty_and_may_be_resent() -> None:
    forged = b"".join(openai_text([], finish=None))
    turn = replay(forged, provider="openai", profile=builtin("openai")).turn
    assert turn.outcome is Outcome.EMPTY and turn.error is not None and turn.error.retryable


# -- the evidence: every capture of a first-party endpoint passes its own profile --------------


def _captures(folder: str, services: set[str]) -> Iterator[tuple[Path, str]]:
    manifest = CORPUS / folder / "MANIFEST.tsv"
    with manifest.open(encoding="utf-8") as rows:
        for row in csv.DictReader(rows, delimiter="\t"):
            if row.get("service") in services:
                yield CORPUS / folder / row["file"], row["provider"]


_FIRST_PARTY = {
    "openai": [("real", {"openai"}), ("responses", {"openai"})],
    "anthropic": [("real", {"anthropic"})],
    "gemini": [("gemini", {"gemini-api", "vertex-ai"})],
    "bedrock": [("bedrock", {"bedrock-converse-stream"})],
}
_WIRES = {"openai-chat": "openai", "anthropic-messages": "anthropic"}


@pytest.mark.parametrize("name", list(_FIRST_PARTY))
def test_each_first_party_capture_is_judged_the_same_under_its_profile(name: str) -> None:
    profile = builtin(name)
    seen = 0
    for folder, services in _FIRST_PARTY[name]:
        for path, provider in _captures(folder, services):
            data = path.read_bytes()
            wire = _WIRES.get(provider, provider)
            plain = replay(data, provider=wire).turn
            strict = replay(data, provider=wire, profile=profile).turn
            assert (strict.outcome, strict.stop_reason) == (plain.outcome, plain.stop_reason), path
            seen += 1
    # The count each built-in's evidence states is the count of captures it rests on.
    assert seen == profile.evidence["structural"].seen


@pytest.mark.parametrize(
    ("name", "service"), [("azure-openai", "azure-openai"), ("openrouter", "openrouter")]
)
def test_the_evidence_against_a_rule_counts_the_captures_it_cites(name: str, service: str) -> None:
    # Each complete capture sends a finish_reason before [DONE], as the evidence says: too
    # few, or a relay of many upstreams, so no rule is set on them.
    turns = [
        replay(path.read_bytes(), provider="openai").turn
        for path, _provider in _captures("real", {service})
    ]
    complete = [t for t in turns if t.outcome is Outcome.COMPLETE]
    assert all(t.stop_reason_source == "wire" for t in complete)
    profile = builtin(name)
    assert profile.rules() == [] and profile.evidence["structural"].seen == len(complete)


def test_the_capture_that_sends_no_finish_reason_is_what_a_profile_would_refuse() -> None:
    capture = (CORPUS / "real" / "snowflake" / "cortex_no_finish_reason.sse").read_bytes()
    assert replay(capture, provider="openai").turn.outcome is Outcome.COMPLETE
    own = replay(capture, provider="openai", profile=builtin("snowflake-cortex")).turn
    assert own.outcome is Outcome.COMPLETE
    strict = replay(capture, provider="openai", profile=builtin("openai")).turn
    assert strict.outcome is Outcome.PARTIAL and strict.error is not None
    assert "finish_reason" in strict.error.message


# -- what a profile can and cannot say ------------------------------------------------------


@pytest.mark.parametrize(
    "field", ["proof", "complete_on_eof", "accept_without_proof", "done_optional"]
)
def test_a_profile_that_would_accept_a_stream_without_proof_is_refused(field: str) -> None:
    with pytest.raises(ConfigurationError, match=r"never|no ending") as raised:
        parse({"name": "x", "base_urls": ["http://h"], field: True})
    assert field in str(raised.value)


def test_a_rule_without_evidence_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="structural is set without evidence"):
        Profile(name="x", structural=True)
    with pytest.raises(ConfigurationError, match="unknown field 'strict'"):
        parse({"name": "x", "strict": True})
    with pytest.raises(ConfigurationError, match="first_content must be a positive"):
        Profile(name="x", first_content=-1.0, evidence=_evidence("first_content"))
    with pytest.raises(ConfigurationError, match="seen must be a positive"):
        Evidence(observed="o", seen=0, date="d", source="s")


def test_base_urls_match_at_a_boundary_and_hosts_by_one_label() -> None:
    openai_ = builtin("openai")
    assert openai_.matches("https://api.openai.com/v1")
    assert openai_.matches("HTTPS://API.OPENAI.COM")
    assert not openai_.matches("https://api.openai.com.evil.example/v1")
    assert not openai_.matches("http://api.openai.com/v1")
    bedrock = builtin("bedrock")
    assert bedrock.matches("https://bedrock-runtime.eu-west-1.amazonaws.com/model/m")
    assert not bedrock.matches("https://bedrock-runtime.a.b.amazonaws.com")
    models = Profile(name="m", base_urls=("http://h",), models=("qwen*", "llama3"))
    assert models.matches("http://h", "qwen3:8b") and models.matches("http://h", "llama3")
    assert not models.matches("http://h", "llama3.1") and not models.matches("http://h")


def test_files_load_and_choose_picks_the_named_then_the_directory_then_built_ins(
    tmp_path: Path,
) -> None:
    entry = {"observed": "o", "seen": 3, "date": "2026-12-03", "source": "probe"}
    (tmp_path / "a.toml").write_text(
        'name = "box"\nbase_urls = ["http://box:8000"]\nstructural = true\n'
        '[evidence.structural]\nobserved = "o"\nseen = 3\ndate = "2026-12-03"\n'
        'source = "probe"\n'
    )
    (tmp_path / "b.json").write_text(
        json.dumps(
            {
                "name": "api",
                "base_urls": ["https://api.openai.com"],
                "models": ["gpt-x*"],
                "misreports_length": True,
                "evidence": {"misreports_length": entry},
            }
        )
    )
    found = load(tmp_path)
    assert [p.name for p in found] == ["box", "api"] and found[0].structural
    assert choose(None, "http://box:8000/v1", directory=tmp_path).name == "box"
    assert choose(None, "https://api.openai.com/v1", "gpt-x1", directory=tmp_path).name == "api"
    # Not the directory's model: the built-in for the URL.
    assert choose(None, "https://api.openai.com/v1", "o3", directory=tmp_path).name == "openai"
    assert choose(None, "http://127.0.0.1:9/v1", directory=tmp_path) is WIRE
    assert choose("wire", "https://api.openai.com") is WIRE
    assert choose(tmp_path / "a.toml", "http://elsewhere").name == "box"
    with pytest.raises(ConfigurationError, match="unknown profile 'nope'"):
        choose("nope", "http://h")
    (tmp_path / "bad.toml").write_text("name = ")
    with pytest.raises(ConfigurationError, match=r"bad\.toml"):
        load(tmp_path / "bad.toml")


def test_labels_come_from_a_fixed_set() -> None:
    assert {label(p) for p in BUILTIN} == {p.name for p in BUILTIN}
    assert label(WIRE) == "wire"
    assert label(_mine("http://h", structural=True)) == "custom"
    # A user's profile named like a built-in is still the user's.
    copy = Profile(name="openai", base_urls=("http://h",))
    assert label(copy) == "custom"


def test_a_misreported_length_stop_never_lets_a_cut_call_run() -> None:
    profile = _mine("http://h", misreports_length=True)
    text_only = b"".join(openai_text(["short"], finish="length"))
    assert replay(text_only, provider="openai").turn.truncated
    assert not replay(text_only, provider="openai", profile=profile).turn.truncated
    # Billed output at the limit is evidence no profile waives (2 tokens billed).
    assert replay(text_only, provider="openai", profile=profile, max_tokens=2).turn.truncated
    # A call cut mid-string under a length stop, with no usage: still truncated, refused,
    # never closed and run by the repair ladder.
    cut = b"".join(
        [
            sse(
                {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": "m",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": None,
                            "delta": {
                                "tool_calls": [
                                    {
                                        "index": 0,
                                        "id": "call_1",
                                        "type": "function",
                                        "function": {
                                            "name": "shell",
                                            "arguments": '{"command": "rm -rf /tmp/leg',
                                        },
                                    }
                                ]
                            },
                        }
                    ],
                }
            ),
            sse(
                {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": "m",
                    "choices": [{"index": 0, "finish_reason": "length", "delta": {}}],
                }
            ),
            b"data: [DONE]\n\n",
        ]
    )
    judged = replay(cut, provider="openai", profile=profile)
    assert judged.turn.truncated
    (verdict,) = judged.verdicts
    assert not verdict.execute and verdict.reason is RejectReason.TRUNCATED


def test_a_profile_waits_longer_for_the_first_content_only() -> None:
    profile = _mine("http://h", first_content=10.0)
    ping = b": keep-alive\n\n"
    attempt = Attempt("openai", clocks=Clocks(first_content=1.0), profile=profile)
    attempt.feed(ping, 5.0)
    assert not attempt.overdue(5.0) and attempt.overdue(10.5)
    plain = Attempt("openai", clocks=Clocks(first_content=1.0))
    plain.feed(ping, 0.5)
    assert plain.overdue(1.5)


# -- every shell asks the same rule -------------------------------------------------------


@pytest.fixture
def server() -> Iterator[CannedServer]:
    with CannedServer() as running_:
        yield running_


def test_the_guard_refuses_a_forged_chat_ending_under_a_profile(server: CannedServer) -> None:
    server.push(Reply(chunks=openai_text(["Your refund"], finish=None)))
    server.push(Reply(chunks=openai_text(["Your refund"], finish=None)))
    strict = _mine(server.url, structural=True)
    for profile, raises in ((strict, True), (None, False)):
        http = httpx2.Client(transport=guard.transport(profile=profile))
        client = openai.OpenAI(
            api_key="sk-test", base_url=server.openai_base_url, http_client=http, max_retries=0
        )
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        if not raises:
            assert [c for c in stream]
            # The guard names the profile that judged the stream, from a fixed set.
            assert stream.response.extensions["railings.profile"] == "wire"
            continue
        assert stream.response.extensions["railings.profile"] == "custom"
        # Raised at the terminator: the SDK stops reading at [DONE], so nothing later could.
        with pytest.raises(openai.APIConnectionError) as raised:
            list(stream)
        cause = guard.interruption(raised.value)
        assert isinstance(cause, StreamInterrupted) and not cause.empty
        assert "finish_reason" in str(cause)


def test_the_guard_refuses_a_forged_anthropic_ending_under_a_profile(
    server: CannedServer,
) -> None:
    server.push(Reply(chunks=[*anthropic_text(["Your refund"])[:-2], MESSAGE_STOP]))
    http = httpx2.Client(transport=guard.transport(profile=_mine(server.url, structural=True)))
    client = anthropic.Anthropic(
        api_key="sk-test", base_url=server.anthropic_base_url, http_client=http, max_retries=0
    )
    with (
        pytest.raises(httpx2.RemoteProtocolError, match="message_delta"),
        client.messages.stream(
            model="claude", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream,
    ):
        list(stream)


def test_a_profile_name_that_does_not_exist_fails_at_install() -> None:
    with pytest.raises(ConfigurationError, match="unknown profile"):
        guard.install(httpx2.Client(), profile="openia")


def test_the_client_judges_with_the_profile_matching_its_base_url(
    server: CannedServer,
) -> None:
    server.push(Reply(chunks=openai_text(["Your refund"], finish=None)))
    config = ClientConfig(
        provider="openai",
        model="m",
        api_key="sk-test",
        base_url=server.openai_base_url,
        profile=_mine(server.url, structural=True),
    )
    assert config.judged_by.name == "mine"

    async def go() -> TurnStream:
        async with AsyncProviderClient(config) as client:
            stream = client.stream_turn([User("hi")])
            [event async for event in stream]
            return stream

    turn = asyncio.run(go()).turn
    assert turn.outcome is Outcome.PARTIAL and turn.error is not None
    assert "finish_reason" in turn.error.message
    assert len(server.requests) == 1  # Partial: never resent
    # The same endpoint without the profile: the terminator is the proof.
    assert ClientConfig(provider="openai", model="m", base_url=server.url).judged_by is WIRE


def test_the_gateway_interrupts_a_forged_ending_and_names_the_profile(
    server: CannedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(Reply(chunks=openai_text(["Your refund"], finish=None)))
    strict = _mine(server.url, structural=True)
    with running(server.url, tmp_path, profile=strict) as (url, gateway, _tee):
        got = raw_request(url, PATHS["openai"], body("openai"), headers=headers("openai"))
        metrics = gateway.metrics
    assert got.status == 200 and b"data: [DONE]" not in got.body
    assert b"Your refund" in got.body and b"without a `finish_reason`" in got.body
    counted = {"provider": "openai", "outcome": "partial", "profile": "custom"}
    assert metrics.value("railings_gateway_streams_total", **counted) == 1
    journal = tmp_path / "journal.sqlite3"
    assert main(["gateway-log", "--journal", str(journal), "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["profile"] == "custom" and row["outcome"] == "partial"


def test_profiles_module_names_the_environment_variable() -> None:
    assert profiles.ENV == "RAILINGS_PROFILES"


# -- the command line: --profile on replay, run and the gateway ------------------------------

CORTEX = CORPUS / "real" / "snowflake" / "cortex_no_finish_reason.sse"


def test_replay_judges_by_the_profile_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(CORTEX)]) == 0
    assert "finished: the provider's termination proof arrived" in capsys.readouterr().out
    assert main(["replay", str(CORTEX), "--profile", "openai"]) == 0
    out = capsys.readouterr().out
    assert "NOT finished: PARTIAL (`[DONE]` arrived without a `finish_reason`" in out
    mine = tmp_path / "mine.toml"
    mine.write_text(
        'name = "mine"\nstructural = true\n[evidence.structural]\nobserved = "o"\n'
        'seen = 1\ndate = "2026-12-03"\nsource = "s"\n'
    )
    assert main(["replay", str(CORTEX), "--profile", str(mine)]) == 0
    assert "profile mine requires it" in capsys.readouterr().out


@pytest.mark.parametrize(
    "command",
    [["replay", str(CORTEX), "--profile"], ["run", "--base-url", "http://h", "--profile"]],
)
def test_a_profile_that_cannot_be_used_is_one_line_and_exit_2(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\ncomplete_on_eof = true\n')
    task = ["a task"] if command[0] == "run" else []
    for value, why in (("openia", "unknown profile 'openia'"), (str(bad), "complete_on_eof")):
        assert main([*command, value, *task]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and why in err[0] and err[0].startswith("railings ")


# -- a named ending: for an endpoint that never sends its terminator ---------------------------

NO_DONE = openai_text(["all", " of it"], done=False)  # ..., finish_reason, usage, no [DONE]


def _named() -> Profile:
    return _mine("http://h", proof=STOP_THEN_USAGE)


@pytest.mark.parametrize("chunk_size", [None, 1])
def test_a_named_ending_is_the_proof_only_where_the_profile_names_it(
    chunk_size: int | None,
) -> None:
    body = b"".join(NO_DONE)
    assert replay(body, provider="openai", chunk_size=chunk_size).turn.outcome is Outcome.PARTIAL
    named = replay(body, provider="openai", chunk_size=chunk_size, profile=_named()).turn
    assert named.outcome is Outcome.COMPLETE and named.text == "all of it"


@pytest.mark.parametrize(
    "chunks",
    [
        NO_DONE[:-1],  # the stop reason without its usage
        [*NO_DONE[:-2], NO_DONE[-1], NO_DONE[-2]],  # usage before the stop reason
        [*NO_DONE, NO_DONE[1]],  # more text after the usage
        NO_DONE[:2],  # text only
    ],
    ids=["no-usage", "usage-first", "text-after", "text-only"],
)
def test_anything_but_the_named_ending_is_still_interrupted(chunks: list[bytes]) -> None:
    turn = replay(b"".join(chunks), provider="openai", profile=_named()).turn
    assert turn.outcome is Outcome.PARTIAL and turn.termination is Termination.ABRUPT


def test_a_named_ending_that_broke_off_is_not_a_clean_close() -> None:
    attempt = Attempt("openai", hold=False, profile=_named())
    attempt.feed(b"".join(NO_DONE), 0.0)
    attempt.broke(Cut("connection reset by peer"))
    assert type(attempt.close()).__name__ == "Partial"


def test_only_one_ending_may_be_named() -> None:
    for value in ("eof", "none", True, ["stop-reason-then-usage"]):
        with pytest.raises(ConfigurationError, match="never accept a stream without one"):
            parse({"name": "x", "proof": value, "evidence": {"proof": _ENTRY}})
    named = parse({"name": "x", "proof": STOP_THEN_USAGE, "evidence": {"proof": _ENTRY}})
    assert named.proof == STOP_THEN_USAGE and named.rules() == ["proof"]
    with pytest.raises(ConfigurationError, match="structural must be true or false"):
        parse({"name": "x", "structural": "false"})


_ENTRY = {"observed": "o", "seen": 2, "date": "2026-12-03", "source": "probe"}


@pytest.mark.parametrize(
    ("end", "outcome"), [("end", Outcome.COMPLETE), ("reset", Outcome.PARTIAL)]
)
def test_the_client_takes_a_named_ending_only_from_a_clean_close(
    server: CannedServer, end: str, outcome: Outcome
) -> None:
    server.push(Reply(chunks=NO_DONE, end=end))
    config = ClientConfig(
        provider="openai",
        model="m",
        api_key="sk-test",
        base_url=server.openai_base_url,
        profile=Profile(
            name="mine",
            base_urls=(server.url,),
            proof=STOP_THEN_USAGE,
            evidence={"proof": Evidence(**_ENTRY)},
        ),
    )

    async def go() -> TurnStream:
        async with AsyncProviderClient(config) as client:
            stream = client.stream_turn([User("hi")])
            [event async for event in stream]
            return stream

    assert asyncio.run(go()).turn.outcome is outcome
    assert len(server.requests) == 1
