"""Security of the user's secrets against a hostile model or endpoint: each test does what the
attacker did.

* a redirect to another origin never carries the key, a configured header or the conversation
  (a real redirecting server on 127.0.0.1 and a real second server that records);
* a key the model streams in 5-character pieces is never stored or printed whole: not by the
  journal, ``show``, ``show --json``, ``run --json`` nor the live view;
* a password in the base URL is never printed or journaled;
* a damaged journal is one line and exit 2; a bad row is shown as damaged, the rest readable.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import railings
from railings.errors import ConfigurationError, RailingsError
from railings.journal import Journal
from railings.messages import User
from railings.redact import MARKER, redact, register_secret
from railings.testing import Script, ScriptedServer
from railings.testing.http import encode_chunk, read_request, render_head
from railings.testing.service import Service
from railings.transport import AsyncProviderClient, ClientConfig, RetryPolicy

KEY = "sk-proj-Split5Ab7Cd9Ef1Gh3Jk5"
CUSTOM = "custom-header-secret-Qw8Er6"

# -- 5. a redirect never carries a secret elsewhere --------------------------------------------


class Recorder(Service):
    """Records every request that reaches it, and answers a short finished OpenAI stream."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[dict[str, str], bytes]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        self.requests.append((request.headers.as_dict(), request.body))
        chunk = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}'
        head = [("content-type", "text/event-stream"), ("transfer-encoding", "chunked")]
        writer.write(render_head(200, [*head, ("connection", "close")]))
        writer.write(encode_chunk(chunk + b"\n\ndata: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()


class Redirector(Service):
    """Answers every request with ``status`` and ``Location: {target}{path}``."""

    def __init__(self, target: str, status: int) -> None:
        super().__init__()
        self.target, self.status, self.hits = target, status, 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        self.hits += 1
        headers = [("location", self.target + request.path), ("content-length", "0")]
        writer.write(render_head(self.status, [*headers, ("connection", "close")]))
        await writer.drain()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with Recorder() as server:
        yield server


@pytest.mark.parametrize("status", [307, 308, 302])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_redirect_to_another_origin_carries_nothing(
    recorder: Recorder, provider: str, status: int
) -> None:
    with Redirector(recorder.url, status) as redirector:
        config = ClientConfig(
            provider,  # type: ignore[arg-type]
            "m",
            base_url=redirector.url + ("/v1" if provider == "openai" else ""),
            api_key=KEY,
            headers={"api-key": CUSTOM, "x-tenant-token": CUSTOM + "-2"},
            http2=False,
            retry=RetryPolicy(attempts=1),
        )

        async def main() -> RailingsError | None:
            async with AsyncProviderClient(config) as client:
                try:
                    await client.stream_turn([User("the whole conversation")]).result()
                except RailingsError as exc:
                    return exc
            return None

        error = asyncio.run(main())
        assert redirector.hits == 1  # the request did go to the configured origin
    assert recorder.requests == []  # and nothing at all went on: no key, header nor body
    assert isinstance(error, ConfigurationError), error
    assert f"HTTP {status}" in str(error) and "redirect" in str(error)
    assert recorder.url in str(error)  # the user learns where it pointed
    assert KEY not in str(error)


# -- 6. a key streamed in pieces is never stored or printed whole --------------------------------

TEXT = f"Here is what I found in the environment: {KEY} -- use it well."


def _railings(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
        "OPENAI_API_KEY": KEY,
        "PYTHONPATH": str(Path(railings.__file__).parents[1]),  # the code under test
    }
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


def _outputs(tmp_path: Path, *run_args: str, text: str = TEXT) -> dict[str, str]:
    script = {"chunk_size": 5, "turns": [{"text": text}]}
    with ScriptedServer(Script.from_dict(script)) as server:
        done = _railings(
            tmp_path,
            "run",
            "tell me",
            "--provider",
            "openai",
            "--base-url",
            server.url + "/v1",
            "--tools",
            "none",
            *run_args,
        )
    assert done.returncode == 0, done.stderr
    outputs = {"run stdout": done.stdout, "run stderr": done.stderr}
    listed = _railings(tmp_path, "sessions", "--json")
    (session,) = json.loads(listed.stdout)
    for args in ((), ("--json",)):
        shown = _railings(tmp_path, "show", session["id"], *args)
        assert shown.returncode == 0, shown.stderr
        outputs[f"show {args}"] = shown.stdout + shown.stderr
    for file in sorted(tmp_path.glob("journal.sqlite3*")):
        outputs[file.name] = file.read_bytes().decode("latin-1")
    return outputs


@pytest.mark.parametrize("json_flag", [False, True])
def test_a_key_streamed_in_pieces_is_never_stored_or_printed(
    tmp_path: Path, json_flag: bool
) -> None:
    outputs = _outputs(tmp_path, *(["--json"] if json_flag else []))
    leaks = [name for name, text in outputs.items() if KEY[3:] in text]
    assert not leaks, f"the key leaked into: {leaks}"
    # Not vacuous: the text around the key was printed, with the marker where the key was.
    live = outputs["run stderr" if json_flag else "run stdout"]
    assert f"environment: {MARKER} -- use it well." in live
    assert f"environment: {MARKER} -- use it well." in outputs["show ()"]
    if json_flag:
        assert f"environment: {MARKER} -- use it well." in outputs["run stdout"]


def test_the_journal_still_holds_everything_that_was_printed(tmp_path: Path) -> None:
    text = "plain words, then " + KEY[:10] + " which is only half a key, then the end."
    outputs = _outputs(tmp_path, text=text)
    assert text in outputs["run stdout"].replace("\n", "")
    assert text in outputs["show ()"].replace("\n", "")


def test_show_redacts_a_key_an_older_journal_stored_in_pieces(tmp_path: Path) -> None:
    # What the journal held before the hold-back: each row redacted alone, the key in pieces.
    with Journal(tmp_path / "journal.sqlite3") as journal:
        session = journal.start_session("tell me", provider="openai", model="m")
        journal.write(session, "turn_start", {}, turn=1)
        for i in range(0, len(TEXT), 5):
            journal.write(session, "delta", {"kind": "text", "text": TEXT[i : i + 5]}, turn=1)
        journal.end_session(session, "completed")
        stored = "".join(e.data.get("text", "") for e in journal.entries(session))
    assert KEY in stored  # the pieces join into the key: what show used to print
    for args in ((), ("--json",)):
        shown = _railings(tmp_path, "show", session, *args)
        assert shown.returncode == 0, shown.stderr
        assert KEY[3:] not in shown.stdout
        joined = shown.stdout
        if args:
            rows = json.loads(shown.stdout)["entries"]
            joined = "".join(e["data"].get("text", "") for e in rows if e["kind"] == "delta")
        assert f"environment: {MARKER} -- use it well." in joined.replace("\n", "")


SECRET = "sk-holdback-0123456789"


@pytest.fixture
def secret() -> str:
    register_secret(SECRET)
    return SECRET


@pytest.mark.parametrize(
    "text",
    [
        f"before {SECRET} after",
        f"{SECRET}{SECRET}",
        f"{SECRET[:-1]} not quite, then {SECRET}",
        "nothing secret at all, long enough to release some of it",
        SECRET,
    ],
)
def test_holdback_never_releases_a_split_secret_and_loses_nothing(secret: str, text: str) -> None:
    from railings.redact import Holdback

    for cuts in itertools.combinations(range(1, len(text)), 2):  # every three-piece split
        pieces = [text[: cuts[0]], text[cuts[0] : cuts[1]], text[cuts[1] :]]
        held = Holdback()
        released = [held.feed(p) for p in pieces] + [held.flush()]
        assert all(secret not in r for r in released)
        assert "".join(released) == redact(text), (pieces, released)
        assert all(len(held_back) < len(secret) for held_back in [held.pending])


def test_redact_pieces_keeps_the_rows_and_redacts_the_joined_text(secret: str) -> None:
    from railings.redact import redact_pieces

    pieces = [f"key: {secret[:5]}", secret[5:12], f"{secret[12:]} end"]
    out = redact_pieces(pieces)
    assert len(out) == 3 and "".join(out) == f"key: {MARKER} end"
    assert redact_pieces(["a", "b"]) == ["a", "b"]


# -- 7. a password in the base URL is never printed or journaled ----------------------------------


def test_base_url_userinfo_is_never_printed_or_journaled(tmp_path: Path) -> None:
    token = "urlpass-Hh4Jj6Kk8"
    with ScriptedServer(Script.text("hello")) as server:
        base = server.url.replace("http://", f"http://svc:{token}@") + "/v1"
        done = _railings(
            tmp_path, "run", "hi", "--provider", "openai", "--base-url", base, "--json"
        )
        assert done.returncode == 0, done.stderr
        expected = server.url.replace("http://", f"http://{MARKER}@") + "/v1"
    transcript = json.loads(done.stdout)
    assert transcript["base_url"] == expected
    shown = _railings(tmp_path, "show", transcript["session_id"], "--json")
    journal = b"".join(p.read_bytes() for p in tmp_path.glob("journal.sqlite3*"))
    for name, text in {
        "stdout": done.stdout,
        "stderr": done.stderr,
        "show": shown.stdout,
        "journal": journal.decode("latin-1"),
    }.items():
        assert token not in text, name


def test_redact_removes_userinfo_from_any_url() -> None:
    assert redact("see https://u:p4ss@host:8/v1 now") == f"see https://{MARKER}@host:8/v1 now"
    assert redact("http://token@host/") == f"http://{MARKER}@host/"
    assert redact("mailto:a@b and http://host/a@b") == "mailto:a@b and http://host/a@b"


# -- 8. a damaged journal is read, not fatal ----------------------------------------------------


def _journal_with_a_session(path: Path) -> str:
    with Journal(path) as journal:
        session = journal.start_session("a task", provider="openai", model="m")
        for i in range(200):
            journal.write(session, "delta", {"kind": "text", "text": f"word{i} "}, turn=1)
        journal.write(session, "tool_result", {"status": "executed", "content": "ok"}, turn=1)
        journal.end_session(session, "completed")
    return session


def _one_line_exit_2(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert re.match(r"railings (sessions|show): ", done.stderr), done.stderr


def test_a_file_that_is_not_a_journal_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "journal.sqlite3").write_bytes(b"this is not a database at all\n" * 300)
    for args in (("sessions",), ("show", "abc"), ("sessions", "--json")):
        _one_line_exit_2(_railings(tmp_path, *args))


def test_damaged_pages_are_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    session = _journal_with_a_session(path)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    data = bytearray(path.read_bytes())
    assert len(data) > 4 * 4096
    data[4096 : len(data)] = b"\xa5" * (len(data) - 4096)  # every page after the header page
    path.write_bytes(bytes(data))
    for args in (("sessions",), ("show", session), ("show", session, "--json")):
        _one_line_exit_2(_railings(tmp_path, *args))


def test_a_bad_row_is_shown_as_damaged_and_the_rest_is_readable(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    session = _journal_with_a_session(path)
    with sqlite3.connect(path) as db:
        ids = [row[0] for row in db.execute("SELECT id FROM entries ORDER BY id")]
        db.execute("UPDATE entries SET data = '{broken' WHERE id = ?", (ids[5],))
        db.execute("UPDATE entries SET data = '[1, 2]' WHERE id = ?", (ids[6],))
    db.close()
    shown = _railings(tmp_path, "show", session)
    assert shown.returncode == 0, shown.stderr
    assert "damaged entry" in shown.stdout and "word199" in shown.stdout
    assert "word0" in shown.stdout and "ok" in shown.stdout
    as_json = _railings(tmp_path, "show", session, "--json")
    assert as_json.returncode == 0, as_json.stderr
    entries: list[dict[str, Any]] = json.loads(as_json.stdout)["entries"]
    damaged = [e for e in entries if e.get("damaged")]
    assert len(damaged) == 2 and len(entries) == 203
    with Journal(path) as journal:
        assert len([e for e in journal.entries(session) if e.damaged]) == 2
