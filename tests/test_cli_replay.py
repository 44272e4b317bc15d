"""`railings replay` as a user runs it: a real subprocess, exit codes, one-line errors."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

import railings as railings_package
from conftest import REAL
from railings.dispatch import Dispatcher, ToolRegistry, builtin_tools
from railings.dispatch import builtins as builtins_module
from railings.dispatch.outcome import OutcomeStatus
from railings.replay import replay
from streams import openai_tool_stream

CAPTURE = REAL / "anthropic" / "max_tokens_inside_tool_input.sse"
SRC = str(Path(railings_package.__file__).parents[1])


def railings(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True,
        text=True,
        timeout=60,
        input=stdin,
        # the code under test, not whichever railings the interpreter would find
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "PYTHONPATH": SRC},
    )


def test_json_is_byte_identical_whatever_the_chunk_size() -> None:
    outputs = {
        railings("replay", str(CAPTURE), "--json", *extra).stdout
        for extra in ([], ["--chunk-size", "1"], ["--chunk-size", "7"])
    }
    assert len(outputs) == 1
    report = json.loads(outputs.pop())
    assert set(report) >= {
        "provider",
        "termination",
        "outcome",
        "stop_reason",
        "stop_reason_wire",
        "stop_reason_source",
        "truncated",
        "text",
        "thinking",
        "usage",
        "tool_calls",
        "error",
    }
    assert report["truncated"] is True
    (call,) = report["tool_calls"]
    assert (call["verdict"], call["reason"], call["arguments"]) == ("reject", "truncated", None)


def test_the_cut_shell_command_from_a_file(tmp_path: Path) -> None:
    body = openai_tool_stream(['{"command": ', '"rm -rf /tmp/leg'], "length")
    path = tmp_path / "cut.sse"
    path.write_bytes(body)
    report = json.loads(railings("replay", str(path), "--json").stdout)
    assert report["stop_reason"] == "max_tokens" and report["stop_reason_wire"] == "length"
    assert report["tool_calls"][0]["raw_arguments"] == '{"command": "rm -rf /tmp/leg'
    assert report["tool_calls"][0]["verdict"] == "reject"


def test_a_body_piped_on_standard_input() -> None:
    piped = railings("replay", "-", "--json", stdin=CAPTURE.read_text())
    assert piped.returncode == 0
    assert piped.stdout == railings("replay", str(CAPTURE), "--json").stdout


def test_a_json_error_body_is_pointed_out() -> None:
    error = '{"type": "error", "error": {"type": "invalid_request_error", "message": "no"}}'
    done = railings("replay", "-", stdin=error)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        f"railings replay: - holds no server-sent event ({len(error)} bytes); it looks like a "
        'JSON response (an HTTP error?): {"type": "error"'
    )
    # With a format named, it is judged (an empty stream of that format), and still pointed out.
    named = railings("replay", "-", "--provider", "anthropic", stdin=error)
    assert named.returncode == 0 and "EMPTY" in named.stdout
    (line,) = named.stderr.splitlines()
    assert line.startswith(
        "railings replay: warning: the body holds no SSE event; it looks like a JSON"
    )


@pytest.mark.parametrize(
    "body", [b"", b"hello world", bytes(range(256)) * 4, b": keep-alive\n\n: ping\n\n"]
)
def test_a_body_with_no_event_stream_names_no_provider(body: bytes, tmp_path: Path) -> None:
    path = tmp_path / "body.bin"
    path.write_bytes(body)
    done = railings("replay", str(path))
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert f"holds no server-sent event ({len(body)} bytes)" in line
    assert "openai" not in line and "anthropic" not in line


def test_a_repaired_call_tells_what_the_built_in_tools_do_with_it(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[1] / "examples" / "finished_shell_call.sse"
    done = railings("replay", str(example))
    assert done.returncode == 0
    assert "execute (repaired): only by a tool that accepts repaired arguments" in done.stdout
    assert "repair=False tools (the built-in shell and write_file) refuse it" in done.stdout
    # ... and that is what the dispatcher does with the built-in shell (no approval gate):
    # the call is refused, and no process is ever spawned for it.
    spawned: list[str] = []

    async def spawn(command: str, cwd: Path) -> None:
        spawned.append(command)

    turn = replay(example.read_bytes()).turn
    dispatcher = Dispatcher(ToolRegistry(builtin_tools(tmp_path)))
    with mock.patch.object(builtins_module, "spawn", spawn):
        batch = asyncio.run(dispatcher.dispatch_turn(turn))
    [outcome] = batch.outcomes
    assert outcome.status is not OutcomeStatus.EXECUTED and spawned == []


def test_choice_picks_one_of_several() -> None:
    capture = REAL / "openai" / "n3_multiple_choices.sse"
    texts = []
    for choice in ("0", "1", "2"):
        done = railings("replay", str(capture), "--choice", choice, "--json")
        assert done.returncode == 0 and done.stderr == ""
        texts.append(json.loads(done.stdout)["text"])
    assert len(set(texts)) == 3  # three different answers, not choice 0 three times
    plain = railings("replay", str(capture), "--json")
    assert json.loads(plain.stdout)["text"] == texts[0]
    assert "the stream carried 3 choices (0, 1, 2); this is choice 0" in plain.stderr
    wrong = railings("replay", str(capture), "--choice", "5")
    assert wrong.returncode == 2
    assert wrong.stderr.strip() == "railings replay: --choice 5: the stream carried choices 0, 1, 2"


def test_human_summary_says_not_executed() -> None:
    done = railings("replay", str(CAPTURE))
    assert done.returncode == 0
    assert "TRUNCATED" in done.stdout and "NOT executed" in done.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["replay", "/nonexistent/file.sse"], "no such file"),
        (["replay", str(REAL)], "is a directory"),
        (["replay", str(CAPTURE), "--provider", "mistral"], "invalid choice"),
        (["replay", str(CAPTURE), "--chunk-size", "0"], "positive integer"),
        (["replay"], "required"),
        (["nonsense"], "invalid choice"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args: list[str], needle: str) -> None:
    done = railings(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_derived_stop_reason_without_max_tokens_warns() -> None:
    done = railings("replay", str(REAL / "snowflake" / "cortex_no_finish_reason.sse"), "--json")
    assert done.returncode == 0
    assert "cannot be recognized" in done.stderr
    assert json.loads(done.stdout)["stop_reason_source"] == "derived"


def test_a_wrong_provider_is_pointed_out() -> None:
    done = railings("replay", str(CAPTURE), "--provider", "openai-responses")
    assert done.returncode == 0
    assert "NOT finished" in done.stdout and "is --provider right?" in done.stdout


def test_a_cut_stream_shows_its_estimated_output_marked_as_one(tmp_path: Path) -> None:
    text = "cut before the usage chunk arrived"
    chunk = {"id": "c", "choices": [{"index": 0, "delta": {"content": text}}]}
    capture = tmp_path / "cut.sse"
    capture.write_text(f"data: {json.dumps(chunk)}\n\n")
    estimated = -(-len(text) // 4)
    shown = railings("replay", str(capture), "--provider", "openai")
    assert f"usage: unknown in, ~{estimated} (estimated, chars/4) out" in shown.stdout
    usage = json.loads(railings("replay", str(capture), "--json").stdout)["usage"]
    assert usage == {
        "input_tokens": None,
        "output_tokens": estimated,
        "input_source": "unknown",
        "output_source": "estimated",
        "method": "chars/4",
    }
