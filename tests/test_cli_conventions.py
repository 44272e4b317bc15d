"""The command-line conventions (CONTRIBUTING.md), held for every subcommand.

The subcommands come from the parser itself, so a new one cannot escape: its help fits
80 columns and points at nothing a pip-installed user lacks, and a usage error is one
line on stderr, ``railings <command>: ...; see 'railings <command> --help'``, exit 2,
nothing on stdout. Then one test per convention the commands used to break: servers
say where they listen on stderr and stop on SIGTERM with one exit code, the matrix
refuses an unreachable upstream before any cell and fits 80 columns, ``run`` keeps its
status lines off stdout, ``replay`` escapes what it prints from a file (the demo's
summary and legend: ``test_demo.py``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import railings
from railings._extras import missing
from railings.cli import build_parser, main

COMMANDS = sorted(build_parser().commands)
SRC = str(Path(railings.__file__).parents[1])  # the code under test


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": SRC,
        "NO_COLOR": "1",
        "COLUMNS": "80",
        "HOME": str(tmp_path),
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
        **extra,
    }


def railings_cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(tmp_path, **env),
        cwd=tmp_path,
    )


def _closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_the_parser_lists_every_command() -> None:
    assert {"replay", "serve", "proxy", "run", "chat", "sessions", "show"} <= set(COMMANDS)
    assert {"matrix", "demo", "gateway", "gateway-log"} <= set(COMMANDS)


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_fits_80_columns_and_names_no_docs_file(
    command: str, columns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)  # a wide terminal gets 80 columns too
    parser = build_parser()
    text = (parser.commands[command] if command else parser).format_help()
    widest = max(text.splitlines(), key=len)
    assert len(widest) <= 80, widest
    assert "docs/" not in text and ".md" not in text


@pytest.mark.parametrize("command", COMMANDS)
def test_a_usage_error_is_one_line_naming_the_commands_help(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([command, "--no-such-option"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    [line] = err.splitlines()
    assert line.startswith(f"railings {command}: "), line
    assert line.endswith(f"; see 'railings {command} --help'"), line


def test_an_unknown_option_is_named_by_the_subcommand_not_the_top_level(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--bogus"]) == 2
    assert capsys.readouterr().err == (
        "railings demo: unrecognized arguments: --bogus; see 'railings demo --help'\n"
    )


def test_an_option_is_named_as_typed(tmp_path: Path) -> None:
    done = railings_cli(tmp_path, "run", "x", "--provider", "openai", "--base-url", "ftp://x")
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("railings run: --base-url must start with http:// or https://"), line
    tools = railings_cli(tmp_path, "run", "x", "--demo", "--tools", "bogus")
    assert tools.returncode == 2
    assert tools.stderr.startswith("railings run: --tools: unknown tool 'bogus'")


def test_a_missing_script_names_its_path_once(tmp_path: Path) -> None:
    done = railings_cli(tmp_path, "serve", "--script", "missing.json")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "railings serve: --script missing.json: No such file or directory\n"


# -- servers: where they listen, and how a signal stops them --------------------------


def _server_argv(command: str) -> list[str]:
    upstream = f"http://127.0.0.1:{_closed_port()}"  # never asked: no request is sent
    if command == "serve":
        return ["serve", "--port", "0"]
    if command == "proxy":
        return ["proxy", "--upstream", upstream, "--port", "0"]
    return ["gateway", "--upstream", upstream, "--port", "0", "--no-journal"]


SERVERS = [
    "serve",
    "proxy",
    pytest.param(
        "gateway",
        marks=pytest.mark.skipif(bool(missing("uvicorn")), reason="the gateway extra"),
    ),
]


@pytest.mark.parametrize("command", SERVERS)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_server_says_where_it_listens_on_stderr_and_stops_on_a_signal_with_0(
    command: str, sig: signal.Signals, tmp_path: Path
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "railings", *_server_argv(command)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )
    assert process.stderr is not None
    try:
        first = process.stderr.readline()  # bounded: the server prints it once listening
    finally:
        process.send_signal(sig)
        out, rest = process.communicate(timeout=60)
    assert re.match(rf"railings {command}: listening on http://127\.0\.0\.1:\d+", first), first
    assert out == ""
    assert process.returncode == 0, rest
    assert all(line.startswith(f"railings {command}: ") for line in rest.splitlines()), rest


def test_a_servers_request_lines_are_printed_once_with_its_prefix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # An application (or a test runner) may have put a handler on the root logger: the
    # request log stops at its own handler, so the root does not print each line again.
    from railings.cli._common import log_requests

    seen: list[logging.LogRecord] = []
    root = logging.getLogger()
    catch = logging.Handler()
    catch.emit = seen.append  # type: ignore[method-assign]
    root.addHandler(catch)
    log = logging.getLogger("railings.conventions.requests")
    try:
        log_requests("serve", log.name)
        log.info("POST /v1/messages -> 200")
        log.debug("not a request line")
    finally:
        root.removeHandler(catch)
        for handler in log.handlers[:]:
            log.removeHandler(handler)
    assert capsys.readouterr().err == "railings serve: POST /v1/messages -> 200\n"
    assert seen == []


# -- matrix ---------------------------------------------------------------------------


def test_matrix_refuses_an_unreachable_upstream_before_any_cell(tmp_path: Path) -> None:
    upstream = f"http://127.0.0.1:{_closed_port()}"
    done = railings_cli(tmp_path, "matrix", "--upstream", upstream, "--model", "m")
    assert done.returncode == 2
    assert done.stdout == ""  # no table: no cell ran
    [line] = done.stderr.splitlines()
    assert line.startswith(f"railings matrix: --upstream {upstream}: unreachable ("), line


def _fits(text: str) -> None:
    widest = max(text.splitlines(), key=len)
    assert len(widest) <= 80, widest
    assert "…" not in text  # nothing cut short to fit


def test_the_matrix_fits_80_columns(tmp_path: Path) -> None:
    code, shown = _on_a_terminal(tmp_path, "matrix", "--faults", "clean,truncate,reorder")
    assert code == 0, shown
    _fits(shown)
    # Every provider's column is there, its short heading spelt out under the table.
    assert "columns: ope openai, ant anthropic, ope-res openai-responses" in " ".join(shown.split())
    assert "✓✓✓" in shown  # three sizes: one mark each
    assert "↻" not in shown  # no cell resumed: the legend does not explain the mark
    # To a pipe, the table fits too; the lines under it stay whole.
    piped = railings_cli(tmp_path, "matrix", "--faults", "clean")
    table = piped.stdout.split("\ncolumns: ")[0]
    _fits(table)
    assert re.search(r"^PASS railings: .* s$", piped.stdout, re.M)


@pytest.mark.skipif(bool(missing("openai")), reason="the sdks extra")
def test_the_matrix_of_several_clients_fits_80_columns(tmp_path: Path) -> None:
    done = railings_cli(
        tmp_path, "matrix", "--quick", "--client", "railings,openai-sdk", "--providers", "openai"
    )
    assert done.returncode == 0, done.stderr
    _fits(done.stdout.split("\nmarks: ")[0])  # the tables; the lines under them stay whole
    assert "UNDETECTED" in done.stdout


# -- run: status lines on stderr ------------------------------------------------------


def test_runs_retry_and_error_lines_are_not_on_stdout(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    done = railings_cli(
        tmp_path, "run", "x", "--provider", "openai", "--base-url", base, OPENAI_API_KEY="sk-t-00"
    )
    assert done.returncode == 1
    assert "retrying: attempt 2" in done.stderr
    assert "retrying" not in done.stdout and "error" not in done.stdout
    assert "railings run: could not connect" in done.stderr


# -- replay: what a file holds is escaped ---------------------------------------------


def test_replay_escapes_the_control_bytes_of_a_binary_file(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b'{"\x1b[31mred\x07\x00\x9b2J')
    done = railings_cli(tmp_path, "replay", "bin")
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("railings replay: bin holds no server-sent event"), line
    assert "\\x1b[31mred\\x07\\x00" in line
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", done.stderr)


def _sse(text: str) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode()


def _on_a_terminal(tmp_path: Path, *args: str) -> tuple[int, str]:
    """Run railings with its stdout on a pseudo-terminal 80 columns wide; its exit code
    and what the terminal received."""
    import pty

    main_fd, child_fd = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "railings", *args],
        stdout=child_fd,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    os.close(child_fd)
    received = b""
    while True:
        try:
            data = os.read(main_fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        received += data
    os.close(main_fd)
    process.communicate(timeout=60)
    text = received.decode().replace("\r\n", "\n")
    return process.returncode, re.sub(r"\x1b\[[0-9;]*m", "", text)  # styles take no room


def test_replay_escapes_control_characters_in_the_text(tmp_path: Path) -> None:
    (tmp_path / "body").write_bytes(_sse("\x1b]0;owned\x07 and \u009b2J the rest"))
    done = railings_cli(tmp_path, "replay", "body")
    assert done.returncode == 0, done.stderr
    assert "\\x1b]0;owned\\x07 and \\x9b2J the rest" in done.stdout
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", done.stdout)


def test_replay_wraps_long_lines_at_words_on_a_terminal(tmp_path: Path) -> None:
    words = [f"word{n:02d}" for n in range(40)]
    (tmp_path / "body").write_bytes(_sse(" ".join(words)))
    code, shown = _on_a_terminal(tmp_path, "replay", "body")
    assert code == 0, shown
    _fits(shown)
    assert all(word in shown.split() for word in words)  # between words, never inside one
    # To a pipe, each fact stays one line (for grep).
    piped = railings_cli(tmp_path, "replay", "body")
    [text] = [line for line in piped.stdout.splitlines() if line.startswith("text: ")]
    assert text.endswith("word39")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_lists_the_exit_codes(command: str) -> None:
    assert "exit codes:" in build_parser().commands[command].format_help()
