"""What the gateway carries between its clients and the upstream, and between requests.

Every case runs a real gateway (its default upstream transport) in front of a real
upstream on 127.0.0.1 that records the headers it received.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import httpx2
import pytest

from _server import DONE, CannedServer, Reply, json_reply, openai_text
from gateway_kit import NO_WAITS, body
from railings.gateway import app
from railings.gateway.serve import ServingThread
from railings.gateway.upstream import POOLS, hop_by_hop, request_headers, response_headers

CHAT = "/v1/chat/completions"
ANSWER = {
    "id": "c",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "hi"},
            "finish_reason": "stop",
        }
    ],
}


@contextlib.contextmanager
def gateway(server: CannedServer) -> Iterator[httpx2.Client]:
    """A client of a real gateway in front of ``server``."""
    gateway = app(server.url, journal=False, retry=NO_WAITS)
    with ServingThread(gateway) as url, httpx2.Client(base_url=url, timeout=10) as c:
        yield c


# -- no state shared between clients -----------------------------------------------------


def test_a_cookie_set_for_one_client_never_goes_out_with_anothers_request() -> None:
    with CannedServer() as server:
        cookie = ("set-cookie", "session=client-a-only; Path=/")
        server.push(json_reply(200, {"data": []}, cookie), json_reply(200, ANSWER, cookie))
        server.push(*[json_reply(200, {"data": []}) for _ in range(POOLS)])
        server.push(json_reply(200, {"data": []}))
        with ServingThread(app(server.url, journal=False, retry=NO_WAITS)) as url:
            with httpx2.Client(base_url=url, timeout=10) as a:
                first = a.get("/v1/models", headers={"x-client": "a", "authorization": "Bearer k"})
                chat = a.post(CHAT, json=body("openai", stream=False))
                assert first.headers["set-cookie"] == "session=client-a-only; Path=/"
                assert chat.headers["set-cookie"] == "session=client-a-only; Path=/"
            # Client B: each request takes the next pool, so POOLS requests pass through
            # the pools that received client A's cookie.
            with httpx2.Client(base_url=url, timeout=10) as b:
                for _ in range(POOLS):
                    assert b.get("/v1/models").status_code == 200
                # B's own cookie goes out as B sent it, and only it.
                b.get("/v1/models", headers={"cookie": "mine=b"})
    later = server.requests[2:]
    assert len(later) == POOLS + 1
    for request in later[:-1]:
        assert "cookie" not in request.headers
        assert "authorization" not in request.headers
        assert "x-client" not in request.headers
    assert later[-1].headers["cookie"] == "mine=b"


# -- hop-by-hop headers (RFC 9110 §7.6.1) -------------------------------------------------

HOPS = {
    "connection": "keep-alive, x-secret-hop, X-Other-Hop",
    "x-secret-hop": "not for the next hop",
    "x-other-hop": "nor this",
    "keep-alive": "timeout=5",
    "proxy-connection": "keep-alive",
    "te": "trailers",
    "trailer": "x-checksum",
    "upgrade": "example/1",
    "proxy-authorization": "Basic cHJveHk6c2VjcmV0",  # the client's proxy's, not the upstream's
    "proxy-authenticate": "Basic realm=proxy",
}
GONE = ["x-secret-hop", "x-other-hop", "keep-alive", "proxy-connection", "te", "trailer", "upgrade",
        "proxy-authorization", "proxy-authenticate"]  # fmt: skip


@pytest.mark.parametrize("route", ["pass-through", "model-json", "model-stream"])
def test_hop_by_hop_request_headers_stop_at_the_gateway(route: str) -> None:
    with CannedServer() as server:
        server.push(
            json_reply(200, {"data": []})
            if route == "pass-through"
            else json_reply(200, ANSWER)
            if route == "model-json"
            else Reply(chunks=openai_text(["hi"]))
        )
        with gateway(server) as c:
            headers = {**HOPS, "x-end-to-end": "kept"}
            if route == "pass-through":
                got = c.get("/v1/models", headers=headers)
            else:
                got = c.post(CHAT, json=body("openai", stream=route == "model-stream"),
                             headers=headers)  # fmt: skip
            assert got.status_code == 200
    seen = server.requests[0].headers
    assert seen["x-end-to-end"] == "kept"
    for name in GONE:
        assert name not in seen, name
    assert "x-secret-hop" not in seen.get("connection", "")


@pytest.mark.parametrize("route", ["pass-through", "model-json", "model-stream"])
def test_hop_by_hop_response_headers_stop_at_the_gateway(route: str) -> None:
    hops = (*HOPS.items(), ("x-end-to-end", "kept"))
    with CannedServer() as server:
        if route == "model-stream":
            server.push(Reply(chunks=openai_text(["hi"]),
                              headers=(("content-type", "text/event-stream"), *hops)))  # fmt: skip
        else:
            server.push(json_reply(200, {"data": []} if route == "pass-through" else ANSWER, *hops))
        with gateway(server) as c:
            if route == "pass-through":
                got = c.get("/v1/models")
            else:
                got = c.post(CHAT, json=body("openai", stream=route == "model-stream"))
    assert got.status_code == 200
    assert got.headers["x-end-to-end"] == "kept"
    for name in GONE:
        assert name not in got.headers, name
    assert "x-secret-hop" not in got.headers.get("connection", "").lower()
    if route == "model-stream":
        assert got.content.endswith(DONE)
    else:
        assert json.loads(got.content)


def test_the_fields_connection_names_are_hop_by_hop_in_any_spelling() -> None:
    raw = [
        (b"Connection", b"close ,X-A"),
        (b"connection", b"x-b,,"),
        (b"X-A", b"1"),
        (b"x-b", b"2"),
        (b"x-c", b"3"),
        (b"Content-Length", b"5"),
    ]
    assert {b"x-a", b"x-b", b"close"} <= hop_by_hop(raw)
    assert request_headers(raw, watched=False) == [(b"x-c", b"3")]
    assert response_headers(raw, keep_length=True) == [(b"x-c", b"3"), (b"content-length", b"5")]
    # The length of a body relayed as it came frames the bytes the client gets: kept.
    named = [(b"connection", b"content-length"), (b"content-length", b"5")]
    assert response_headers(named, keep_length=True) == [(b"content-length", b"5")]
    assert response_headers(named, keep_length=False) == []
