"""A client that leaves stops the upstream, on every path: the upstream here streams
until it sees its connection closed, and says how much it had written by then."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from railings.transport.config import Timeouts
from tests.gateway_kit import KEY, PATHS, body, running
from tests.gateway_upstreams import CAP, Drip

NEVER = Timeouts(first_byte=3600.0, idle=3600.0)  # the gateway would wait on silence "forever"
GEMINI = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
OLLAMA = "/api/chat"
ROLE = b'data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
WORD = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"marker"}}]}\n\n'


def _leave_after_first_bytes(url: str, path: str, payload: bytes) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            (
                f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                f"authorization: Bearer {KEY}\r\ncontent-length: {len(payload)}\r\n\r\n"
            ).encode()
            + payload
        )
        received = b""
        while b"marker" not in received:
            data = sock.recv(4096)
            assert data, "the gateway closed before the first bytes"
            received += data
    # the socket is closed here: the client left


CASES = {
    # pass-through wires: the gateway relays them unjudged
    "gemini, streaming on": (GEMINI, b'data: {"marker": 1}\n\n', b'data: {"more": 1}\n\n', 0.005),
    "gemini, then silent": (GEMINI, b'data: {"marker": 1}\n\n', b"", None),
    "ollama, streaming on": (OLLAMA, b'{"marker": 1}\n', b'{"more": 1}\n', 0.005),
    "other path, silent": ("/v1/batches", b'{"marker": 1', b"", None),
    # the judged wire: after content, silence (the judge noticed only with the next chunk)
    "chat, streaming on": (PATHS["openai"], ROLE + WORD, WORD, 0.005),
    "chat, then silent": (PATHS["openai"], ROLE + WORD, b"", None),
}


@pytest.mark.parametrize("case", CASES)
def test_a_client_that_leaves_closes_the_upstream_connection(tmp_path: Path, case: str) -> None:
    path, first, chunk, pace = CASES[case]
    kind = "application/x-ndjson" if path == OLLAMA else "text/event-stream"
    judged = path == PATHS["openai"]
    with (
        Drip(first=first, chunk=chunk, pace=pace, content_type=kind) as upstream,
        running(upstream.url, tmp_path, timeouts=NEVER) as (url, gateway, _),
    ):
        _leave_after_first_bytes(url, path, json.dumps(body("openai")).encode())
        left_at = upstream.written
        # Bound by events: the upstream must see its connection closed before it has
        # written CAP more chunks (it then falls silent, and the gateway would wait on it
        # for an hour); the wait below only keeps a broken gateway from hanging the test.
        assert upstream.closed.wait(60), "the upstream connection was never closed"
        assert upstream.written_at_close is not None
        assert upstream.written_at_close - left_at < CAP
        assert len(upstream.requests) == 1
        if judged:
            guard = time.monotonic() + 30
            name = "railings_gateway_client_disconnects_total"
            while not gateway.metrics.value(name, provider="openai") and time.monotonic() < guard:
                time.sleep(0.01)
            assert gateway.metrics.value(name, provider="openai") == 1
