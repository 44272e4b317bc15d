"""``/continue`` in ``railings chat``, as a user runs it: a real subprocess reading its
lines from stdin, the scripted model behind the fault proxy on 127.0.0.1, the journal
read back with ``railings show``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import railings as railings_package
from railings.testing import FaultProxy, Script, ScriptedServer

STORY = "Once upon a time there was a king who lived in a castle by the sea."
CUT_FIRST = "truncate:events=4,times=1"  # the first answer is cut, the others pass


def railings(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(Path(railings_package.__file__).parents[1]),  # the code under test
        "NO_COLOR": "1",
        "HOME": str(tmp_path),
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
        "OPENAI_API_KEY": "sk-test-continue-0000",
        "ANTHROPIC_API_KEY": "sk-ant-test-continue-0000",
    }
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
        env=env,
        cwd=tmp_path,
    )


def chat(
    tmp_path: Path, script: dict[str, Any], fault: str, lines: str, provider: str = "openai"
) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    """``railings chat`` over ``lines``; what it did, and the request bodies the model got."""
    with (
        ScriptedServer(Script.from_dict({"chunk_size": 5, **script})) as server,
        FaultProxy(server.url, fault) as proxy,
    ):
        base = proxy.url + "/v1" if provider == "openai" else proxy.url
        done = railings(
            tmp_path,
            "chat",
            *("--provider", provider, "--base-url", base, "--model", "m", "--tools", "none"),
            stdin=lines,
        )
        bodies = [r.body for r in server.requests]
    return done, bodies


def _said(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("railings chat: ")]


def _entries(tmp_path: Path) -> list[dict[str, Any]]:
    (session,) = json.loads(railings(tmp_path, "sessions", "--json").stdout)
    shown = json.loads(railings(tmp_path, "show", session["id"], "--json").stdout)
    entries: list[dict[str, Any]] = shown["entries"]
    return entries


def test_continue_streams_the_rest_and_the_joined_reply_takes_the_partials_place(
    tmp_path: Path,
) -> None:
    script = {"turns": [{"text": STORY}, {"text": "The king was kind."}]}
    done, bodies = chat(tmp_path, script, CUT_FIRST, "hello\n/continue\nand then?\n/exit\n")
    assert done.returncode == 0, done.stderr  # the last reply's: it ended its turn
    partial = STORY[:15]  # four events: the role, then three deltas of five characters
    assert "INCOMPLETE" in done.stdout
    # The model, asked by user message, wrote it all again; only the rest was shown.
    assert done.stdout.count("Once upon") == 1
    assert "turn 1: the rest of the interrupted reply" in done.stdout
    assert STORY[len(partial) :] in done.stdout
    continuation = bodies[1]["messages"]
    assert [m["role"] for m in continuation] == ["system", "user", "user"]
    assert partial in continuation[-1]["content"]
    # The next line sees the joined reply in the partial one's place, and nothing else.
    after = bodies[2]["messages"]
    assert [m["role"] for m in after] == ["system", "user", "assistant", "user"]
    assert after[2]["content"] == STORY and after[3]["content"] == "and then?"
    assert "The king was kind." in done.stdout
    # Journaled: the rest's deltas, and a turn that says how it was made.
    entries = _entries(tmp_path)
    starts = [e for e in entries if e["kind"] == "turn_start"]
    assert [e["data"].get("continues", False) for e in starts] == [False, True, False]
    (end,) = [e for e in entries if e["kind"] == "turn_end" and "continuation" in e["data"]]
    assert end["data"]["outcome"] == "complete"
    assert end["data"]["continuation"] == {
        "strategy": "user",
        "fell_back": False,
        "repeated": len(partial),
        "attempts": 2,
    }
    texts = [e["data"]["text"] for e in entries if e["kind"] == "delta"]
    assert "".join(texts) == STORY + "The king was kind."


def test_a_refused_prefill_says_so_and_the_rest_still_comes(tmp_path: Path) -> None:
    script = {"prefill": False, "turns": [{"text": STORY}]}
    done, bodies = chat(
        tmp_path, script, "truncate:events=5,times=1", "hello\n/continue\n", provider="anthropic"
    )
    assert done.returncode == 0, done.stderr
    assert [b["messages"][-1]["role"] for b in bodies] == ["user", "assistant", "user"]
    assert (
        "railings chat: the model refused a prefill; the rest was asked for by user message"
        in _said(done)
    )
    assert done.stdout.count("Once upon") == 1 and "castle by the sea." in done.stdout


def test_nothing_to_continue_is_one_line_and_the_exit_status_stays(tmp_path: Path) -> None:
    script = {"turns": [{"text": "Hello."}]}
    done, bodies = chat(tmp_path, script, "none", "/continue\nhi\n/continue\n/exit\n")
    assert done.returncode == 0, done.stderr
    assert len(bodies) == 1  # /continue never reached the model
    said = [line for line in _said(done) if "nothing to continue" in line]
    assert said == [
        "railings chat: nothing to continue: the last line got no reply",
        "railings chat: nothing to continue: the last reply is complete",
    ]
    assert "Traceback" not in done.stderr


def test_a_cut_tool_call_is_never_continued(tmp_path: Path) -> None:
    call = {"name": "shell", "arguments": {"command": "ls -la /tmp/some/where"}}
    script = {"turns": [{"text": "Let me look.", "tool_calls": [call]}]}
    done, bodies = chat(tmp_path, script, "truncate:events=7", "list it\n/continue\n")
    assert done.returncode == 3, done.stderr  # still the interrupted reply's
    assert len(bodies) == 1
    assert any("nothing to continue: the last reply holds a tool call" in s for s in _said(done))


def test_chat_help_lists_continue(tmp_path: Path) -> None:
    done = railings(tmp_path, "chat", "--help")
    assert done.returncode == 0
    commands = done.stdout[done.stdout.index("commands:") : done.stdout.index("keys (on")]
    assert "/continue" in commands and "/exit, /quit" in commands
    assert all(len(line) < 80 for line in commands.splitlines())
