"""A session stopped by a signal ends ``interrupted``, never ``running`` forever.

Each test runs the real command as a subprocess against the scripted model behind a
fault proxy that stalls the stream after its first events (for an hour: only the
signal can end the turn), waits until the streamed text is printed (the view prints
a delta only after the journal committed it, so the turn is underway), then signals.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import railings
from railings.agent import Agent, StreamDelta
from railings.dispatch import ToolRegistry
from railings.journal import Journal
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.transport import AsyncProviderClient, ClientConfig

# Two deltas of 40 characters, then silence for an hour. The view holds back the last
# characters of a stream (up to the longest registered secret, the key) until they
# cannot be half of it: 80 characters get "alpha" past that.
TEXT = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike"
STALL = "idle:events=3,seconds=3600"
HANG_GUARD = 60  # seconds: only stops a regression from hanging the suite
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


@pytest.fixture
def stalling() -> Iterator[str]:
    """The base URL of a scripted model whose stream stalls after its first text."""
    script = Script.from_dict({"chunk_size": 40, "turns": [{"text": TEXT}]})
    with ScriptedServer(script) as server, FaultProxy(server.url, STALL) as proxy:
        yield proxy.url


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NO_COLOR": "1",
        "HOME": str(tmp_path),
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
        "OPENAI_API_KEY": "sk-test-signals-0000",
        "PYTHONPATH": str(Path(railings.__file__).parents[1]),  # the code under test
    }


def _start(tmp_path: Path, command: str, base_url: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "railings",
            command,
            *(["the task"] if command == "run" else []),
            "--provider",
            "openai",
            "--base-url",
            base_url + "/v1",
            "--model",
            "m",
            "--tools",
            "none",
            "--idle-timeout",
            "3600",
            "--content-idle",
            "3600",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
        cwd=tmp_path,
    )


def _read_until(stream: int, marker: bytes) -> bytes:
    seen = b""
    while marker not in seen:  # bounded by the stall: the text arrives, then nothing more
        chunk = os.read(stream, 4096)
        assert chunk, f"ended before {marker!r}: {seen!r}"
        seen += chunk
    return seen


def _sessions(tmp_path: Path) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-m", "railings", "sessions", "--json"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    sessions: list[dict[str, object]] = json.loads(done.stdout)
    return sessions


@pytest.mark.parametrize("command", ["run", "chat"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_turn_ends_the_session_interrupted(
    tmp_path: Path, stalling: str, command: str, signum: signal.Signals
) -> None:
    proc = _start(tmp_path, command, stalling)
    assert proc.stdin is not None and proc.stdout is not None
    if command == "chat":
        proc.stdin.write(b"the task\n")  # and stdin stays open: chat would wait for more
        proc.stdin.flush()
    _read_until(proc.stdout.fileno(), b"alpha")
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == EXIT[signum], err
    assert b"Traceback" not in err
    assert err.decode().strip().splitlines()[-1] == (
        f"railings {command}: interrupted"
        if signum == signal.SIGINT
        else f"railings {command}: terminated"
    )
    (session,) = _sessions(tmp_path)
    assert session["status"] == "interrupted" and session["ended_at"] is not None
    with Journal(tmp_path / "journal.sqlite3") as journal:
        kinds = [e.kind for e in journal.entries(str(session["id"]))]
    assert kinds[-2:] == ["run_end", "end"]


def test_ctrl_c_at_the_chat_prompt_ends_the_session_interrupted(tmp_path: Path) -> None:
    script = Script.from_dict({"turns": [{"text": "the first answer, whole"}]})
    with ScriptedServer(script) as server:
        proc = _start(tmp_path, "chat", server.url)
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(b"the task\n")  # answered; then chat waits for the next line
        proc.stdin.flush()
        # How the turn ended is a status line, on stderr.
        _read_until(proc.stderr.fileno(), b"done: the model ended its turn")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 130, err
    (session,) = _sessions(tmp_path)
    assert session["status"] == "interrupted" and session["ended_at"] is not None


def test_a_cancelled_arun_ends_its_session_interrupted(tmp_path: Path, stalling: str) -> None:
    config = ClientConfig(
        provider="openai", model="m", base_url=stalling + "/v1", api_key="sk-test-cancel-0000"
    )

    async def main() -> None:
        streamed = asyncio.Event()

        def on_event(event: object) -> None:
            if isinstance(event, StreamDelta):
                streamed.set()

        async with AsyncProviderClient(config) as client:
            agent = Agent(client, ToolRegistry(), journal=journal, on_event=on_event)
            running = asyncio.create_task(agent.arun("the task"))
            await streamed.wait()
            running.cancel()
            with pytest.raises(asyncio.CancelledError):
                await running

    with Journal(tmp_path / "journal.sqlite3") as journal:
        asyncio.run(asyncio.wait_for(main(), HANG_GUARD))
        (session,) = journal.sessions()
        entries = journal.entries(session.id)
    assert session.status == "interrupted" and session.ended_at is not None
    assert [e.kind for e in entries][-2:] == ["run_end", "end"]
    assert entries[-2].data["status"] == "interrupted"


def _gateway_request(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    ).encode()
    conn = socket.create_connection((host, int(port)), timeout=HANG_GUARD)
    conn.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\n"
        b"content-type: application/json\r\nauthorization: Bearer sk-test-gw-0000\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return conn


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_gateway_stopped_mid_stream_never_leaves_its_session_running(
    tmp_path: Path, stalling: str, signum: signal.Signals
) -> None:
    pytest.importorskip("uvicorn")
    journal = tmp_path / "gateway.sqlite3"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "railings", "gateway", "--upstream", stalling),
            *("--port", "0", "--journal", str(journal)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    assert proc.stderr is not None
    listening = _read_until(proc.stderr.fileno(), b"\n").decode()
    url = listening.split("listening on ", 1)[1].split()[0]
    with _gateway_request(url) as conn:
        seen = b""
        while b"alpha" not in seen:  # the stream is being relayed
            chunk = conn.recv(4096)
            assert chunk, seen
            seen += chunk
        proc.send_signal(signum)
        proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 0  # how a gateway is meant to stop
    with Journal(journal) as book:
        (session,) = book.sessions()
        entries = book.entries(session.id)
    assert session.status == "interrupted" and session.ended_at is not None  # a turn was cut
    assert entries[-1].kind == "end" and entries[-1].data["turns"] == 1
    (row,) = [e for e in entries if e.kind == "gateway_turn"]  # the cut turn's row
    assert row.data["outcome"] == "interrupted"
