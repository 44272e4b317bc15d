"""Attacks on the gateway's defences from what its clients and its operator give it: request
bodies, client-chosen strings that reach its log and journal, and the upstream URL's
password. The real gateway on 127.0.0.1 (in-process, or ``railings gateway`` as a child
process) in front of a real upstream."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from _server import CannedServer, json_reply
from railings.errors import ConfigurationError
from railings.gateway import app
from railings.gateway.limits import Limits
from railings.gateway.serve import ServingThread
from railings.testing.raw import raw_request
from tests.gateway_kit import NO_WAITS, PATHS, body, headers, running
from tests.gateway_upstreams import answer_of, send_part


@pytest.fixture()
def upstream() -> Iterator[CannedServer]:
    with CannedServer() as server:
        yield server


# -- the upstream URL's password, spelled the way httpx2 still accepts -------------------------

SRC = Path(__file__).resolve().parent.parent / "src"


@pytest.mark.parametrize(
    ("password", "shown"),
    [
        ("Open Sesame Qz81", "Sesame Qz81"),  # a space: httpx2 sends it as %20
        ("Open@Sesame-Qz81", "Sesame-Qz81"),  # an "@": httpx2 splits at the last one
    ],
)
def test_a_password_httpx2_accepts_unencoded_is_in_no_output(
    tmp_path: Path, password: str, shown: str
) -> None:
    # httpx2 reads both URLs with this user and password (it authenticates with them), so
    # the gateway runs; what it prints and journals must not hold any of the password.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # never listening: nothing is ever answered
        port = sock.getsockname()[1]
        upstream = f"http://gateway-user:{password}@127.0.0.1:{port}/v1"
        assert httpx2.URL(upstream).password == password
        journal = tmp_path / "journal.sqlite3"
        command = [sys.executable, "-m", "railings", "gateway", "--upstream", upstream]
        process = subprocess.Popen(
            [*command, "--port", "0", "--journal", str(journal)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )
        assert process.stderr is not None
        lines = []
        try:
            for line in process.stderr:  # bounded: the startup line ends the wait
                lines.append(line)
                if "listening on" in line:
                    break
        finally:
            process.send_signal(signal.SIGINT)
            stdout, rest = process.communicate(timeout=60)
    printed = "".join(lines) + rest + stdout
    assert "listening on" in printed
    assert shown not in printed
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert shown.encode() not in stored


# -- the per-call log line and journal row, with a client-chosen value of any length -------------


def test_a_client_chosen_model_name_is_bounded_in_the_log_and_the_journal(
    upstream: CannedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # One request of 1 MiB, answered at once with a 400: without a bound on the fields a
    # client chooses, each such request writes a megabyte to the log and the journal
    # (64 MiB with the default request body limit), a disk filled for the price of a 400.
    name = "gpt-" + "x" * 2**20
    upstream.push(json_reply(400, {"error": {"message": "unknown model", "type": "invalid"}}))
    request = body("openai")
    request["model"] = name
    caplog.set_level(logging.INFO, logger="railings.gateway")
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], request, headers=headers("openai"))
    assert got.status == 400
    lines = [r.getMessage() for r in caplog.records if r.name == "railings.gateway"]
    assert lines and "status=400" in lines[-1]
    assert max(map(len, lines)) < 16 * 1024
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert b"x" * 16 * 1024 not in stored


# -- ``railings gateway-log``: the journal's client-chosen strings, shown to a terminal ----------

FORGED = "1999-01-01 00:00:00  openai  gpt-4o  200  complete  attempts=1"


def test_a_client_chosen_model_never_forges_a_gateway_log_line(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # The per-call log line escapes the model; the journal keeps it as sent, and
    # ``railings gateway-log`` prints it to the operator's terminal: a newline starts a
    # forged row, ESC sequences reach the terminal (here: clear the screen).
    upstream.push(json_reply(400, {"error": {"message": "unknown model", "type": "invalid"}}))
    request = body("openai")
    request["model"] = "m\n" + FORGED + "\x1b[2J\x1b[H"
    journal = tmp_path / "journal.sqlite3"
    with running(upstream.url, tmp_path, journal=journal) as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], request, headers=headers("openai"))
    assert got.status == 400
    shown = subprocess.run(
        [sys.executable, "-m", "railings", "gateway-log", "--journal", str(journal)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1"},
        check=True,
    ).stdout
    assert "upstream_status" in shown  # the one row is shown
    assert not any(line.startswith(FORGED) for line in shown.splitlines())
    assert "\x1b" not in shown


# -- a request body the gateway reads for its journal -------------------------------------------


def test_a_deeply_nested_request_body_is_forwarded_like_any_unread_one(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # The gateway reads the body's ``model`` for its journal, and a body that is not JSON
    # goes upstream unread; one nested deeper than the JSON decoder recurses raises
    # RecursionError instead, out of the app: a bare 500 and a traceback in the log per
    # request, and the upstream never asked.
    upstream.push(json_reply(400, {"error": {"message": "bad body", "type": "invalid"}}))
    nested = b'{"model": "m", "messages": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], nested, headers=headers("openai"))
    assert got.status == 400  # the upstream's own answer, relayed
    assert len(upstream.requests) == 1


def test_reading_the_model_of_a_request_body_is_bounded_by_the_body(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # A request body is bounded in bytes (64 MiB by default), but the gateway parses it
    # whole into Python objects to read its ``model``: a body of empty objects makes one
    # dict per three bytes. Every copy of this 4 MiB body (the test's, the server's, the
    # gateway's) fits many times under the bound (a body of one long string passes it);
    # its object graph does not.
    upstream.push(json_reply(400, {"error": {"message": "bad body", "type": "invalid"}}))
    size = 4 * 2**20
    payload = b'{"model": "m", "messages": [' + b"{}," * (size // 3) + b"{}]}"
    tracemalloc.start()
    try:
        with running(upstream.url, tmp_path) as (url, _, _tee):
            got = raw_request(url, PATHS["openai"], payload, headers=headers("openai"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.status == 400 and len(upstream.requests) == 1
    assert peak < 12 * size


def test_a_password_with_a_slash_never_reaches_a_client(tmp_path: Path) -> None:
    # "/" is the commonest special character of a generated password. Unencoded, it ends
    # the authority: the URL's port becomes the password's first part, which the gateway
    # accepts at startup, and every request's error then quotes it to the client ("Invalid
    # port: '...'"). Refused at startup without quoting it is as good as never quoting it.
    upstream = "http://gateway-user:Sesame/Qz81@127.0.0.1:9/v1"
    try:
        gateway = app(upstream, journal=tmp_path / "journal.sqlite3", retry=NO_WAITS)
    except ConfigurationError as exc:
        assert "Sesame" not in str(exc)
        return
    answers = []
    with ServingThread(gateway) as url:
        for path in (PATHS["openai"], "/v1/models"):
            got = raw_request(url, path, body("openai"), headers=headers("openai"))
            answers.append(got.body)
    assert answers and all(b"Sesame" not in answer for answer in answers), answers


# -- the process-wide cap on request bodies, held by clients that never finish ------------------


def test_a_body_trickled_byte_by_byte_cannot_hold_the_process_cap_for_ever(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # ``body_timeout`` is the longest wait between two pieces, so a client that sends one
    # byte a little more often than that is never timed out, and keeps what it sent
    # counted against ``max_buffered``: a few such connections (four at the defaults,
    # 4 x 64 MiB = 256 MiB, each a fraction of a kilobit per second once the bulk is
    # sent) answer every other client 503 for as long as they like. Apache's
    # mod_reqtimeout (a minimum rate) and Envoy's request_timeout (a whole-request
    # deadline) end such a body; here it trickles for four times ``body_timeout``.
    limits = Limits(max_request_body=2**20, max_buffered=2**20, body_timeout=1.0)
    upstream.push(json_reply(200, {"ok": True}))
    with running(upstream.url, tmp_path, limits=limits) as (url, gateway, _tee):
        hog = send_part(url, PATHS["openai"], 2**20, b"{" + b" " * (2**20 - 100))
        guard = time.monotonic() + 30  # only against a hang: the loop waits for bytes
        while gateway.buffered < 2**20 - 100 and time.monotonic() < guard:
            time.sleep(0.01)
        try:
            for _ in range(40):  # one byte per tenth of ``body_timeout``: 4 x body_timeout
                hog.sendall(b" ")
                time.sleep(0.1)
        except OSError:
            pass  # the gateway ended the trickle: what a bound on it does
        try:
            # A client that comes now, while the hog is still connected.
            ask = json.dumps(body("openai", stream=False)).encode()
            got = answer_of(send_part(url, PATHS["openai"], len(ask), ask, headers("openai")))
        finally:
            hog.close()
    assert got.status == 200


# -- request headers: before any of the gateway's bounds applies ----------------------------------


def test_a_request_head_that_never_ends_is_bounded(tmp_path: Path) -> None:
    # Every bound of the gateway starts once the head is whole: the body's size, its
    # timeout, the process-wide cap. A client that sends one header of 32 MiB, and never
    # ends the head, is read into memory as it comes (the server's HTTP parser has no
    # limit on a head), for as long as it likes: a handful of such connections pins
    # gigabytes. nginx reads a head into 4 x 8 KiB buffers (431 past them), Envoy into
    # 60 KiB, h11 into 16 KiB.
    piece = b"a" * 65536
    tracemalloc.start()
    try:
        with (
            CannedServer() as upstream,
            running(upstream.url, tmp_path) as (url, _, _tee),
        ):
            host, port = url.removeprefix("http://").split(":")
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-pad: ")
                try:
                    for _ in range(512):  # 32 MiB, unless the gateway stops reading
                        sock.sendall(piece)
                except OSError:
                    pass  # closed, reset, or no longer read: the head was bounded
                _, peak = tracemalloc.get_traced_memory()
            assert upstream.requests == []
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20


def test_a_request_head_that_stalls_is_timed_out_like_a_stalled_body(tmp_path: Path) -> None:
    # The head of a request is waited for without limit: a client that sends half a head
    # and nothing more keeps its connection (and the head's bytes) for ever, where a body
    # stalled as long gets 408. nginx times a head out after client_header_timeout; here
    # the body's own tiny timeout stands for whichever bound the head gets.
    limits = Limits(body_timeout=0.2)
    with (
        CannedServer() as upstream,
        running(upstream.url, tmp_path, limits=limits) as (url, _, _tee),
    ):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")  # and stalls
            got = answer_of(sock, guard=10.0)  # only against a hang: 50 x the timeout
    assert not got.timed_out  # the gateway ended it (408, or closed), not the guard
