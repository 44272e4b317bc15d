"""``railings probe``: against the scripted server, which behaves like the first-party
APIs, on each of the six wires, it finds nothing to relax and writes ``structural``
evidence where the stop reason comes apart from the proof; against each quirk of the
compatible endpoints it writes only what the evidence supports; it sends nothing
unconfirmed, and the profile it writes loads and judges as the findings say."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _server import CannedServer, Reply, openai_text
from railings import profiles, replay
from railings.cli import main
from railings.probe import DEMO_SCRIPT, NO_PROOF, WIRES, Findings, battery, probe, table, to_toml
from railings.probe.battery import body
from railings.testing import ScriptedServer
from railings.testing.raw import raw_request
from railings.transport import ClientConfig
from railings.turn.model import Outcome

KEY = "sk-probe-secret-5f1e2d3c4b5a6978"
# Text, then the terminator, and no finish_reason: a layer in between ended it.
FORGED = b"".join(openai_text(["Your refund will be processed within"], finish=None))
PROVEN = b"".join(openai_text(["Your refund will be processed within 5-7 days."]))


CORPUS = Path(__file__).parent / "corpus"


def _config(url: str, wire: str) -> ClientConfig:
    return ClientConfig(provider=wire, model="m", base_url=url, api_key="k")  # type: ignore[arg-type]


def _at(server: ScriptedServer, wire: str) -> ClientConfig:
    # Each SDK's base URL: OpenAI's wires under /v1, the others at the origin.
    return _config(server.openai_base_url if wire.startswith("openai") else server.url, wire)


def _probe(quirks: dict[str, Any] | None = None, wire: str = "openai") -> Findings:
    with ScriptedServer({**DEMO_SCRIPT, **(quirks or {})}) as server:
        return asyncio.run(probe(_at(server, wire), today="2026-12-03"))


def _row(found: Findings, topic: str) -> str:
    return next(r.seen for r in found.rows if r.topic == topic)


def _reloaded(found: Findings, tmp_path: Path) -> profiles.Profile:
    path = tmp_path / "endpoint.toml"
    path.write_text(to_toml(found.profile), encoding="utf-8")
    (loaded,) = profiles.load(path)
    assert loaded == found.profile  # the file says exactly what the probe found
    return loaded


@pytest.mark.parametrize("wire", ["openai", "anthropic", "ollama"])
def test_a_first_party_like_endpoint_earns_the_structural_rule_and_nothing_else(
    wire: str, tmp_path: Path
) -> None:
    found = _probe(wire=wire)
    asks = len(battery(wire))  # Chat Completions' is one longer: usage unasked
    assert found.warnings == [] and found.profile.rules() == ["structural"]
    evidence = found.profile.evidence["structural"]
    assert evidence.seen == asks and evidence.date == "2026-12-03"
    assert evidence.source.startswith("railings probe http://127.0.0.1:")
    assert set(found.profile.evidence) == {"structural"}
    assert found.requests == asks and found.output_tokens > 0


@pytest.mark.parametrize("wire", WIRES)
def test_every_wire_is_probed_and_its_profile_judges_the_servers_own_streams_alike(
    wire: str, tmp_path: Path
) -> None:
    asks = battery(wire)
    with ScriptedServer(DEMO_SCRIPT) as server:
        config = _at(server, wire)
        found = asyncio.run(probe(config, today="2026-12-03"))
        assert [(r.provider, r.status) for r in server.requests] == [(wire, 200)] * len(asks)
        loaded = _reloaded(found, tmp_path)
        path = config.url.removeprefix(server.url)
        for ask in asks:
            sent = raw_request(
                server.url, path, body(ask, wire, "m"), headers=config.request_headers()
            )
            plain = replay(sent.body, provider=wire).turn
            judged = replay(sent.body, provider=wire, profile=loaded).turn
            assert plain.outcome is Outcome.COMPLETE
            assert (judged.outcome, judged.truncated, judged.stop_reason) == (
                plain.outcome,
                plain.truncated,
                plain.stop_reason,
            )
    assert found.warnings == [] and found.requests == len(asks)
    assert _row(found, "proof").endswith(f" on {len(asks)} of {len(asks)}")
    assert _row(found, "usage").startswith(f"on {len(asks) - (wire == 'openai')} of ")
    assert _row(found, "text cut").startswith("stop reason ")


@pytest.mark.parametrize("wire", ["openai-responses", "gemini", "bedrock"])
def test_a_proof_that_carries_the_stop_reason_earns_no_rule_and_says_so(wire: str) -> None:
    found = _probe(wire=wire)
    row = next(r for r in found.rows if r.topic == "stop reason")
    assert row.seen.startswith("carried by ") and row.seen.endswith(": 3 of 3")
    assert row.does == "no rule: the proof is the stop reason"
    # structural could change no verdict there: neither the rule nor evidence about it.
    assert found.profile.rules() == [] and found.profile.evidence == {}


def test_a_responses_battery_stays_at_or_above_its_apis_smallest_output_limit() -> None:
    assert min(ask.max_tokens for ask in battery("openai-responses")) == 16
    found = _probe(wire="openai-responses")  # 16 still cuts the scripted text
    assert _row(found, "text cut") == "stop reason max_output_tokens, usage 16 of 16"


@pytest.mark.parametrize("wire", ["openai-responses", "gemini", "bedrock", "ollama"])
def test_a_missing_proof_on_any_wire_is_reported_loudly_and_names_no_ending(
    wire: str, tmp_path: Path
) -> None:
    found = _probe({"proof": False}, wire=wire)
    assert found.warnings == [NO_PROOF] and found.profile.rules() == []
    assert found.profile.proof is None  # its stop reason and usage went with the proof
    assert "no rule can make" in found.profile.evidence["structural"].observed
    _reloaded(found, tmp_path)


@pytest.mark.parametrize("wire", ["openai-responses", "gemini"])
def test_comments_before_the_first_event_earn_the_clock_on_every_sse_wire(
    wire: str, tmp_path: Path
) -> None:
    found = _probe({"keepalives": 2}, wire=wire)
    assert found.profile.rules() == ["first_content"]
    assert "comments before the first event: 6" in _row(found, "keep-alives")
    assert _reloaded(found, tmp_path).first_content == found.profile.first_content


def test_bedrock_reads_usage_after_its_proof_and_counts_no_keepalives() -> None:
    found = _probe({"keepalives": 2}, wire="bedrock")  # the kit sends none: not SSE
    assert _row(found, "keep-alives") == "not applicable: eventstream frames carry none"
    assert _row(found, "usage").startswith("on 3 of 3; at the limit on 2 of 2")
    assert found.profile.rules() == []


def test_an_older_ollama_with_blank_lines_and_no_done_reason_gets_what_it_earns(
    tmp_path: Path,
) -> None:
    # Blank lines before the first line (what NDJSON can carry as keep-alives), and the
    # done line without a done_reason, as Ollama's own documentation shows it.
    stream = (CORPUS / "ollama/docs_streaming_no_done_reason.ndjson").read_bytes()
    reply = Reply(
        chunks=[b"\n", b"\r\n", stream], headers=(("content-type", "application/x-ndjson"),)
    )
    with CannedServer().push(reply, reply, reply) as server:
        found = asyncio.run(probe(_config(server.url, "ollama"), today="2026-12-03"))
    assert "blank lines before the first event: 6" in _row(found, "keep-alives")
    assert found.profile.rules() == ["first_content"]
    why = found.profile.evidence["structural"].observed
    assert why == "not set: 3 of 3 complete answers ended with done and no done_reason"
    loaded = _reloaded(found, tmp_path)
    assert replay(stream, provider="ollama", profile=loaded).turn.outcome is Outcome.COMPLETE


def test_the_written_profile_refuses_a_forged_ending_and_keeps_a_proven_one(
    tmp_path: Path,
) -> None:
    loaded = _reloaded(_probe(), tmp_path)
    assert replay(PROVEN, provider="openai", profile=loaded).turn.outcome is Outcome.COMPLETE
    forged = replay(FORGED, provider="openai", profile=loaded).turn
    assert forged.outcome is Outcome.PARTIAL and forged.error is not None
    assert "finish_reason" in forged.error.message


def test_null_stop_reasons_leave_the_terminator_as_the_proof_and_say_why(
    tmp_path: Path,
) -> None:
    found = _probe({"null_stop_reason": True})
    assert found.profile.rules() == [] and found.warnings == []
    why = found.profile.evidence["structural"].observed
    assert why.startswith("not set:") and why.endswith("ended with [DONE] and no finish_reason")
    loaded = _reloaded(found, tmp_path)
    # The endpoint's own complete answers must stay complete under its profile.
    assert replay(FORGED, provider="openai", profile=loaded).turn.outcome is Outcome.COMPLETE


def test_keepalives_before_the_first_event_earn_a_generous_first_content_clock(
    tmp_path: Path,
) -> None:
    found = _probe({"keepalives": 2, "keepalive_delay": 0.01})
    assert found.profile.rules() == ["structural", "first_content"]
    assert found.profile.first_content is not None and found.profile.first_content >= 600
    assert found.profile.evidence["first_content"].seen == 4
    row = next(r for r in found.rows if r.topic == "keep-alives")
    assert "comments before the first event: 8" in row.seen
    assert _reloaded(found, tmp_path).first_content == found.profile.first_content


def test_anthropic_pings_after_the_message_started_set_no_clock() -> None:
    found = _probe(wire="anthropic")
    row = next(r for r in found.rows if r.topic == "keep-alives")
    assert "pings" in row.seen and found.profile.first_content is None


def test_tool_calls_at_the_cap_are_reported_and_relax_nothing(tmp_path: Path) -> None:
    found = _probe({"cut_stop_reason": "tool_calls"})
    row = next(r for r in found.rows if r.topic == "call cut")
    assert "stop reason tool_calls" in row.seen and "usage 16 of 16" in row.seen
    assert row.does == "refuse the call: usage at the limit"
    assert not found.profile.misreports_length
    assert found.profile.evidence["misreports_length"].observed.startswith("not set:")
    assert _reloaded(found, tmp_path).rules() == ["structural"]


def test_no_proof_is_reported_loudly_and_no_rule_is_written(tmp_path: Path) -> None:
    # No [DONE], and no stop reason either: no ending to name.
    found = _probe({"proof": False, "null_stop_reason": True})
    assert found.warnings == [NO_PROOF]
    assert f"!! {NO_PROOF}" in table(found)
    assert found.profile.rules() == []
    assert "no rule can make" in found.profile.evidence["structural"].observed
    _reloaded(found, tmp_path)


def test_an_endpoint_that_ends_with_stop_and_usage_instead_gets_that_ending_named(
    tmp_path: Path,
) -> None:
    found = _probe({"proof": False})  # finish_reason, usage when asked, clean close
    assert found.warnings == [] and found.profile.rules() == ["proof"]
    assert found.profile.proof == "stop-reason-then-usage"
    assert found.profile.evidence["proof"].seen == 3  # the answers that asked for usage
    loaded = _reloaded(found, tmp_path)
    no_done = b"".join(openai_text(["all of it"], done=False))
    assert replay(no_done, provider="openai").turn.outcome is Outcome.PARTIAL
    assert replay(no_done, provider="openai", profile=loaded).turn.outcome is Outcome.COMPLETE
    # Without its usage report the same answer is still interrupted.
    cut_short = b"".join(openai_text(["all of it"], done=False)[:-1])
    assert replay(cut_short, provider="openai", profile=loaded).turn.outcome is Outcome.PARTIAL


def test_the_table_fits_in_80_columns() -> None:
    for quirks in ({}, {"proof": False}, {"cut_stop_reason": "tool_calls", "keepalives": 1}):
        assert all(len(line) <= 80 for line in table(_probe(quirks)))


# -- the command -------------------------------------------------------------------------------


def test_without_yes_or_a_terminal_nothing_is_sent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with ScriptedServer(DEMO_SCRIPT) as server:
        code = main(["probe", server.openai_base_url])
        assert server.requests == []
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("railings probe: ")
    assert "--yes" in err[0] and list(tmp_path.iterdir()) == []


def test_the_key_goes_to_the_url_given_and_is_never_shown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "mine.toml"
    with ScriptedServer({**DEMO_SCRIPT, "api_key": KEY}) as server:
        url = server.openai_base_url
        code = main(["probe", url, "--yes", "--json", "--out", str(out)])
        assert [r.status for r in server.requests] == [200] * 4  # the key was accepted
    shown = capsys.readouterr()
    assert code == 0 and KEY not in shown.out + shown.err + out.read_text(encoding="utf-8")
    report = json.loads(shown.out)
    assert report["profile"] == {"file": str(out), "rules": ["structural"]}
    assert report["cost"]["requests"] == 4
    (loaded,) = profiles.load(out)
    assert loaded.base_urls == (url,)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["probe", "ftp://example.com", "--yes"], "http:// or https://"),
        (["probe", "--yes"], "URL"),
        (["probe", "--demo", "--model", "m", "--yes"], "--demo"),
        (["probe", "https://api.openai.com/v1", "--yes"], "OPENAI_API_KEY"),
    ],
)
def test_a_usage_mistake_is_one_line_and_exit_2(
    argv: list[str],
    says: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("railings probe: ") and says in err[0]


def test_an_endpoint_that_cannot_be_reached_fails_the_battery(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with ScriptedServer(DEMO_SCRIPT) as server:
        url = server.openai_base_url  # closed when the block ends: nothing listens there
    assert main(["probe", url, "--yes"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("railings probe: request 1 (a short answer): ")
    assert list(tmp_path.iterdir()) == []


def test_probe_demo_runs_through_the_console_script(tmp_path: Path) -> None:
    program = Path(sys.executable).parent / "railings"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"NO_COLOR": "1"}
    done = subprocess.run(
        [str(program), "probe", "--demo", "--yes"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "structural = true" in done.stdout and "written     127-0-0-1.toml" in done.stdout
    assert all(line.startswith("railings probe: ") for line in done.stderr.splitlines())
    (loaded,) = profiles.load(tmp_path / "127-0-0-1.toml")
    assert loaded.rules() == ["structural"]


def test_an_error_status_fails_the_battery_in_one_line_without_the_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ScriptedServer({**DEMO_SCRIPT, "api_key": "sk-another-key"}) as server:
        assert main(["probe", server.openai_base_url, "--yes"]) == 1
        assert [r.status for r in server.requests] == [401]  # no retry of a refusal
    shown = capsys.readouterr()
    last = shown.err.splitlines()[-1]
    assert last.startswith("railings probe: request 1 (a short answer): ") and "401" in last
    assert KEY not in shown.out + shown.err and list(tmp_path.iterdir()) == []


def test_probe_demo_plays_the_wire_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "demo.toml"
    argv = ["probe", "--demo", "--provider", "bedrock", "--yes", "--json", "--out", str(out)]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["wire"] == "bedrock" and report["cost"]["requests"] == 3
    assert report["profile"]["rules"] == [] and profiles.load(out)[0].wire == "bedrock"


def test_a_server_that_waits_longer_cannot_stretch_the_clock_past_the_ceiling() -> None:
    from dataclasses import replace

    from railings.probe import battery, findings, observe
    from railings.probe.findings import FIRST_CONTENT_CEILING

    with ScriptedServer({**DEMO_SCRIPT, "keepalives": 1}) as server:
        url = server.openai_base_url
        config = ClientConfig(provider="openai", model="m", base_url=url)
        seen = asyncio.run(observe(config, battery("openai"), http2=False))
    # As if the keep-alive had come after an hour: the probe writes the ceiling, no more.
    waited = [replace(o, wait_before_first_event=3600.0) for o in seen]
    found = findings(waited, provider="openai", url=url, base_url=url, today="2026-12-03")
    assert found.profile.first_content == FIRST_CONTENT_CEILING


def test_a_built_in_name_is_never_read_as_a_file_of_that_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "openai").write_text('name = "loose"\n')
    capture = Path(__file__).parent / "corpus/real/snowflake/cortex_no_finish_reason.sse"
    assert main(["replay", str(capture), "--profile", "openai"]) == 0
    assert "profile openai requires it" in capsys.readouterr().out
