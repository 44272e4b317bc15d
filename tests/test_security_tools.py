"""Security of the built-in tools against a hostile model: each test does what the attacker did.

* the shell never sees the user's keys (a scripted model runs ``printenv`` under ``--yes``);
* a racing process that flips a file to a link out and back never makes a file tool act
  outside the working directory (thousands of tries, bounded in count);
* what a command started -- in the background, or in a session of its own with ``setsid`` --
  does not outlive the command, and "timed out" is said only when it did;
* a FIFO never blocks ``write_file``, and a stuck tool never blocks the agent's shutdown.

The tests that would hang on a broken build run their attack in a child process with a
generous timeout, so a regression fails the test instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import railings
from _tools import call, tools_in
from railings.dispatch import Tool, ToolFailure, builtin_tools
from railings.testing import Script, ScriptedServer

HANG_GUARD = 60  # seconds: only stops a regression from hanging the suite

OPENAI_KEY = "sk-proj-Vq7Lm2Xw9Rt4Kp8Zs3Hn6Jd1"
ANTHROPIC_KEY = "sk-ant-api03-Bc5Nf8Gh2Jk4Lm7Pq9Rs"
SERVICE_TOKEN = "tok-Wy3Ux6Ev9Aa2Cc5Ee8"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (tmp_path / "outside.txt").write_text("OUTSIDE-SECRET")
    return workdir


# -- 1. the shell gets a clean environment ----------------------------------------------------


def _railings(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(Path(railings.__file__).parents[1]),  # the code under test
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
        "OPENAI_API_KEY": OPENAI_KEY,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "MY_SERVICE_TOKEN": SERVICE_TOKEN,
        "DEPLOY_PASSWORD": "hunter2hunter2",
        "VISIBLE_SETTING": "plain-value",
    }
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


PRINTENV = (
    "printenv OPENAI_API_KEY; printenv ANTHROPIC_API_KEY | rev; printenv MY_SERVICE_TOKEN | rev; "
    "printenv DEPLOY_PASSWORD; printenv VISIBLE_SETTING; printenv PATH >/dev/null && echo path-ok"
)


def _printenv_run(tmp_path: Path, *extra: str) -> tuple[str, str]:
    """A scripted model runs PRINTENV under --yes; (the tool result, every output) come back."""
    script = {
        "turns": [
            {
                "text": "Looking.",
                "tool_calls": [{"name": "shell", "arguments": {"command": PRINTENV}}],
            },
            {"text": "Done."},
        ]
    }
    with ScriptedServer(Script.from_dict(script)) as server:
        done = _railings(
            tmp_path,
            "run",
            "look around",
            "--provider",
            "openai",
            "--base-url",
            server.url + "/v1",
            "--yes",
            "--json",
            "--workdir",
            str(tmp_path),
            *extra,
        )
    assert done.returncode == 0, done.stderr
    session = json.loads(done.stdout)["session_id"]
    shown = _railings(tmp_path, "show", session, "--json")
    assert shown.returncode == 0, shown.stderr
    results = [e["data"] for e in json.loads(shown.stdout)["entries"] if e["kind"] == "tool_result"]
    assert len(results) == 1
    journal = b"".join(p.read_bytes() for p in tmp_path.glob("journal.sqlite3*")).decode("latin-1")
    return results[0]["content"], done.stdout + done.stderr + shown.stdout + journal


def test_the_shell_never_sees_a_key_or_a_secret_looking_variable(tmp_path: Path) -> None:
    result, everything = _printenv_run(tmp_path)
    assert "path-ok" in result  # the command did run, with a PATH
    for secret in (OPENAI_KEY, ANTHROPIC_KEY, SERVICE_TOKEN, "hunter2hunter2", "plain-value"):
        assert secret not in result and secret[::-1] not in result, secret
        assert secret[::-1] not in everything, secret  # not even reversed, anywhere


def test_a_variable_the_user_names_is_passed_and_only_that_one(tmp_path: Path) -> None:
    result, _ = _printenv_run(tmp_path, "--pass-env", "VISIBLE_SETTING,MY_SERVICE_TOKEN")
    assert "plain-value" in result
    assert SERVICE_TOKEN[::-1] in result  # named explicitly: the user's choice
    assert OPENAI_KEY not in result and ANTHROPIC_KEY[::-1] not in result
    assert "hunter2hunter2" not in result


def test_the_allow_list_and_the_names_that_say_secret() -> None:
    from railings.dispatch.shell import command_environment

    environ = {
        "PATH": "/bin",
        "HOME": "/h",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TERM": "xterm",
        "TMPDIR": "/t",
        "USER": "u",
        "OPENAI_API_KEY": "k",
        "GITHUB_TOKEN": "t",
        "AWS_SECRET_ACCESS_KEY": "s",
        "PGPASSWORD": "p",
        "GOOGLE_APPLICATION_CREDENTIALS": "c",
        "LC_API_KEY": "sneaky",  # allow-listed by its prefix, refused by its name
        "EDITOR": "vi",
    }
    env = command_environment(environ=environ)
    assert env == {
        "PATH": "/bin",
        "HOME": "/h",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TERM": "xterm",
        "TMPDIR": "/t",
        "USER": "u",
    }
    named = command_environment(["EDITOR", "GITHUB_TOKEN", "AWS_*", "MISSING"], environ=environ)
    assert named["EDITOR"] == "vi" and named["GITHUB_TOKEN"] == "t"
    assert named["AWS_SECRET_ACCESS_KEY"] == "s" and "MISSING" not in named
    assert "OPENAI_API_KEY" not in named and "PGPASSWORD" not in named
    assert command_environment(environ={})["PATH"]  # a command always has a PATH


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_the_process_holding_the_keys_is_closed_to_its_commands() -> None:
    # A command of the same user could read the keys from /proc/<railings pid>/environ; a
    # non-dumpable process's /proc files belong to root. (Root itself reads them anyway.)
    done = _in_child(
        """
        import ctypes
        from railings.dispatch.shell import protect_process
        libc = ctypes.CDLL(None)
        before = libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
        print(before, protect_process(), libc.prctl(3, 0, 0, 0, 0))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "True", "0"]


