"""A tool call the output limit cut, seen by a client that acts on deltas as they arrive:
under ``--cut-calls refuse`` not one byte of its arguments reaches it, while the text
before the call still streams live. The scripted model server on 127.0.0.1, behind the
real gateway, read by a raw socket client."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from _server import CannedServer, Reply
from railings.replay import replay
from railings.testing import Script, ScriptedServer
from railings.testing.raw import raw_request
from tests.gateway_kit import KEY, PATHS, body, headers, running

PROVIDERS = tuple(PATHS)
TEXT = "Cleaning up."
# 12 characters of text and 28 of arguments are 10 tokens (one per 4 characters): the
# output limit cuts the call inside its command, at exactly ``rm -rf /tmp/leg``.
LIMIT = 10
SCRIPT = {
    "api_key": KEY,
    "turns": [
        {
            "text": TEXT,
            "tool_calls": [{"name": "shell", "arguments": {"command": "rm -rf /tmp/legacy-build"}}],
        }
    ],
}
# Every piece of the cut call's argument text; none may reach the client.
ARGUMENT_TEXT = (b"command", b"rm ", b"-rf", b"/tmp", b"leg")
# The first event of the call on each wire: its start.
CALL_START = {
    "openai": b'"tool_calls"',
    "anthropic": b'"tool_use"',
    "openai-responses": b'"function_call"',
}
PROOFS = {
    "openai": b"data: [DONE]",
    "anthropic": b"event: message_stop",
    "openai-responses": b"event: response.incomplete",
}


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedServer]:
    with ScriptedServer(Script.from_dict(SCRIPT)) as server:
        yield server


def _events(data: bytes) -> list[bytes]:
    parts = data.split(b"\n\n")
    return [p + b"\n\n" for p in parts[:-1]]


class GatedServer(CannedServer):
    """Serves one answer's events as chunks, and stops at :attr:`gate` until the test
    opens it: "the upstream has not finished" without a single sleep."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.before: Sequence[bytes] = ()
        self.after: Sequence[bytes] = ()

    async def _reply(self, reply: Reply, writer: asyncio.StreamWriter) -> None:
        head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        writer.write((head + "transfer-encoding: chunked\r\nconnection: close\r\n\r\n").encode())
        for part in (self.before, None, self.after):
            if part is None:
                await asyncio.to_thread(self.gate.wait, 60)
                continue
            for chunk in part:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()


class StreamingClient:
    """One request on a plain socket; the body is read as it arrives, its chunked framing
    undone, so the test can stop reading at an event and look at what it has."""

    def __init__(self, url: str, path: str, payload: dict[str, object], ask: dict[str, str]):
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=60)
        data = json.dumps(payload).encode()
        lines = [f"POST {path} HTTP/1.1", f"host: {parts.netloc}", "connection: close"]
        lines += ["content-type: application/json", f"content-length: {len(data)}"]
        lines += [f"{k}: {v}" for k, v in ask.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
        self.wire = b""
        self.closed = False

    @property
    def body(self) -> bytes:
        at = self.wire.find(b"\r\n\r\n")
        rest, out = self.wire[at + 4 :], []
        while (eol := rest.find(b"\r\n")) > 0:
            size = int(rest[:eol], 16)
            if size == 0 or len(rest) < eol + 2 + size:
                break
            out.append(rest[eol + 2 : eol + 2 + size])
            rest = rest[eol + 4 + size :]
        return b"".join(out)

    def read_until(self, needle: bytes) -> bytes:
        """Read until ``needle`` is in the body (or the gateway closes)."""
        while needle not in self.body and not self.closed:
            data = self.sock.recv(65536)
            self.closed = not data
            self.wire += data
        return self.body

    def close(self) -> None:
        self.sock.close()


def _answer(scripted: ScriptedServer, provider: str) -> bytes:
    """The scripted server's own answer to the request the client makes."""
    got = raw_request(
        scripted.url, PATHS[provider], body(provider, max_tokens=LIMIT), headers=headers(provider)
    )
    assert got.status == 200
    return got.body


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_byte_of_a_cut_calls_arguments_reaches_a_client_reading_as_it_arrives(
    scripted: ScriptedServer, tmp_path: Path, provider: str
) -> None:
    events = _events(_answer(scripted, provider))
    assert b"/tmp/leg" in b"".join(events) and b"/tmp/lega" not in b"".join(events)
    start = next(i for i, e in enumerate(events) if CALL_START[provider] in e)
    with GatedServer() as upstream, running(upstream.url, tmp_path) as (url, gateway, _):
        upstream.before, upstream.after = events[:start], events[start:]
        upstream.push(Reply())
        client = StreamingClient(
            url, PATHS[provider], body(provider, max_tokens=LIMIT), headers(provider)
        )
        try:
            # The text reaches the client while the upstream still waits at the gate,
            # before the call has even begun: text streams live.
            seen = client.read_until(TEXT.encode())
            assert TEXT.encode() in seen and not upstream.gate.is_set()
            upstream.gate.set()
            got = client.read_until(b"\x00never")  # to the end
        finally:
            upstream.gate.set()
            client.close()
        metrics = gateway.metrics
    for piece in ARGUMENT_TEXT:
        assert piece not in got, piece
    assert PROOFS[provider] not in got
    assert b"cut by the output limit" in got and b"'shell'" in got  # the refusal instead
    assert got.endswith(b"\n\n")
    refused = {"provider": provider, "outcome": "refused"}
    assert metrics.value("railings_gateway_streams_total", **refused) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_scripted_server_behind_the_gateway_never_leaks_the_cut_call(
    scripted: ScriptedServer, tmp_path: Path, provider: str
) -> None:
    with running(scripted.url, tmp_path) as (url, _, tee):
        got = raw_request(
            url, PATHS[provider], body(provider, max_tokens=LIMIT), headers=headers(provider)
        )
    upstream = bytes(tee.bodies[0])
    assert b"/tmp/leg" in upstream
    for piece in ARGUMENT_TEXT:
        assert piece not in got.body, piece
    assert TEXT.encode() in got.body and b"cut by the output limit" in got.body
    assert upstream.startswith(
        got.body[: got.body.rfind(b"\n\n", 0, got.body.rfind(b"data: ")) + 2]
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cut_calls_pass_streams_the_arguments_live(
    scripted: ScriptedServer, tmp_path: Path, provider: str
) -> None:
    with running(scripted.url, tmp_path, cut_calls="pass") as (url, _, tee):
        got = raw_request(
            url, PATHS[provider], body(provider, max_tokens=LIMIT), headers=headers(provider)
        )
    assert got.body == bytes(tee.bodies[0])  # unchanged, the cut arguments included


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_whole_call_passes_byte_for_byte(
    scripted: ScriptedServer, tmp_path: Path, provider: str
) -> None:
    with running(scripted.url, tmp_path) as (url, gateway, tee):
        got = raw_request(url, PATHS[provider], body(provider), headers=headers(provider))
        metrics = gateway.metrics
    assert got.body == bytes(tee.bodies[0])
    call = replay(got.body, provider=provider).turn.tool_calls[0]
    assert call.arguments == {"command": "rm -rf /tmp/legacy-build"}
    complete = {"provider": provider, "outcome": "complete"}
    assert metrics.value("railings_gateway_streams_total", **complete) == 1
