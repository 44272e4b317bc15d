"""``railings chat`` on a real terminal: the keys a person presses, through a pty.

Each test runs the ``railings`` console script with a pseudo-terminal as its
controlling terminal, so ``^C`` typed there is a SIGINT from the line discipline and
``^D`` is end of file, as when a person presses them, and asserts what the terminal
shows and how the process exits. Every wait reads the terminal until a marker
appears; the long timeout only stops a regression from hanging the suite.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import stat
import struct
import subprocess
import sys
import termios
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import railings
from railings.journal import Journal
from railings.testing import FaultProxy, Script, ScriptedServer

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX terminal")

GUARD = 120.0  # seconds: only stops a regression from hanging the suite
PROMPT = b"you> "
HINT = b"Type /help for commands, Ctrl-D to leave."
DONE = b"done: the model ended its turn"
LEFT, UP = b"\x1b[D", b"\x1b[A"
CTRL_C, CTRL_D = b"\x03", b"\x04"

# Two deltas of 40 characters, then silence for an hour on the first request only:
# the reply is underway, and only Ctrl-C ends it. (80 characters get "alpha" past the
# view's holdback of the key's length.)
TEXT = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike"
STALL_ONCE = "idle:events=3,seconds=3600,times=1"

# Becomes the session leader with the pty (its stdin) as controlling terminal, then
# the command: what a terminal emulator does for the shell it starts.
CONTROLLING_TTY = (
    "import fcntl, os, sys, termios; "
    "fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execve(sys.argv[1], sys.argv[1:], os.environ)"
)


def _railings_script() -> list[str]:
    script = Path(sys.executable).with_name("railings")
    return [str(script)] if script.exists() else [sys.executable, "-m", "railings"]


class Terminal:
    """``railings chat ...`` on a pty; ``expect`` reads until a marker, in order."""

    def __init__(
        self, tmp_path: Path, base_url: str, flags: tuple[str, ...], *, env: dict[str, str]
    ) -> None:
        master, slave = os.openpty()
        # 80 columns, 24 rows: readline's view of the line.
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        command = [
            *_railings_script(),
            "chat",
            *("--provider", "openai", "--base-url", base_url + "/v1"),
            *("--model", "m"),
            *(flags or ("--tools", "none")),
            *("--idle-timeout", "3600", "--content-idle", "3600"),
        ]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CONTROLLING_TTY, *command],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=tmp_path,
            start_new_session=True,
        )
        os.close(slave)
        self.master = master
        self.seen = b""
        self._at = 0  # what expect() has read past

    def send(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def _read(self) -> bytes:
        ready, _, _ = select.select([self.master], [], [], GUARD)
        assert ready, f"nothing more after {GUARD} s: {self.seen!r}"
        try:
            return os.read(self.master, 4096)
        except OSError:  # EIO: every process holding the terminal has closed it
            return b""

    def expect(self, marker: bytes) -> bytes:
        """What the terminal showed up to and including the next ``marker``."""
        while (found := self.seen.find(marker, self._at)) < 0:
            chunk = self._read()
            assert chunk, f"ended before {marker!r}: {self.seen!r}"
            self.seen += chunk
        start, self._at = self._at, found + len(marker)
        return self.seen[start : self._at]

    def finish(self) -> tuple[int, bytes]:
        """The exit code, and what the terminal showed after the last expect()."""
        while chunk := self._read():
            self.seen += chunk
        return self.proc.wait(timeout=GUARD), self.seen[self._at :]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=GUARD)
        os.close(self.master)


Start = Callable[..., Terminal]  # chat(base_url, *flags, **env): a chat on a pty


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NO_COLOR": "1",
        "TERM": "xterm",
        "HOME": str(tmp_path),  # the history under ~/.local/state
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
        "OPENAI_API_KEY": "sk-test-terminal-0000",
        "PYTHONPATH": str(Path(railings.__file__).parents[1]),  # the code under test
    }
    env.update(extra)
    return env


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[Start]:
    started: list[Terminal] = []

    def start(base_url: str, *flags: str, **env: str) -> Terminal:
        terminal = Terminal(tmp_path, base_url, flags, env=_env(tmp_path, **env))
        started.append(terminal)
        return terminal

    yield start
    for terminal in started:
        terminal.close()


def _asked(server: ScriptedServer) -> list[str]:
    """The last user message of each request the model got."""
    return [r.body["messages"][-1]["content"] for r in server.requests]


def _history(tmp_path: Path) -> Path:
    return tmp_path / ".local" / "state" / "railings" / "chat_history"


def test_left_arrow_edits_the_line_and_the_hint_shows_first(tmp_path: Path, chat: Start) -> None:
    script = Script.from_dict({"turns": [{"text": "an answer"}]})
    with ScriptedServer(script) as server:
        term = chat(server.url, RAILINGS_CHAT_HISTORY="")
        assert HINT in term.expect(PROMPT)
        term.send(b"helo")
        term.expect(b"helo")
        term.send(LEFT + LEFT + b"l\r")  # the cursor back before "lo": "hello"
        term.expect(DONE)
        term.expect(PROMPT)
        term.send(CTRL_D)
        code, _ = term.finish()
        assert _asked(server) == ["hello"]
    assert code == 0
    assert b"^[[D" not in term.seen and b"\x1b[D" not in term.seen  # keys act, not echo
    assert not (tmp_path / ".local").exists()  # RAILINGS_CHAT_HISTORY= keeps none


def test_up_recalls_a_prompt_from_an_earlier_chat(tmp_path: Path, chat: Start) -> None:
    history = _history(tmp_path)
    history.parent.mkdir(parents=True, mode=0o700)
    history.write_text("".join(f"old {n}\n" for n in range(1000)))  # already full
    history.chmod(0o600)
    script = Script.from_dict({"turns": [{"text": "answered"}]})
    with ScriptedServer(script) as server:
        first = chat(server.url)
        first.expect(PROMPT)
        first.send(b"/help\r")  # chat's own command: never kept
        first.expect(PROMPT)
        first.send(b"the first question\r")
        first.expect(DONE)
        first.expect(PROMPT)
        first.send(CTRL_D)
        assert first.finish()[0] == 0

        lines = history.read_text().splitlines()
        assert len(lines) == 1000 and lines[-1] == "the first question"
        assert lines[0] == "old 1" and "/help" not in lines
        assert stat.S_IMODE(history.stat().st_mode) == 0o600

        second = chat(server.url)
        second.expect(PROMPT)
        second.send(UP)
        second.expect(b"the first question")  # readline drew the recalled line
        second.send(b"\r")
        second.expect(DONE)
        second.expect(PROMPT)
        second.send(CTRL_D)
        assert second.finish()[0] == 0
        assert _asked(server) == ["the first question", "the first question"]
    assert b"^[[A" not in second.seen


def test_history_is_created_private(tmp_path: Path, chat: Start) -> None:
    script = Script.from_dict({"turns": [{"text": "answered"}]})
    with ScriptedServer(script) as server:
        term = chat(server.url)
        term.expect(PROMPT)
        term.send(b"a question\r")
        term.expect(DONE)
        term.expect(PROMPT)
        term.send(CTRL_D)
        assert term.finish()[0] == 0
    history = _history(tmp_path)
    assert history.read_text() == "a question\n"
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    for directory in (history.parent, history.parent.parent):  # ~/.local/state/railings
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_ctrl_c_during_a_reply_cancels_it_and_the_chat_goes_on(tmp_path: Path, chat: Start) -> None:
    script = Script.from_dict({"chunk_size": 40, "turns": [{"text": TEXT}]})
    with ScriptedServer(script) as server, FaultProxy(server.url, STALL_ONCE) as proxy:
        term = chat(proxy.url)
        term.expect(PROMPT)
        term.send(b"the task\r")
        term.expect(b"alpha")  # shown once journaled: the reply is underway, then stalls
        term.send(CTRL_C)
        shown = term.expect(b"railings chat: reply cancelled")
        assert shown.endswith(b"\r\nrailings chat: reply cancelled")  # on a fresh line
        term.expect(PROMPT)
        term.send(b"again\r")  # the second request is not stalled
        term.expect(DONE)
        term.expect(PROMPT)
        term.send(CTRL_D)
        code, after = term.finish()
        second = server.requests[-1].body["messages"]
    assert code == 0, term.seen
    assert after.startswith(b"\r\n")  # Ctrl-D: a newline before anything else
    assert b"Traceback" not in term.seen
    # The cancelled exchange is not sent again: the model never answered it.
    assert [m["content"] for m in second if m["role"] == "user"] == ["again"]
    with Journal(tmp_path / "journal.sqlite3") as journal:
        (session,) = journal.sessions()
        ends = [e.data for e in journal.entries(session.id) if e.kind == "run_end"]
    assert ends == [{"status": "interrupted", "stop": "cancelled"}, {"status": "completed"}]
    assert session.status == "closed"


def test_ctrl_c_at_an_approval_question_declines_and_cancels_the_reply(
    tmp_path: Path, chat: Start
) -> None:
    call = {"name": "shell", "arguments": {"command": "touch ran"}}
    script = Script.from_dict({"turns": [{"text": "Let me.", "tool_calls": [call]}]})
    with ScriptedServer(script) as server:
        term = chat(server.url, "--tools", "shell")
        term.expect(PROMPT)
        term.send(b"touch it\r")
        term.expect(b"[y/N]")
        term.send(CTRL_C)
        shown = term.expect(b"railings chat: reply cancelled")
        assert shown.endswith(b"\r\nrailings chat: reply cancelled")
        term.expect(PROMPT)
        term.send(CTRL_D)
        code, _ = term.finish()
        requests = len(server.requests)
    assert code == 0, term.seen
    assert requests == 1  # no turn after the declined call
    assert not (tmp_path / "ran").exists()
    with Journal(tmp_path / "journal.sqlite3") as journal:
        (session,) = journal.sessions()
        ends = [e.data for e in journal.entries(session.id) if e.kind == "run_end"]
    assert ends == [{"status": "interrupted", "stop": "cancelled"}]


def test_ctrl_d_at_the_prompt_leaves_with_a_newline(tmp_path: Path, chat: Start) -> None:
    with ScriptedServer(Script.from_dict({"turns": [{"text": "unused"}]})) as server:
        term = chat(server.url)
        term.expect(PROMPT)
        term.send(CTRL_D)
        code, after = term.finish()
    assert code == 0
    assert after.startswith(b"\r\n") and b"you> EXIT" not in term.seen


def test_ctrl_c_at_an_empty_prompt_leaves_with_130(tmp_path: Path, chat: Start) -> None:
    with ScriptedServer(Script.from_dict({"turns": [{"text": "unused"}]})) as server:
        term = chat(server.url)
        term.expect(PROMPT)
        term.send(CTRL_C)
        code, after = term.finish()
    assert code == 130
    assert after.startswith(b"\r\n") and b"railings chat: interrupted" in after
    assert b"Traceback" not in term.seen


def test_ctrl_c_on_a_line_with_text_drops_the_line(tmp_path: Path, chat: Start) -> None:
    with ScriptedServer(Script.from_dict({"turns": [{"text": "unused"}]})) as server:
        term = chat(server.url)
        term.expect(PROMPT)
        term.send(b"not this")
        term.expect(b"not this")
        term.send(CTRL_C)  # right after the keys were drawn: readline still sees it
        assert term.expect(PROMPT).startswith(b"\r\n")  # a new prompt on a new line
        term.send(CTRL_D)
        code, _ = term.finish()
        asked = _asked(server)
    assert code == 0, term.seen
    assert asked == []


def test_sigterm_at_the_prompt_still_ends_the_chat_with_143(tmp_path: Path, chat: Start) -> None:
    with ScriptedServer(Script.from_dict({"turns": [{"text": "unused"}]})) as server:
        term = chat(server.url)
        term.expect(PROMPT)
        term.proc.send_signal(signal.SIGTERM)
        code, after = term.finish()
    assert code == 143, term.seen
    assert b"railings chat: terminated" in after and b"Traceback" not in term.seen


def test_chat_help_describes_chat_itself(tmp_path: Path) -> None:
    done = subprocess.run(
        [*_railings_script(), "chat", "--help"],
        capture_output=True,
        text=True,
        timeout=GUARD,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    assert done.returncode == 0
    epilog = done.stdout[done.stdout.index("keys (on a terminal):") :]
    assert all(len(line) < 80 for line in epilog.splitlines())
    for expected in ("Ctrl-C", "Ctrl-D", "chat_history", "exit codes:", "130"):
        assert expected in epilog
    assert "docs/" not in done.stdout and ".md" not in done.stdout
