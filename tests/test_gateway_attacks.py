"""Attacks on the gateway's defences: a real upstream on 127.0.0.1 sends what a provider
(or an OpenAI-compatible server) may send, behind the real gateway under
``--cut-calls refuse``, and the test reads what the client gets.

Each test here is a way around a promise the gateway makes: a cut tool call never
reaches the client, in any shape the client's SDK would read it from."""

from __future__ import annotations

import gzip
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
from typing import Any

import httpx2
import openai
import pytest

from _server import DONE, OPENAI_USAGE, CannedServer, Reply, json_reply, openai_chunk, sse
from railings.errors import ConfigurationError
from railings.gateway import app
from railings.gateway.limits import Limits
from railings.gateway.serve import ServingThread
from railings.testing.raw import raw_request
from tests.gateway_kit import KEY, NO_WAITS, PATHS, body, headers, running
from tests.gateway_upstreams import answer_of, send_part

# The arguments of a call the output limit cut inside its command.
CUT = '{"command": "rm -rf /tmp/leg'
EVENT_STREAM = (("content-type", "text/event-stream"),)


@pytest.fixture()
def upstream() -> Iterator[CannedServer]:
    with CannedServer() as server:
        yield server


def _chat(upstream: CannedServer, tmp_path: Path, request: dict[str, Any]) -> bytes:
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], request, headers=headers("openai"))
    return got.body


def _choice(index: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
        }
    )


# -- the legacy Chat ``function_call`` (``functions=`` requests) ----------------------------


def test_a_cut_legacy_function_call_never_reaches_a_streaming_client(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # ``functions=`` (the Chat API's first tool interface, still served by OpenAI, Azure
    # and the OpenAI-compatible servers) streams the call as ``delta.function_call``; the
    # openai SDK's ChatCompletionChunk reads it. Cut by the output limit, it is the same
    # unfinished command as a cut ``tool_calls`` entry.
    events = [
        openai_chunk({"role": "assistant", "content": None}),
        openai_chunk({"function_call": {"name": "shell", "arguments": ""}}),
        openai_chunk({"function_call": {"arguments": CUT}}),
        openai_chunk({}, "length"),
        OPENAI_USAGE,
        DONE,
    ]
    upstream.push(Reply(200, events, EVENT_STREAM))
    request = body("openai", max_tokens=10)
    request["functions"] = [{"name": "shell", "parameters": {"type": "object"}}]
    got = _chat(upstream, tmp_path, request)
    assert b"/tmp/leg" not in got
    assert b"cut by the output limit" in got


def test_a_cut_legacy_function_call_in_a_json_answer_is_refused(
    upstream: CannedServer, tmp_path: Path
) -> None:
    message = {"role": "assistant", "content": None}
    message["function_call"] = {"name": "shell", "arguments": CUT}  # type: ignore[assignment]
    answer = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 10, "total_tokens": 15},
    }
    upstream.push(json_reply(200, answer))
    request = body("openai", stream=False, max_tokens=10)
    request["functions"] = [{"name": "shell", "parameters": {"type": "object"}}]
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], request, headers=headers("openai"))
    assert b"/tmp/leg" not in got.body
    assert got.status == 502


# -- ``n`` > 1: the calls of every choice but the first --------------------------------------


def test_a_cut_call_in_the_second_choice_never_reaches_a_streaming_client(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # ``n=2`` asks for two choices; the openai SDK gives the client both, each with its
    # own tool calls and finish reason. The second is cut by the output limit.
    call = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "shell", "arguments": ""}
    events = [
        _choice(0, {"role": "assistant", "content": ""}),
        _choice(1, {"role": "assistant", "content": ""}),
        _choice(0, {"content": "Done."}),
        _choice(1, {"tool_calls": [call]}),
        _choice(1, {"tool_calls": [{"index": 0, "function": {"arguments": CUT}}]}),
        _choice(0, {}, "stop"),
        _choice(1, {}, "length"),
        DONE,
    ]
    upstream.push(Reply(200, events, EVENT_STREAM))
    request = body("openai", max_tokens=10)
    request["n"] = 2
    got = _chat(upstream, tmp_path, request)
    assert b"/tmp/leg" not in got


