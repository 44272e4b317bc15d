"""Security: secrets never leave the process, tools stay in their directory, servers stay local,
and nothing from an unfinished turn reaches the shell.

The redaction tests run the real ``railings run`` in a subprocess, with logging at
DEBUG, against servers that echo the key back (in a 401 body, a 400 body, and in
error events before and after content), then grep every output -- stdout, stderr
(the DEBUG log included), ``--json``, ``railings show --json``, and the journal's
bytes with its WAL -- for the key. Confinement, the shell's timeout and output
cap are covered in tests/test_tools_builtin.py; the cases here add what that file
does not: dangling and chained links, special files, a huge line, memory.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import ssl
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import railings as railings_package
from _server import (
    CannedServer,
    anthropic_error,
    anthropic_text,
    json_reply,
    make_certificate,
    openai_chunk,
    openai_text,
)
from _tools import call, tools_in
from railings.agent.loop import Agent, RunStatus
from railings.dispatch import ToolRegistry, builtin_tools
from railings.errors import RailingsError
from railings.messages import User
from railings.redact import MARKER, register_secret
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.testing.http import encode_chunk, read_request, render_head
from railings.testing.service import Service
from railings.transport import (
    FALLBACK,
    AsyncProviderClient,
    ClientConfig,
    RetryPolicy,
    Timeouts,
    no_waits,
)
from tools.reliability.properties import ShellSpy

SECRET = "Zq8v3Kf7Lw2Np5Rx9Ty4Hm6Jb1"  # the part of the key that must never be seen
KEY = f"sk-railings-{SECRET}"

# -- a server that echoes the key ------------------------------------------------------------


class EchoServer(Service):
    """Answers each request by echoing its key back; the first path segment picks how.

    ``/status401`` and ``/status400``: an error body that quotes the key;
    ``/early_error``: an event stream whose first event is an error quoting the key;
    ``/late_error``: some text, then that error (a Partial turn). The key is taken
    from ``authorization: Bearer`` or ``x-api-key``, and recorded in ``seen``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        key = request.headers.get("x-api-key") or (
            request.headers.get("authorization") or ""
        ).removeprefix("Bearer ")
        self.seen.append(key)
        mode = request.path.strip("/").split("/")[0]
        anthropic = request.path.endswith("/messages")
        if mode.startswith("status"):
            status = int(mode.removeprefix("status"))
            body = json.dumps(
                {
                    "error": {
                        "message": f"Incorrect API key provided: {key}",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                }
            ).encode()
            writer.write(
                render_head(
                    status,
                    [
                        ("content-type", "application/json"),
                        ("content-length", str(len(body))),
                        ("connection", "close"),
                    ],
                )
                + body
            )
            await writer.drain()
            return
        said = f"this key is not allowed here: {key}"
        if anthropic:
            error = anthropic_error("invalid_request_error", said)
            text = anthropic_text(["Hello", " there"], stop=False)
        else:
            payload = {"error": {"message": said, "type": "invalid_request_error", "code": 400}}
            error = f"data: {json.dumps(payload)}\n\n".encode()
            text = openai_text(["Hello", " there"], finish=None, done=False)
        events = [error] if mode == "early_error" else [*text, error]
        writer.write(
            render_head(
                200,
                [
                    ("content-type", "text/event-stream"),
                    ("transfer-encoding", "chunked"),
                    ("connection", "close"),
                ],
            )
        )
        for event in events:
            writer.write(encode_chunk(event))
        writer.write(b"0\r\n\r\n")
        await writer.drain()


@pytest.fixture(scope="module")
def echo() -> Iterator[EchoServer]:
    with EchoServer() as server:
        yield server


DEBUG_MAIN = (
    "import logging, sys\n"
    "logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,\n"
    "                    format='LOG %(name)s %(levelname)s %(message)s')\n"
    "from railings.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def railings(tmp_path: Path, *args: str, key_variable: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        "RAILINGS_JOURNAL": str(tmp_path / "journal" / "journal.sqlite3"),
        key_variable: KEY,
    }
    return subprocess.run(
        [sys.executable, "-c", DEBUG_MAIN, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


def every_output_of(
    tmp_path: Path, runs: list[subprocess.CompletedProcess[str]], key_variable: str
) -> dict[str, str]:
    """Everything the runs wrote, and what ``sessions`` / ``show`` print from the journal."""
    outputs: dict[str, str] = {}
    for i, done in enumerate(runs):
        outputs[f"run {i} stdout"] = done.stdout
        outputs[f"run {i} stderr"] = done.stderr
    listed = railings(tmp_path, "sessions", "--json", key_variable=key_variable)
    outputs["sessions --json"] = listed.stdout + listed.stderr
    for session in json.loads(listed.stdout):
        shown = railings(tmp_path, "show", session["id"], "--json", key_variable=key_variable)
        outputs[f"show {session['id']}"] = shown.stdout + shown.stderr
    for file in sorted((tmp_path / "journal").iterdir()):  # the database, its WAL and shm
        outputs[file.name] = file.read_bytes().decode("latin-1")
    return outputs


def assert_no_key(outputs: dict[str, str]) -> None:
    leaks = [name for name, text in outputs.items() if SECRET in text]
    assert not leaks, f"the key leaked into: {leaks}"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_full_run_never_shows_the_key_anywhere(
    provider: str, tmp_path: Path, echo: EchoServer
) -> None:
    variable = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
    script = Script.from_dict(
        {
            "api_key": KEY,
            "turns": [
                {
                    "text": "Listing.",
                    "tool_calls": [{"name": "shell", "arguments": {"command": "echo hello"}}],
                },
                {"text": "Done."},
            ],
        }
    )
    runs: list[subprocess.CompletedProcess[str]] = []
    with ScriptedServer(script) as server:
        base = server.url + ("/v1" if provider == "openai" else "")
        runs.append(
            railings(
                tmp_path,
                "run",
                "list things",
                "--provider",
                provider,
                "--base-url",
                base,
                "--yes",
                "--json",
                "--workdir",
                str(tmp_path),
                key_variable=variable,
            )
        )
        assert runs[-1].returncode == 0, runs[-1].stderr
        assert server.requests and all(
            r.headers.get("authorization", r.headers.get("x-api-key")) == "<redacted>"
            for r in server.requests
        )
    expected = {"status401": 1, "status400": 1, "early_error": 1, "late_error": 3}
    for mode, code in expected.items():
        base = f"{echo.url}/{mode}" + ("/v1" if provider == "openai" else "")
        runs.append(
            railings(
                tmp_path,
                "run",
                f"echo {mode}",
                "--provider",
                provider,
                "--base-url",
                base,
                "--json",
                "--tools",
                "none",
                key_variable=variable,
            )
        )
        assert runs[-1].returncode == code, (mode, runs[-1].stderr)
    assert KEY in echo.seen  # the key did go over the wire, and came back in every echo
    outputs = every_output_of(tmp_path, runs, variable)
    assert_no_key(outputs)
    # Not vacuous: the echoes arrived and were shown redacted; the log is at DEBUG.
    assert sum(MARKER in text for name, text in outputs.items() if "run" in name) >= 4
    assert any("LOG httpx2 INFO HTTP Request" in done.stderr for done in runs)
    assert any("LOG httpcore2." in done.stderr for done in runs)


@pytest.fixture
def _fresh_fallback() -> Iterator[None]:
    FALLBACK.reset()
    with no_waits():
        yield
    FALLBACK.reset()


def test_x_api_key_over_http2_is_not_logged_at_debug(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, _fresh_fallback: None
) -> None:
    # h2 marks only authorization and proxy-authorization as sensitive; hpack logs every
    # other header it encodes, Anthropic's x-api-key included, at DEBUG.
    cert, key = make_certificate(tmp_path)
    secret = "sk-ant-h2-" + SECRET[::-1]
    with CannedServer(tls=(cert, key)) as server:
        server.push(
            json_reply(
                401,
                {
                    "type": "error",
                    "error": {
                        "type": "authentication_error",
                        "message": f"invalid x-api-key {secret}",
                    },
                },
            )
        )
        config = ClientConfig(
            "anthropic",
            "m",
            base_url=server.anthropic_base_url,
            api_key=secret,
            verify=ssl.create_default_context(cafile=str(cert)),
            retry=RetryPolicy(attempts=1),
            timeouts=Timeouts(connect=5),
        )

        async def main() -> RailingsError | None:
            async with AsyncProviderClient(config) as client:
                try:
                    await client.stream_turn([User("hi")]).result()
                except RailingsError as exc:
                    return exc
            return None

        with caplog.at_level(logging.DEBUG):
            error = asyncio.run(main())
    assert server.h2_connections >= 1  # it did speak HTTP/2 first
    assert error is not None and secret[10:] not in str(error)
    assert any("x-api-key" in r.getMessage() for r in caplog.records)  # hpack did log it...
    assert secret[10:] not in caplog.text  # ...redacted


def test_a_key_given_in_code_is_redacted_like_one_from_the_environment(
    echo: EchoServer,
) -> None:
    secret = "sk-in-code-" + SECRET[:12] + "x"
    config = ClientConfig(
        "openai",
        "m",
        base_url=f"{echo.url}/status400/v1",
        api_key=secret,
        http2=False,
        retry=RetryPolicy(attempts=1),
    )

    async def main() -> str:
        async with AsyncProviderClient(config) as client:
            try:
                await client.stream_turn([User("hi")]).result()
            except RailingsError as exc:
                return str(exc)
        return ""

    message = asyncio.run(main())
    assert "Incorrect API key provided" in message and secret not in message


def test_errors_and_turn_errors_redact_registered_secrets() -> None:
    register_secret("sk-registered-" + SECRET)
    assert SECRET not in str(RailingsError(f"boom sk-registered-{SECRET}"))
    assert SECRET not in str(RailingsError(f"Authorization: Bearer abc{SECRET}"))
    body = openai_chunk({"content": "x"}) + (
        f'data: {{"error": {{"message": "bad sk-registered-{SECRET}"}}}}\n\n'.encode()
    )
    from railings.replay import replay

    turn = replay(body).turn
    assert turn.error is not None and SECRET not in turn.error.message


# -- servers stay on loopback ---------------------------------------------------------------


def test_test_servers_bind_to_loopback_by_default() -> None:
    with ScriptedServer(Script.text("hi")) as server, FaultProxy(server.url) as proxy:
        for service in (server, proxy):
            assert service._server is not None
            addresses = {s.getsockname()[0] for s in service._server.sockets}
            assert addresses == {"127.0.0.1"}


def _start(args: list[str], tmp_path: Path) -> tuple[str, str]:
    """Start ``railings serve|proxy``; return (its listening line, all it said on stderr)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        "PYTHONPATH": str(Path(railings_package.__file__).parents[1]),  # the code under test
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "railings", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said = []
    try:
        assert process.stderr is not None
        for said_line in process.stderr:  # bounded: the listening line ends the wait
            said.append(said_line)
            if "listening on" in said_line and "warning" not in said_line:
                break
    finally:
        process.terminate()
        try:
            _, err = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
    line = next((x for x in said if "listening on" in x and "warning" not in x), "")
    return line, "".join(said) + err


@pytest.mark.parametrize("command", ["serve", "proxy"])
def test_serve_and_proxy_say_so_when_they_listen_beyond_loopback(
    command: str, tmp_path: Path
) -> None:
    extra = ["--upstream", "http://127.0.0.1:9"] if command == "proxy" else []
    line, err = _start([command, *extra], tmp_path)
    assert "127.0.0.1" in line and "warning" not in err
    line, err = _start([command, *extra, "--host", "0.0.0.0"], tmp_path)
    assert "0.0.0.0" in line
    assert "warning: listening on 0.0.0.0, beyond loopback" in err


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.1", "::1", "localhost"])
def test_loopback_addresses_need_no_warning(host: str, capsys: pytest.CaptureFixture[str]) -> None:
    from railings.cli.kit import _warn_if_exposed
    from railings.gateway.serve import is_loopback

    assert is_loopback(host)
    _warn_if_exposed(host, "serve")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "2001:db8::1", "localhost.lan"])
def test_every_other_address_is_warned_about(host: str, capsys: pytest.CaptureFixture[str]) -> None:
    # The wildcards reach every interface, and a name other than localhost may resolve
    # anywhere: the serve, proxy and gateway commands all ask this one rule.
    from railings.cli.kit import _warn_if_exposed
    from railings.gateway.serve import is_loopback

    assert not is_loopback(host)
    _warn_if_exposed(host, "serve")
    assert f"warning: listening on {host}, beyond loopback" in capsys.readouterr().err


# -- tools stay in their directory -------------------------------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "outside.txt").write_text("outside")
    inside = tmp_path / "work"
    inside.mkdir()
    (inside / "notes.txt").write_text("notes\n")
    return inside


def test_links_that_lead_out_are_refused_however_they_are_made(root: Path) -> None:
    outside = root.parent
    os.symlink(outside / "not-yet.txt", root / "dangling")  # a link to a file not made yet
    os.symlink(root / "hop2", root / "hop1")  # a chain: inside -> inside -> outside
    os.symlink(outside, root / "hop2")
    (root / "sub").mkdir()
    os.symlink(root / "sub", root / "in")  # a link that stays inside, then '..' twice
    named = tools_in(root)
    cases = {
        "dangling": {"content": "x"},
        "hop1/outside.txt": {},
        "in/../../outside.txt": {},
        "sub/../../work/../outside.txt": {},
        "./././../work/../../outside.txt": {},
    }
    for path, extra in cases.items():
        for name in ("read_file", "write_file", "list_dir"):
            arguments = {"path": path, **(extra if name == "write_file" else {})}
            if name == "write_file":
                arguments.setdefault("content", "pwned")
            result = call(named[name], **arguments)
            assert not result.ok and result.content.startswith("refused:"), (name, path, result)
    assert not (outside / "not-yet.txt").exists()
    assert (outside / "outside.txt").read_text() == "outside"


def test_a_workdir_reached_through_a_link_confines_to_its_target(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.txt").write_text("a")
    os.symlink(real, tmp_path / "alias")
    (tmp_path / "other.txt").write_text("other")
    named = tools_in(tmp_path / "alias")
    assert call(named["read_file"], path="a.txt").ok
    assert call(named["read_file"], path="../real/a.txt").ok  # back inside the real root
    for path in ("../other.txt", "../alias/../other.txt", str(tmp_path / "other.txt")):
        result = call(named["read_file"], path=path)
        assert not result.ok and result.content.startswith("refused:"), path


def test_read_file_refuses_what_is_not_a_regular_file(root: Path) -> None:
    os.mkfifo(root / "pipe")  # opening a FIFO for reading blocks until a writer comes (never)
    result = call(tools_in(root)["read_file"], path="pipe")
    assert not result.ok and "not a regular file" in result.content


def test_read_file_of_one_huge_line_reads_only_what_it_shows(root: Path) -> None:
    with (root / "big.txt").open("wb") as fh:  # 64 MB, no newline
        for _ in range(1024):
            fh.write(b"x" * 65536)
    tracemalloc.start()
    try:
        result = call(tools_in(root, max_output=4096)["read_file"], path="big.txt")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok and "line 1 has" in result.content and "shown is its start" in result.content
    assert len(result.content) < 4096 + 200
    assert peak < 4 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB for a 64 MB line"


def test_shell_output_cap_bounds_memory(root: Path) -> None:
    tracemalloc.start()
    try:
        result = call(
            tools_in(root, max_output=10_000, timeout=30)["shell"],
            command="head -c 50000000 /dev/zero | tr '\\0' y",
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok and "50000000 bytes in all" in result.content
    assert len(result.content) < 10_000 + 500
    assert peak < 4 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB for 50 MB of output"


# -- nothing from an unfinished turn reaches the shell -----------------------------------------

CUT_SCRIPT = {
    "turns": [
        {
            "text": "Cleaning up.",
            "tool_calls": [{"name": "shell", "arguments": {"command": "rm -rf /tmp/leg"}}],
        },
        {"text": "Done."},
    ]
}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "fault",
    [
        "truncate:events=4",
        "truncate:events=4,end=abrupt",
        "reset:events=4",
        "drop_terminator",
        "error_event:events=4",
        "corrupt:event=5,kind=json",
        "corrupt:event=5,kind=utf8",
        "max_tokens",
    ],
)
def test_a_call_from_an_unfinished_turn_never_reaches_the_shell(
    provider: str, fault: str, tmp_path: Path
) -> None:
    script = dict(CUT_SCRIPT)
    max_tokens = 1024
    if fault == "max_tokens":  # the output limit cuts the call inside its command
        max_tokens = 6
    with (
        ScriptedServer(script) as server,
        FaultProxy(server.url, None if fault == "max_tokens" else fault) as proxy,
        ShellSpy() as spy,
    ):
        config = ClientConfig(
            provider,
            "m",  # type: ignore[arg-type]
            base_url=proxy.url + ("/v1" if provider == "openai" else ""),
            api_key="sk-spy-0000000000",
            http2=False,
            max_tokens=max_tokens,
            retry=RetryPolicy(attempts=1),
        )

        async def main() -> Any:
            async with AsyncProviderClient(config) as client:
                registry = ToolRegistry(builtin_tools(tmp_path))
                agent = Agent(client, registry, max_turns=1, approve=None)
                return await agent.arun("clean up")

        result = spy.run(main())
    assert spy.commands == [], spy.commands
    assert result.status in (RunStatus.INTERRUPTED, RunStatus.ERROR, RunStatus.TURN_LIMIT)
    if result.status is RunStatus.TURN_LIMIT:  # the turn finished: its cut call was rejected
        assert result.last is not None and result.last.truncated


def test_the_same_call_finished_does_reach_the_shell(tmp_path: Path) -> None:
    # The positive control of the test above: the spy sees a call that may run.
    with ScriptedServer(CUT_SCRIPT) as server, ShellSpy() as spy:
        config = ClientConfig(
            "openai",
            "m",
            base_url=server.url + "/v1",
            api_key="sk-0000000",
            http2=False,
            retry=RetryPolicy(attempts=1),
        )

        async def main() -> Any:
            async with AsyncProviderClient(config) as client:
                agent = Agent(
                    client, ToolRegistry(builtin_tools(tmp_path)), max_turns=1, approve=None
                )
                return await agent.arun("clean up")

        spy.run(main())
    assert spy.commands == ["rm -rf /tmp/leg"]


# -- the soak, small ----------------------------------------------------------------------------


def test_a_small_soak_holds_every_invariant() -> None:
    from tools.reliability.soak import soak

    report = soak(turns=40, concurrency=8, seed=11, warmup=8)
    assert report["ok"], report["failures"]
    assert report["turns_run"] == 40
    assert report["truncated_calls_executed"] == 0
    assert report["faults_missed"] == 0 and report["clean_turns_misreported"] == 0
    assert report["faults_injected"] > 0 and report["faults_detected"] > 0
    assert report["shell_runs"] > 0  # the spy saw the whole calls: it is not vacuous


def test_the_soak_oracle_reads_the_wire_without_the_decoder() -> None:
    from tools.reliability.faulting import wire_truth

    done = b"data: [DONE]\n\n"
    chunk = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
    assert wire_truth(200, chunk + done).clean
    assert wire_truth(200, b": ping\n\n" + chunk + done).clean
    assert wire_truth(200, chunk).spoiled == "no proof"
    assert wire_truth(200, chunk + b"data: [DONE]\n").spoiled == "no proof"  # no blank line
    assert wire_truth(429, b"").spoiled == "HTTP 429"
    assert wire_truth(200, b'data: {"a": "\xff"}\n\n' + done).spoiled == "invalid UTF-8"
    assert wire_truth(200, b'data: {"a": \n\n' + done).spoiled == "data that is not JSON"
    assert wire_truth(200, b'data: {"error": {"message": "x"}}\n\n' + done).spoiled
    assert wire_truth(200, chunk + done + b"data: {broken\n\n").clean  # after the proof
