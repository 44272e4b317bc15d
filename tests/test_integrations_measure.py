"""python -m tools.measure_integrations: the table in docs/guard.md is measured, and says so."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")

import tools.measure_integrations as m


def test_the_cut_is_where_the_issue_says() -> None:
    assert m.CUT == '{"command": "rm -rf /tmp/leg'
    assert len(m.CUT) == m.MAX_TOKENS * 4  # the scripted server cuts at exactly 4 chars a token


def test_sdk_rows() -> None:
    rows = {row.call: row for row in m.measure(["openai", "anthropic"])}
    create = rows["chat.completions.create()"]
    assert repr(m.CUT) in create.today and "'length'" in create.today
    helper = rows["chat.completions.stream()"]
    assert "LengthFinishReasonError" in helper.today
    final = rows["messages.stream() -> get_final_message()"]
    assert final.today.startswith("tool_use.input {}")
    responses = rows["responses.create()"]
    assert repr(m.CUT) in responses.today and "'incomplete'" in responses.today
    assert "RuntimeError" in rows["responses.stream()"].today
    for row in (create, helper, final, responses, rows["responses.stream()"]):
        assert row.with_fix == "reject (truncated) + resend notice"


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
def test_langgraph_rows() -> None:
    rows = m.measure(["langgraph"])
    by_run = {row.call.split(", ", 1)[1]: row for row in rows}
    streamed = by_run["agent.stream(stream_mode='messages')"]
    assert streamed.runs == "RUNS shell('rm -rf /tmp/leg')"
    assert streamed.with_fix.startswith("not run; the notice reached the model")
    invoked = by_run["agent.invoke()"]
    assert invoked.runs.startswith("not run; the run ends with the call unanswered")
    assert invoked.with_fix.startswith("not run; the notice reached the model")


def test_langchain_rows() -> None:
    rows = {row.call: row for row in m.measure(["langchain"])}
    assert rows["ChatOpenAI().invoke()"].today.startswith(f"invalid_tool_calls args {m.CUT!r}")
    repaired = rows["ChatOpenAI(streaming=True).invoke()"]
    assert "{'command': 'rm -rf /tmp/leg'}" in repaired.today
    assert "raw text is gone" in repaired.today
    assert all(r.with_fix == "reject (truncated) + resend notice" for r in rows.values())


def test_a_missing_package_is_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> list[m.Row]:
        raise ModuleNotFoundError("No module named 'nope'", name="nope")

    monkeypatch.setitem(m.STACKS, "openai", (missing, "nope"))
    (row,) = m.measure(["openai"])
    assert row.today == "not installed (nope): pip install nope"


@pytest.mark.parametrize("flag", ["--json", "--markdown", None])
def test_main_outputs(flag: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    assert m.main([*([flag] if flag else []), "--only", "openai"]) == 0
    out = capsys.readouterr().out
    if flag == "--json":
        data = json.loads(out)
        assert data["cut"] == m.CUT and len(data["rows"]) == 4  # chat completions, responses
    elif flag == "--markdown":
        assert out.startswith("| Stack |") and out.count("\n") == 6
    else:
        assert "A shell call cut at" in out and "openai" in out
