"""``railings probe``: against the scripted server, which behaves like the first-party
APIs, it finds nothing to relax and writes ``structural`` evidence; against each quirk
of the compatible endpoints it writes only what the evidence supports; it sends nothing
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

from _server import openai_text
from railings import profiles, replay
from railings.cli import main
from railings.probe import DEMO_SCRIPT, NO_PROOF, Findings, probe, table, to_toml
from railings.testing import ScriptedServer
from railings.transport import ClientConfig
from railings.turn.model import Outcome

KEY = "sk-probe-secret-5f1e2d3c4b5a6978"
# Text, then the terminator, and no finish_reason: a layer in between ended it.
FORGED = b"".join(openai_text(["Your refund will be processed within"], finish=None))
PROVEN = b"".join(openai_text(["Your refund will be processed within 5-7 days."]))


def _probe(quirks: dict[str, Any] | None = None, wire: str = "openai") -> Findings:
    with ScriptedServer({**DEMO_SCRIPT, **(quirks or {})}) as server:
        url = server.openai_base_url if wire == "openai" else server.anthropic_base_url
        config = ClientConfig(provider=wire, model="m", base_url=url, api_key="k")  # type: ignore[arg-type]
        return asyncio.run(probe(config, today="2026-12-03"))


def _reloaded(found: Findings, tmp_path: Path) -> profiles.Profile:
    path = tmp_path / "endpoint.toml"
    path.write_text(to_toml(found.profile), encoding="utf-8")
    (loaded,) = profiles.load(path)
    assert loaded == found.profile  # the file says exactly what the probe found
    return loaded


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_first_party_like_endpoint_earns_the_structural_rule_and_nothing_else(
    wire: str, tmp_path: Path
) -> None:
    found = _probe(wire=wire)
    assert found.warnings == [] and found.profile.rules() == ["structural"]
    evidence = found.profile.evidence["structural"]
    assert evidence.seen == 4 and evidence.date == "2026-12-03"
    assert evidence.source.startswith("railings probe http://127.0.0.1:")
    assert set(found.profile.evidence) == {"structural"}
    assert found.requests == 4 and found.output_tokens > 0


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