# -- 2. a racing process never gets a file tool outside -------------------------------------------

RACER = textwrap.dedent(
    """
    import os, sys
    root, outside = sys.argv[1], sys.argv[2]
    target = os.path.join(root, "flip")
    link, regular = os.path.join(root, ".link"), os.path.join(root, ".regular")
    print("racing", flush=True)
    while True:
        try:
            os.symlink(outside, link)
        except FileExistsError:
            pass
        os.replace(link, target)
        with open(regular, "w") as fh:
            fh.write("inside")
        os.replace(regular, target)
    """
)
TRIES = 3000


@pytest.fixture
def racer(root: Path) -> Iterator[subprocess.Popen[str]]:
    (root / "flip").write_text("inside")
    process = subprocess.Popen(
        [sys.executable, "-c", RACER, str(root), str(root.parent / "outside.txt")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "racing\n"
        yield process
    finally:
        process.kill()
        process.wait(timeout=HANG_GUARD)
        if process.stdout is not None:
            process.stdout.close()


def _attempt(tool: Tool, **arguments: Any) -> str:
    try:
        return str(tool.function(**arguments))
    except ToolFailure as exc:
        return f"failure: {exc}"


def test_a_racing_link_never_lets_read_file_out(root: Path, racer: subprocess.Popen[str]) -> None:
    read = tools_in(root)["read_file"]
    seen = [_attempt(read, path="flip") for _ in range(TRIES)]
    assert racer.poll() is None  # it raced the whole time
    assert not [s for s in seen if "OUTSIDE" in s], "read_file returned the outside file"
    assert seen.count("inside") > 0  # not vacuous: the inside file was read, often
    assert any("refused" in s for s in seen)  # and the link out was met, and refused


def test_a_racing_link_never_lets_write_file_out(root: Path, racer: subprocess.Popen[str]) -> None:
    write = tools_in(root)["write_file"]
    seen = [_attempt(write, path="flip", content="pwned") for _ in range(TRIES)]
    seen += [_attempt(write, path="flip", content="more", append=True) for _ in range(TRIES // 3)]
    assert racer.poll() is None
    assert (root.parent / "outside.txt").read_text() == "OUTSIDE-SECRET"
    assert any(s.startswith("wrote") for s in seen)  # not vacuous: writes did land inside


def test_a_racing_directory_link_never_lets_list_dir_or_a_new_file_out(root: Path) -> None:
    outside_dir = root.parent / "outside-dir"
    outside_dir.mkdir()
    (outside_dir / "hidden.txt").write_text("x")
    (root / "sub").mkdir()
    script = textwrap.dedent(
        """
        import os, sys
        root, outside = sys.argv[1], sys.argv[2]
        d, moved = os.path.join(root, "d"), os.path.join(root, ".d")
        os.mkdir(moved)
        print("racing", flush=True)
        while True:
            os.rename(moved, d)  # d is a directory inside
            os.rename(d, moved)
            os.symlink(outside, d)  # d is a link out
            os.unlink(d)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(root), str(outside_dir)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "racing\n"
        named = tools_in(root)
        listed = [_attempt(named["list_dir"], path="d") for _ in range(TRIES)]
        wrote = [_attempt(named["write_file"], path="d/new.txt", content="x") for _ in range(TRIES)]
    finally:
        process.kill()
        process.wait(timeout=HANG_GUARD)
        if process.stdout is not None:
            process.stdout.close()
    assert not [s for s in listed if "hidden.txt" in s]
    assert sorted(p.name for p in outside_dir.iterdir()) == ["hidden.txt"]
    assert any(s.startswith("wrote") for s in wrote) or any("empty" in s for s in listed)


def test_a_hard_link_is_not_written_through(root: Path) -> None:
    os.link(root.parent / "outside.txt", root / "hard")
    result = call(tools_in(root)["write_file"], path="hard", content="pwned")
    assert not result.ok and "hard link" in result.content
    assert (root.parent / "outside.txt").read_text() == "OUTSIDE-SECRET"


def test_a_write_replaces_the_file_and_keeps_its_mode(root: Path) -> None:
    script = root / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    named = tools_in(root)
    assert call(named["write_file"], path="run.sh", content="new").ok
    assert call(named["write_file"], path="run.sh", content="+", append=True).ok
    assert script.read_text() == "new+" and (script.stat().st_mode & 0o777) == 0o750
    assert sorted(p.name for p in root.iterdir()) == ["run.sh"]  # no temporary file left


# -- 3. nothing a command started outlives it --------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _gone(pid: int) -> bool:
    for _ in range(500):  # a hang guard in count, not a speed assertion
        if not _alive(pid):
            return True
        time.sleep(0.01)
    return False


def _shell_in_child(root: Path, command: str, timeout: float) -> tuple[bool, str]:
    """Run the shell tool in a child process: a broken build hangs there, not here."""
    code = (
        "import asyncio, json, sys\n"
        "from railings.dispatch import builtin_tools, execute\n"
        "shell = next(t for t in builtin_tools(sys.argv[1], timeout=float(sys.argv[3]))"
        " if t.name == 'shell')\n"
        "result = asyncio.run(execute(shell, {'command': sys.argv[2]}))\n"
        "print(json.dumps([result.ok, result.content]))\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(root), command, str(timeout)],
            capture_output=True,
            text=True,
            timeout=HANG_GUARD,
        )
    except subprocess.TimeoutExpired:
        return False, "the shell tool hung"
    assert done.returncode == 0, done.stderr
    ok, content = json.loads(done.stdout)
    return bool(ok), str(content)


def _reap(pid: int) -> None:
    if _alive(pid):
        os.kill(pid, 9)  # our own test's leftover from a broken build


WAIT = " while [ ! -s pid ]; do sleep 0.01; done; echo started"  # the child is running


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(
    "command",
    [
        "sh -c 'echo $$ > pid; exec sleep 3131' &" + WAIT,
        "setsid sh -c 'echo $$ > pid; exec sleep 3132' &" + WAIT,
        "setsid sh -c 'echo $$ > pid; exec sleep 3133' >/dev/null 2>&1 </dev/null &" + WAIT,
        # A double fork into a new session: the sleep's parent exits at once.
        """(setsid sh -c 'sh -c "echo \\$\\$ > pid; exec sleep 3134" &' &);""" + WAIT,
    ],
    ids=["background", "setsid", "setsid-quiet", "double-fork-setsid"],
)
def test_what_a_command_leaves_running_is_killed_and_it_did_not_time_out(
    root: Path, command: str
) -> None:
    ok, content = _shell_in_child(root, command, 20)
    pid = int((root / "pid").read_text())
    try:
        assert ok, content
        assert content.startswith("exit code: 0\nstdout:\nstarted\n"), content
        assert "timed out" not in content
        assert _gone(pid), "the process the command left running survived it"
    finally:
        _reap(pid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_timeout_kills_a_setsid_child_too(root: Path) -> None:
    ok, content = _shell_in_child(
        root, "setsid sh -c 'echo $$ > pid; exec sleep 3135' & sleep 300", 1
    )
    pid = int((root / "pid").read_text())
    try:
        assert not ok and "timed out after 1 s" in content
        assert _gone(pid)
    finally:
        _reap(pid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_child_that_escapes_by_killing_the_supervisor_cannot_keep_the_call_open(
    root: Path,
) -> None:
    # The documented escape: the command kills its supervisor (same user), so its child is
    # orphaned to init and keeps the output pipes open. The call still ends, a short grace
    # after the supervisor, and says it stopped waiting.
    ok, content = _shell_in_child(
        root, "sh -c 'echo $$ > pid; exec sleep 3136' &" + WAIT + "; kill -9 $PPID", 20
    )
    pid = int((root / "pid").read_text())
    try:
        assert ok, content
        assert "output after the command ended was not waited for" in content
        assert "timed out" not in content
    finally:
        _reap(pid)


# -- 4. a FIFO never blocks, and a stuck tool never blocks shutdown ------------------------------


def _in_child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )


def test_write_file_on_a_fifo_is_refused_without_blocking(root: Path) -> None:
    os.mkfifo(root / "pipe")
    done = _in_child(
        """
        import asyncio, sys
        from railings.dispatch import builtin_tools, execute
        named = {t.name: t for t in builtin_tools(sys.argv[1])}
        for append in (False, True):
            arguments = {"path": "pipe", "content": "x", "append": append}
            result = asyncio.run(execute(named["write_file"], arguments))
            print(result.ok, result.content)
        """,
        str(root),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("False refused:") for line in lines), lines
    assert all("not a regular file" in line for line in lines)


def test_a_stuck_sync_tool_times_out_and_never_blocks_shutdown() -> None:
    done = _in_child(
        """
        import asyncio, threading
        from railings.dispatch import execute, tool
        never = threading.Event()

        @tool(timeout=0.5)
        def stuck() -> str:
            never.wait()  # a tool that never returns: a blocked read, a lost lock
            return "unreachable"

        result = asyncio.run(execute(stuck, {}))
        print(result.ok, result.content)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("False the tool 'stuck' did not finish within 0.5 s"), done.stdout


def test_every_tool_has_a_time_limit() -> None:
    from railings.dispatch import tool
    from railings.errors import ToolDefinitionError

    @tool
    def quick() -> str:
        return "ok"

    assert quick.timeout > 0

    def slow() -> None:
        return None

    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ToolDefinitionError, match="timeout must be a positive number"):
            tool(timeout=bad)(slow)
    shell = next(t for t in builtin_tools(".") if t.name == "shell")
    from railings.dispatch.builtins import MAX_TIMEOUT

    assert shell.timeout > MAX_TIMEOUT  # the shell's own limit ends it first, with its output
