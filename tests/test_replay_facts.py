"""`railings replay` reads each capture of tests/corpus to the facts its folder's REPLAY.tsv lists.

REPLAY.tsv (beside MANIFEST.tsv, which says what is on the wire) is railings' own reading,
one row per capture, each column explained in its header: whether the turn finished and if
not why, the stop reason and where it came from, truncation, the turn's parts in order and
the verdict on each tool call; and what changes when the request's output limit was 16
tokens. The report is read from ``railings replay --json`` as a user runs it (in process);
the summary ``railings replay`` prints must tell the same story, line by line; and the
report is the same whether the wire is detected or named, and whatever the chunk size.
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from conftest import CORPUS, captures, runs
from railings.cli import main
from railings.replay import replay
from railings.turn.parts import (
    ProviderItem,
    RedactedThinkingPart,
    RefusalPart,
    ServerToolCall,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCall,
)

FOLDERS = ("real", "responses", "gemini", "bedrock", "ollama")
WIRE = dict(captures())
KINDS = {
    TextPart: "text",
    ThinkingPart: "thinking",
    RedactedThinkingPart: "redacted_thinking",
    RefusalPart: "refusal",
    ToolCall: "call",
    ServerToolCall: "server_call",
    ServerToolResultPart: "server_result",
}


def expected() -> dict[str, dict[str, str]]:
    """``folder/file`` -> its row of REPLAY.tsv (``#`` lines are comments)."""
    rows: dict[str, dict[str, str]] = {}
    for folder in FOLDERS:
        text = (CORPUS / folder / "REPLAY.tsv").read_text(encoding="utf-8")
        header, *lines = [line for line in text.splitlines() if not line.startswith("#")]
        for line in lines:
            row = dict(zip(header.split("\t"), line.split("\t"), strict=True))
            rows[f"{folder}/{row['file']}"] = row
    return rows


EXPECTED = expected()


def run(*args: str) -> tuple[int, str, str]:
    """``railings ARGS``, in process: exit code, standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def report(path: str, *options: str) -> dict[str, Any]:
    code, out, _ = run("replay", "--json", *options, str(CORPUS / path))
    assert code == 0
    return dict(json.loads(out))


# -- a report, as REPLAY.tsv writes it ------------------------------------------------------


def _stop(report: dict[str, Any]) -> str:
    if report["stop_reason"] is None:
        return "-"
    if report["stop_reason_source"] == "wire":
        return f"{report['stop_reason']} (wire: {report['stop_reason_wire']})"
    return f"{report['stop_reason']} ({report['stop_reason_source']})"


def _calls(report: dict[str, Any]) -> str:
    said = []
    for call in report["tool_calls"]:
        name = call["name"] + ("" if call["type"] == "function" else f"({call['type']})")
        verdict = call["verdict"] + (f"/{call['reason']}" if call["reason"] else "")
        said.append(f"{name}={verdict}" + ("/repaired" if call["repaired"] else ""))
    return " ".join(said) or "-"


def facts(report: dict[str, Any]) -> dict[str, str]:
    error = report["error"]
    why = "-" if error is None else error["kind"]
    if error is not None and error["provider_type"]:
        why += f":{error['provider_type']}"
    return {
        "outcome": report["outcome"],
        "error": why,
        "stop": _stop(report),
        "truncated": "yes" if report["truncated"] else "no",
        "calls": _calls(report),
    }


def parts(path: str) -> str:
    turn = replay((CORPUS / path).read_bytes(), provider=WIRE[path]).turn
    kinds = [
        f"item:{part.type}" if isinstance(part, ProviderItem) else KINDS[type(part)]
        for part in turn.parts
    ]
    return runs(kinds) or "-"


def at_16(row: dict[str, str]) -> dict[str, str]:
    """The row's facts with --max-tokens 16 (``=``: as without it)."""
    out = {key: row[key] for key in ("outcome", "error", "stop", "truncated", "calls")}
    for key in ("stop", "truncated", "calls"):
        if row[f"{key}_16"] != "=":
            out[key] = row[f"{key}_16"]
    return out


# -- the tests -----------------------------------------------------------------------------


def test_every_capture_has_its_expected_facts() -> None:
    assert set(EXPECTED) == set(WIRE)


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_replay_reads_each_capture_to_its_facts(path: str) -> None:
    row = EXPECTED[path]
    assert facts(report(path)) | {"parts": parts(path)} == {
        key: row[key] for key in ("outcome", "error", "stop", "truncated", "calls", "parts")
    }
    assert facts(report(path, "--max-tokens", "16")) == at_16(row)


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_the_report_is_the_same_detected_or_named_and_in_pieces(path: str) -> None:
    for limit in ((), ("--max-tokens", "16")):
        whole = report(path, *limit)
        assert report(path, "--provider", WIRE[path], *limit) == whole
        assert report(path, "--chunk-size", "7", *limit) == whole
        assert report(path, "--provider", WIRE[path], "--chunk-size", "7", *limit) == whole


HEADS = {
    # Whether the stream finished, or why not, is the summary's first line.
    "real/groq/midstream_error_event_no_done.sse": (
        "openai stream NOT finished: PARTIAL (Tool call validation failed: tool call "
        "validation failed: parameters for tool get_something_by_name did not match schema: "
        "errors: [missing properties: 'name', additionalProperties 'invalid_param' not "
        "allowed])"
    ),
    "real/openrouter/error_in_chunk_after_length.sse": (
        "openai stream NOT finished: PARTIAL (Token limit reached)"
    ),
    "bedrock/model_stream_error_exception.bin": (
        "bedrock stream NOT finished: EMPTY (Model Stream Error)"
    ),
    "real/anthropic/max_tokens_inside_tool_input.sse": (
        "anthropic stream finished: the provider's termination proof arrived"
    ),
}


@pytest.mark.parametrize("path", sorted(HEADS))
def test_the_summary_says_first_whether_the_stream_finished(path: str) -> None:
    _, out, _ = run("replay", str(CORPUS / path))
    assert out.splitlines()[0] == HEADS[path]


@pytest.mark.parametrize("limit", [(), ("--max-tokens", "16")])
@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_the_summary_tells_the_same_story(path: str, limit: tuple[str, ...]) -> None:
    row = EXPECTED[path] if not limit else EXPECTED[path] | at_16(EXPECTED[path])
    code, out, err = run("replay", *limit, str(CORPUS / path))
    assert code == 0
    head, stop, *rest = out.splitlines()
    provider = report(path)["provider"]
    if row["outcome"] == "complete":
        assert head == f"{provider} stream finished: the provider's termination proof arrived"
    else:
        assert head.startswith(f"{provider} stream NOT finished: {row['outcome'].upper()} (")
    reason, _, source = row["stop"].partition(" ")
    assert stop.startswith(f"stop reason: {reason}")
    if source.startswith("(wire: "):
        assert f"(from the wire: {source[7:-1]})" in stop
    elif source == "(derived)":
        assert "(derived: the stream carried none)" in stop
    assert ("TRUNCATED by the output limit" in stop) == (row["truncated"] == "yes")
    # One line per local call, ending with its verdict, in the order the calls started.
    said = [line.rsplit(" -> ", 1)[1] for line in rest if " call #" in line and " -> " in line]
    verdicts = [] if row["calls"] == "-" else [c.split("=")[1] for c in row["calls"].split()]
    assert len(said) == len(verdicts)
    for line, verdict in zip(said, verdicts, strict=True):
        if verdict.startswith("reject/"):
            assert line.startswith(f"NOT executed: {verdict.split('/')[1]}")
        elif verdict == "execute/repaired":
            assert line.startswith("execute (repaired): only by a tool that accepts")
        else:
            assert line in ("execute", "pending approval: the client must approve or deny it")
    # Without the request's limit, a stop reason railings had to derive hides a truncation.
    warned = "railings replay: warning: the stream carried no stop reason" in err
    assert warned == (source == "(derived)" and not limit)
