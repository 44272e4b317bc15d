"""`railings run/chat/sessions/show` as a user runs them: real subprocesses, exit codes,
one-line errors, and a journal that survives SIGKILL mid-stream."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import railings as railings_package
from railings.journal import Journal
from railings.testing import Script, ScriptedServer

COMMANDS = ["replay", "serve", "proxy", "run", "chat", "sessions", "show"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(Path(railings_package.__file__).parents[1]),  # the code under test
        "NO_COLOR": "1",
        "HOME": str(tmp_path),
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
    }
    env.update(extra)
    return env


def railings(
    tmp_path: Path, *args: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
        env=_env(tmp_path, **env),
        cwd=tmp_path,
    )


def run_openai(
    tmp_path: Path, base_url: str, *args: str, task: str = "x", key: str = "sk-test-0000"
) -> subprocess.CompletedProcess[str]:
    """``railings run TASK --provider openai --base-url BASE_URL ARGS`` with ``key`` set."""
    return railings(
        tmp_path,
        "run",
        task,
        "--provider",
        "openai",
        "--base-url",
        base_url,
        *args,
        OPENAI_API_KEY=key,
    )


def test_run_with_no_key_uses_the_embedded_demo_and_says_so(tmp_path: Path) -> None:
    done = railings(tmp_path, "run", "write a report")
    assert done.returncode == 0, done.stderr
    assert "no API key in the environment: using the embedded scripted model" in done.stderr
    assert "NOT executed: truncated" in done.stdout
    # How the run ended is a status line: on stderr, beside the errors.
    assert "done: the model ended its turn" in done.stderr
    assert not (tmp_path / "REPORT.md").exists()  # the demo works in a temporary directory


def test_run_json_transcript_and_journal(tmp_path: Path) -> None:
    done = railings(tmp_path, "run", "write a report", "--json", "--workdir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    transcript = json.loads(done.stdout)
    (run,) = transcript["runs"]
    assert run["status"] == "completed" and run["exit_code"] == 0
    verdicts = [[c["verdict"] for c in turn["tool_calls"]] for turn in run["turns"]]
    assert verdicts == [["execute"], ["reject"], ["execute"], []]
    assert run["turns"][1]["truncated"] is True
    assert (tmp_path / "REPORT.md").stat().st_size == 1500
    listed = railings(tmp_path, "sessions", "--json")
    (session,) = json.loads(listed.stdout)
    assert session["id"] == transcript["session_id"]
    shown = railings(tmp_path, "show", session["id"][:6])
    assert shown.returncode == 0 and "NOT executed: truncated" in shown.stdout
    shown_json = json.loads(railings(tmp_path, "show", session["id"], "--json").stdout)
    assert any(e["kind"] == "tool_result" for e in shown_json["entries"])


def test_chat_keeps_history_across_lines(tmp_path: Path) -> None:
    script = {"turns": [{"text": "first answer"}, {"text": "second answer"}]}
    (tmp_path / "s.json").write_text(json.dumps(script))
    with ScriptedServer(Script.load(tmp_path / "s.json")) as server:
        done = railings(
            tmp_path,
            "chat",
            "--provider",
            "anthropic",
            "--base-url",
            server.anthropic_base_url,
            "--model",
            "m",
            stdin="hello\nagain\n/exit\n",
            ANTHROPIC_API_KEY="sk-ant-test-123456",
        )
        bodies = [r.body for r in server.requests]
    assert done.returncode == 0, done.stderr
    assert "first answer" in done.stdout and "second answer" in done.stdout
    assert len(bodies[1]["messages"]) == 3  # user, assistant, user: the history was kept


def test_partial_turn_exits_3(tmp_path: Path) -> None:
    from railings.testing import FaultProxy

    with (
        ScriptedServer(Script.text("part of an answer that never finishes")) as server,
        FaultProxy(server.url, "drop_terminator") as proxy,
    ):
        done = run_openai(tmp_path, proxy.url + "/v1", key="sk-test-1234567890")
    assert done.returncode == 3, done.stderr
    assert "INCOMPLETE" in done.stdout and "part of an answer" in done.stdout


def test_authentication_error_exits_1_with_one_line(tmp_path: Path) -> None:
    script = {"api_key": "sk-right-key-123", "turns": [{"text": "hi"}]}
    with ScriptedServer(Script.from_dict(script)) as server:
        base_url = server.openai_base_url
        done = run_openai(tmp_path, base_url, key="sk-wrong-key-456789")
    assert done.returncode == 1
    prefix = "railings run: "
    where, *rest = [line for line in done.stderr.splitlines() if line.startswith(prefix)]
    # Before the first request: where the turns go, and which variable the key came from.
    assert where == f"{prefix}openai model gpt-4.1-mini at {base_url} (key from OPENAI_API_KEY)"
    errors = [line for line in rest if "journal" not in line]
    assert len(errors) == 1 and "Traceback" not in done.stderr
    assert "Incorrect API key" not in done.stdout  # printed once, on stderr
    assert "sk-wrong-key-456789" not in done.stderr + done.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(tmp_path: Path, command: str) -> None:
    done = railings(tmp_path, command, "--help")
    assert done.returncode == 0 and "usage: railings " + command in done.stdout
    if command == "run":
        assert "exit codes:" in done.stdout and "3  the run ended on an interrupted" in done.stdout
    if command == "chat":  # its own keys and exit codes, not run's
        assert "exit codes:" in done.stdout and "3    an interrupted (Partial) turn" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["run"],
        ["run", "x", "--max-tokens", "0"],
        ["run", "x", "--provider", "gemini"],
        ["run", "x", "--workdir", "/nonexistent/dir"],
        ["run", "x", "--tools", "shell,teleport"],
        ["run", "x", "--bogus"],
        ["run", "x", "--content-idle", "0"],
        ["run", "x", "--total-timeout", "-1"],
        ["show", "nope"],
        ["serve", "--port", "99999"],
        ["sessions", "--journal", "/dev/null/x.db"],
    ],
)
def test_bad_flags_are_one_line_exit_2(tmp_path: Path, args: list[str]) -> None:
    done = railings(tmp_path, *args)
    assert done.returncode == 2, (args, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("railings"), done.stderr
    assert "Traceback" not in done.stderr


def test_journal_holds_every_delta_received_before_sigkill(tmp_path: Path) -> None:
    """The view prints a delta only after the journal committed it: kill after some output,
    and everything printed must already be in the journal."""
    script = {"chunk_size": 8, "delay": 0.01, "turns": [{"text": {"$filler": 4000}}]}
    with ScriptedServer(Script.from_dict(script)) as server:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "railings",
                "run",
                "x",
                "--provider",
                "openai",
                "--base-url",
                server.openai_base_url,
                "--tools",
                "none",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_env(tmp_path, OPENAI_API_KEY="k" * 16),
            cwd=tmp_path,
        )
        assert proc.stdout is not None
        seen = b""
        deadline = time.monotonic() + 60
        while len(seen) < 600 and time.monotonic() < deadline:
            seen += os.read(proc.stdout.fileno(), 4096)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    printed = seen.decode().split("── turn 1 ──\n", 1)[1]
    with Journal(tmp_path / "journal.sqlite3") as journal:
        assert journal.integrity() == "ok"
        (session,) = journal.sessions()
        assert session.status == "running"  # it never got to end
        texts = "".join(
            e.data["text"]
            for e in journal.entries(session.id)
            if e.kind == "delta" and e.data["kind"] == "text"
        )
    assert len(printed) > 100 and texts.startswith(printed)
    assert len(texts) < 4000  # killed mid-stream, not after


def test_a_repaired_shell_call_is_shown_as_not_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = {
        "turns": [
            {"tool_calls": [{"name": "shell", "arguments": '{"command": "touch ran",}'}]},
            {"text": "understood"},
        ]
    }
    with ScriptedServer(Script.from_dict(script)) as server:
        done = run_openai(
            tmp_path,
            server.openai_base_url,
            "--model",
            "m",
            "--workdir",
            str(tmp_path),
            "--yes",
            task="go",
            key="sk-test-1234567890",
        )
    assert done.returncode == 0, done.stderr
    assert "-> repaired" in done.stdout
    assert "NOT executed: shell runs only on arguments exactly as the model wrote them" in (
        " ".join(done.stdout.split())
    )
    assert not marker.exists()


def test_run_ends_a_stream_of_keepalives_by_the_content_clock(tmp_path: Path) -> None:
    from _server import CannedServer, Reply
    from streams import openai_chunk

    ping = b": ping\n\n"
    chunks: list[bytes | float] = [openai_chunk({"role": "assistant", "content": "hello"})]
    chunks += [0.02, ping] * 3000  # a minute of pings if nothing ended it
    with CannedServer() as server:
        server.push(Reply(chunks=chunks))
        done = run_openai(
            tmp_path,
            server.openai_base_url,
            "--model",
            "m",
            "--tools",
            "none",
            "--content-idle",
            "0.3",
            key="sk-test-content-idle",
        )
    assert done.returncode == 3, done.stderr  # a Partial turn: shown as-is, marked
    assert "only keep-alives" in done.stderr + done.stdout


def test_run_has_a_default_deadline_per_turn(tmp_path: Path) -> None:
    done = railings(tmp_path, "run", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "--content-idle S" in text and "(default 300)" in text
    assert "(default 1800, per attempt)" in text


def test_show_with_an_ambiguous_prefix_lists_what_it_matched(tmp_path: Path) -> None:
    with Journal(tmp_path / "journal.sqlite3") as journal:
        ids = sorted(journal.start_session(f"task {n}") for n in range(3))
    done = railings(tmp_path, "show", "")
    assert done.returncode == 2 and done.stdout == ""
    head, _, listed = done.stderr.strip().rpartition(": ")
    assert head == "railings show: 3 sessions start with ''"
    assert sorted(listed.split(", ")) == ids
    missing = railings(tmp_path, "show", "zzz")
    assert missing.returncode == 2
    assert "no session id starts with 'zzz' (railings sessions lists them)" in missing.stderr
    one = railings(tmp_path, "show", ids[0][:8])
    assert one.returncode == 0 and f"session {ids[0]}" in one.stdout


# -- what a newcomer meets ---------------------------------------------------------------------


def test_a_public_api_without_its_key_is_refused_before_the_network(tmp_path: Path) -> None:
    done = railings(tmp_path, "run", "x", "--provider", "anthropic")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (
        "railings run: --provider anthropic needs ANTHROPIC_API_KEY in the environment "
        "(for https://api.anthropic.com); --demo runs the embedded scripted model instead"
    )


def test_demo_uses_the_embedded_model_whatever_the_environment_holds(tmp_path: Path) -> None:
    done = railings(tmp_path, "run", "write a report", "--demo", OPENAI_API_KEY="sk-real-0000")
    assert done.returncode == 0, done.stderr
    assert "railings run: --demo: using the embedded scripted model" in done.stderr
    clash = railings(tmp_path, "run", "x", "--demo", "--provider", "openai")
    assert clash.returncode == 2 and "--demo uses the embedded scripted model" in clash.stderr


def _shell_script(command: str) -> Script:
    return Script.from_dict(
        {
            "turns": [
                {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]},
                {"text": "Done."},
            ]
        }
    )


def _run_scripted(
    tmp_path: Path, script: Script, *args: str
) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    """``railings run x`` against a scripted server on 127.0.0.1; what it received."""
    with ScriptedServer(script) as server:
        return run_openai(tmp_path, server.openai_base_url, *args), server.requests


def test_without_a_terminal_or_yes_the_notice_says_why_not(tmp_path: Path) -> None:
    done, requests = _run_scripted(tmp_path, _shell_script("touch RAN"), "--json")
    sent = requests[-1].body["messages"][-1]["content"]
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "RAN").exists()
    assert "no terminal to ask on (the user can allow them with --yes)" in sent
    assert "declined" not in sent  # nobody declined: nobody was asked


def test_a_shell_calls_output_is_shown(tmp_path: Path) -> None:
    script = _shell_script("echo first-line; echo second-line")
    done, _ = _run_scripted(tmp_path, script, "--yes")
    assert done.returncode == 0, done.stderr
    assert "first-line" in done.stdout and "second-line" in done.stdout


def test_chat_commands_are_never_sent_to_the_model(tmp_path: Path) -> None:
    script = Script.from_dict({"turns": [{"text": "Hello."}]})
    with ScriptedServer(script) as server:
        base_url = server.openai_base_url
        done = railings(
            tmp_path,
            "chat",
            "--provider",
            "openai",
            "--base-url",
            base_url,
            stdin="/help\n/nonsense x\nhi\n/exit\n",
            OPENAI_API_KEY="sk-test-0000",
        )
        asked = [r.body["messages"][-1]["content"] for r in server.requests]
    assert done.returncode == 0, done.stderr
    assert asked == ["hi"]
    assert "/exit, /quit  end the chat" in done.stderr
    assert "unknown command /nonsense (/help lists them)" in done.stderr


def test_ctrl_c_at_the_chat_prompt_ends_the_process(tmp_path: Path) -> None:
    # A real terminal: the child gets the pseudo-terminal as its controlling tty, so ^C
    # from the line discipline is a SIGINT, as when a person presses it.
    import pty
    import select

    env = _env(tmp_path)
    pid, master = pty.fork()
    if pid == 0:  # the child: becomes railings chat
        os.chdir(tmp_path)
        os.execve(sys.executable, [sys.executable, "-m", "railings", "chat", "--demo"], env)
    seen = b""
    try:
        while b"you> " not in seen:  # bounded by the suite's timeout
            ready, _, _ = select.select([master], [], [], 60)
            assert ready, seen
            seen += os.read(master, 4096)
        os.write(master, b"\x03")
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            assert ready, f"still running after ^C: {seen!r}"
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal: it has exited
                break
            if not chunk:
                break
            seen += chunk
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(master)
    assert os.waitstatus_to_exitcode(status) == 130, seen
    assert b"railings chat: interrupted" in seen


def test_reading_a_journal_never_creates_one(tmp_path: Path) -> None:
    typo = tmp_path / "typo.sqlite3"
    for command in (["sessions"], ["show", "abc"]):
        done = railings(tmp_path, *command, "--journal", str(typo))
        assert done.returncode == 2 and f"--journal {typo}: no such file" in done.stderr
    assert not typo.exists()
    fresh = railings(tmp_path, "sessions")  # RAILINGS_JOURNAL points at a file not made yet
    assert fresh.returncode == 0 and "no sessions yet" in fresh.stdout
    assert json.loads(railings(tmp_path, "sessions", "--json").stdout) == []
    assert not (tmp_path / "journal.sqlite3").exists()


def test_a_run_never_creates_the_folders_of_a_journal_path(tmp_path: Path) -> None:
    where = tmp_path / "no" / "such" / "dir" / "j.sqlite3"
    done = railings(tmp_path, "run", "x", "--demo", "--journal", str(where))
    assert done.returncode == 2
    assert f"no such directory {where.parent}" in done.stderr
    assert not (tmp_path / "no").exists()