def test_a_cut_call_in_the_second_choice_of_a_json_answer_is_refused(
    upstream: CannedServer, tmp_path: Path
) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": CUT}}
    answer = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Done."},
                "finish_reason": "stop",
            },
            {
                "index": 1,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "length",
            },
        ],
    }
    upstream.push(json_reply(200, answer))
    request = body("openai", stream=False, max_tokens=10)
    request["n"] = 2
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], request, headers=headers("openai"))
    assert b"/tmp/leg" not in got.body
    assert got.status == 502
    assert json.loads(got.body)["error"]["code"] == "tool_call_cut_by_output_limit"


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


# -- a stream the upstream does not label ``text/event-stream`` ----------------------------------

CUT_STREAM = [
    openai_chunk({"role": "assistant", "content": ""}),
    openai_chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "shell", "arguments": ""},
                }
            ]
        }
    ),
    openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": CUT}}]}),
    openai_chunk({}, "length"),
    OPENAI_USAGE,
    DONE,
]


@pytest.mark.parametrize(
    "label",
    [(), (("content-type", "text/plain"),), (("content-type", "application/json"),)],
    ids=["no content-type", "text/plain", "application/json"],
)
def test_a_cut_call_in_a_stream_labelled_otherwise_never_reaches_the_client(
    upstream: CannedServer, tmp_path: Path, label: tuple[tuple[str, str], ...]
) -> None:
    # The openai SDK reads the body of a ``stream=True`` request as server-sent events
    # whatever its content-type says, so a client gets this cut call as deltas; the
    # gateway must judge what its client will read, not what the label claims.
    upstream.push(Reply(200, CUT_STREAM, label))
    got = _chat(upstream, tmp_path, body("openai", max_tokens=10))
    assert b"/tmp/leg" not in got


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


# -- gzip in members: RFC 1952 §2.2, "a gzip file consists of a series of members" ----------


def test_a_stream_gzipped_member_by_member_is_judged_whole(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # A server that compresses each flush on its own sends one gzip member per event;
    # urllib3, Go's net/http and the browsers decode every member. Read as its first
    # member only, this complete answer has no content and no proof: called Empty and
    # resent, paid for again each time.
    events = [openai_chunk({"role": "assistant", "content": ""})]
    events += [openai_chunk({"content": word}) for word in ("The ", "answer.")]
    events += [openai_chunk({}, "stop"), OPENAI_USAGE, DONE]
    members = [gzip.compress(event) for event in events]
    for _ in range(4):
        upstream.push(Reply(200, members, (*EVENT_STREAM, ("content-encoding", "gzip"))))
    with running(upstream.url, tmp_path) as (url, _, _tee):
        got = raw_request(url, PATHS["openai"], body("openai"), headers=headers("openai"))
    assert len(upstream.requests) == 1  # complete on the first attempt: nothing resent
    assert got.status == 200
    assert got.body == b"".join(events)


# -- resends: an error status relayed after the gateway already resent ----------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_an_error_status_after_the_gateways_resends_does_not_invite_the_sdks(
    upstream: CannedServer, tmp_path: Path, stream: bool
) -> None:
    # Three connections dropped after the whole request was read (each may have been
    # generated and billed), then a 500: the gateway resent by its policy, then relays
    # the 500 as it came, and the SDK's own retries begin the whole sequence again.
    for _ in range(3):
        upstream.push(Reply(end="drop"), Reply(end="drop"), Reply(end="drop"))
        upstream.push(json_reply(500, {"error": {"message": "boom", "type": "server_error"}}))
    with (
        running(upstream.url, tmp_path) as (url, _, _tee),
        openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=2) as client,
        pytest.raises(openai.InternalServerError) as raised,
    ):
        got = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=stream
        )
        if stream:
            list(got)
    assert len(upstream.requests) == NO_WAITS.attempts  # 4, not 4 x 3
    assert raised.value.response.headers.get("x-should-retry") == "false"


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
