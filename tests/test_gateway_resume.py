"""A kept response through the gateway: a background Responses stream that breaks is
resumed on the client's behalf and arrives as the uncut stream, byte for byte, from one
generation; a refused resume ends the turn as it was; a client that leaves before it got
the id has its kept response cancelled. A real scripted server (or a canned one) behind the real
gateway; the scripted server cuts a stream after the event the test names."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from _server import CannedServer, Reply, json_reply
from railings.testing import ScriptedServer
from railings.testing.raw import RawResponse, raw_request
from tests.gateway_kept import (
    AUTH,
    BACKGROUND,
    PATH,
    RESUMES,
    SCRIPT,
    eventually,
    gateway,
    response_id,
    rows,
    whole,
)
from tests.gateway_kit import KEY


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCRIPT) as srv:
        yield srv


def test_a_background_stream_cut_after_any_event_reaches_the_client_uncut(
    server: ScriptedServer, tmp_path: Path
) -> None:
    events = len(raw_request(server.url, PATH, BACKGROUND, headers=AUTH).events())
    with gateway(server.url, tmp_path) as (url, gw, tap):
        for cut in range(events - 1):  # the last event is the proof: nothing to resume
            before = server.generations
            tap.cuts.append(cut)
            got = raw_request(url, PATH, BACKGROUND, headers=AUTH)
            rid = response_id(got)
            assert got.status == 200 and got.complete, cut
            assert got.body == whole(server, rid), cut  # no error event, nothing twice
            assert server.generations == before + 1, cut  # resumed, never generated again
            assert tap.seen() == [
                f"POST {PATH}",
                f"GET {PATH}/{rid}?stream=true&starting_after={cut}",
            ], cut
        resumed = gw.metrics.value(RESUMES, provider="openai-responses", outcome="streamed")
    assert resumed == events - 1
    entries = rows(tmp_path)
    assert [e["resumed"] for e in entries] == [[cut] for cut in range(events - 1)]
    assert {(e["outcome"], e["attempts"]) for e in entries} == {("complete", 2)}


def test_a_stream_cut_twice_is_resumed_twice(server: ScriptedServer, tmp_path: Path) -> None:
    with gateway(server.url, tmp_path) as (url, _, tap):
        tap.cuts.extend([3, 9])
        got = raw_request(url, PATH, BACKGROUND, headers=AUTH)
        rid = response_id(got)
        assert got.complete and got.body == whole(server, rid)
        assert tap.seen()[1:] == [
            f"GET {PATH}/{rid}?stream=true&starting_after=3",
            f"GET {PATH}/{rid}?stream=true&starting_after=9",
        ]
    assert server.generations == 1
    (entry,) = rows(tmp_path)
    assert entry["resumed"] == [3, 9] and entry["outcome"] == "complete"
    assert entry["tool_calls"] == ["lookup"]


def test_a_resume_keeps_the_requests_own_query(server: ScriptedServer, tmp_path: Path) -> None:
    # An endpoint that versions its API in the query (Azure's api-version) needs it on the
    # GET that resumes too.
    with gateway(server.url, tmp_path) as (url, _, tap):
        tap.cuts.append(6)
        got = raw_request(url, PATH + "?api-version=2025-04-01", BACKGROUND, headers=AUTH)
        rid = response_id(got)
        assert got.complete and got.body == whole(server, rid)
        assert tap.seen()[1] == (
            f"GET {PATH}/{rid}?stream=true&starting_after=6&api-version=2025-04-01"
        )


def test_a_stream_that_is_not_kept_is_never_resumed(server: ScriptedServer, tmp_path: Path) -> None:
    with gateway(server.url, tmp_path) as (url, gw, tap):
        tap.cuts.append(12)
        got = raw_request(url, PATH, {**BACKGROUND, "background": False}, headers=AUTH)
        assert got.complete and b"event: error" in got.events()[-1]
        assert b"response.completed" not in got.body
        assert tap.seen() == [f"POST {PATH}"]  # Partial: kept, marked, never sent again
        assert gw.metrics.value(RESUMES) == 0
    (entry,) = rows(tmp_path)
    assert entry["outcome"] == "partial" and entry["resumed"] == []


def _canned_stream(server: ScriptedServer) -> list[bytes]:
    return raw_request(server.url, PATH, BACKGROUND, headers=AUTH).events()


NOT_FOUND = {
    "error": {"message": "Response with id 'x' not found.", "type": "invalid_request_error"}
}


def test_a_refused_resume_ends_the_stream_partial_and_says_why(
    server: ScriptedServer, tmp_path: Path
) -> None:
    stream = _canned_stream(server)
    with CannedServer() as canned, gateway(canned.url, tmp_path) as (url, gw, _):
        canned.push(Reply(chunks=stream[:14], end="close"), json_reply(404, NOT_FOUND))
        got = raw_request(url, PATH, BACKGROUND, headers=AUTH)
        refused = gw.metrics.value(RESUMES, outcome="refused")
    assert got.status == 200 and got.complete
    *sent, last = got.events()
    assert b"".join(sent) == b"".join(stream[:14])  # what arrived, and no more
    error = json.loads(last.partition(b"data: ")[2])
    assert error["sequence_number"] == 14 and "again after event 13 failed" in error["message"]
    rid = response_id(got)
    assert [(r.method, r.path) for r in canned.requests] == [
        ("POST", PATH),
        ("GET", f"{PATH}/{rid}?stream=true&starting_after=13"),
    ]
    assert "content-type" not in canned.requests[1].headers  # a GET carries no body
    assert canned.requests[1].headers["authorization"] == f"Bearer {KEY}"
    assert refused == 1
    (entry,) = rows(tmp_path)
    assert entry["outcome"] == "partial" and entry["resumed"] == []
    assert "again after event 13 failed" in entry["error"] and "not found" in entry["error"]


def test_an_empty_attempt_whose_resume_is_refused_is_cancelled_then_resent(
    server: ScriptedServer, tmp_path: Path
) -> None:
    stream = _canned_stream(server)
    rid = response_id(RawResponse(body=stream[0]))
    with CannedServer() as canned, gateway(canned.url, tmp_path) as (url, _, _):
        canned.push(
            Reply(chunks=stream[:1], end="close"),  # response.created, then the break
            json_reply(404, NOT_FOUND),
            json_reply(200, {"id": rid, "status": "cancelled"}),
            Reply(chunks=stream),
        )
        got = raw_request(url, PATH, BACKGROUND, headers=AUTH)
    assert got.complete and got.body == b"".join(stream)  # only the resent stream
    assert [(r.method, r.path) for r in canned.requests] == [
        ("POST", PATH),
        ("GET", f"{PATH}/{rid}?stream=true&starting_after=0"),
        ("POST", f"{PATH}/{rid}/cancel"),  # the first generation is not paid for twice
        ("POST", PATH),
    ]


def test_resumes_spent_before_content_cancel_the_kept_response(
    server: ScriptedServer, tmp_path: Path
) -> None:
    # Every stream of it ends after response.created: the policy's 4 attempts are one
    # POST and three resumes, then the client gets the error event, and the response
    # nobody will read is cancelled.
    with gateway(server.url, tmp_path) as (url, _, tap):
        tap.cuts.extend([0, 0, 0, 0])
        got = raw_request(url, PATH, BACKGROUND, headers=AUTH)
        rid = response_id(got)
        assert got.complete and b"event: error" in got.events()[-1]
        assert [line.split(" ")[0] for line in tap.seen()] == ["POST", "GET", "GET", "GET", "POST"]
        assert eventually(lambda: rid in server.cancelled)
    assert server.generations == 1
    (entry,) = rows(tmp_path)
    assert entry["attempts"] == 4 and entry["resumed"] == [0, 0, 0]


def _event(obj: dict[str, object]) -> bytes:
    return f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n".encode()


RID = "resp_kept0001"
OPENING = [
    _event(
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {"id": RID, "model": "m", "status": "queued", "background": True},
        }
    ),
    _event(
        {
            "type": "response.in_progress",
            "sequence_number": 1,
            "response": {"id": RID, "model": "m", "status": "in_progress"},
        }
    ),
]
CONTENT = [
    _event(
        {
            "type": "response.output_item.added",
            "sequence_number": 2,
            "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
        }
    ),
    _event(
        {
            "type": "response.output_text.delta",
            "sequence_number": 3,
            "output_index": 0,
            "item_id": "msg_1",
            "content_index": 0,
            "delta": "Hello",
        }
    ),
]


def _leave(url: str, until: bytes) -> bytes:
    """Send a background request, read until ``until`` arrived, and hang up."""
    port = int(url.rsplit(":", 1)[1])
    payload = json.dumps(BACKGROUND).encode()
    head = (
        f"POST {PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"authorization: Bearer {KEY}\r\ncontent-length: {len(payload)}\r\n\r\n"
    )
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head.encode() + payload)
        while until not in received:
            received += sock.recv(65536)
    return received


def test_a_client_that_leaves_before_it_got_the_id_has_the_response_cancelled(
    tmp_path: Path,
) -> None:
    # The upstream sends the response's opening events, then nothing: the gateway holds
    # them (no content yet), so the client leaves without ever seeing the id.
    with CannedServer() as upstream, gateway(upstream.url, tmp_path) as (url, gw, _):
        upstream.push(Reply(chunks=OPENING, end="hang"), json_reply(200, {"id": RID}))
        received = _leave(url, b"\r\n\r\n")  # the response head, and no event
        assert RID.encode() not in received
        assert eventually(lambda: len(upstream.requests) == 2)
        cancel = upstream.requests[1]
        assert (cancel.method, cancel.path) == ("POST", f"{PATH}/{RID}/cancel")
        assert eventually(
            lambda: gw.metrics.value("railings_gateway_client_disconnects_total") == 1
        )
    (entry,) = rows(tmp_path)
    assert entry["outcome"] == "client_gone"


def test_a_client_that_leaves_after_it_got_the_id_keeps_its_response(tmp_path: Path) -> None:
    # Content reached the client, and with it the response's id: the response is the
    # client's to read again or to cancel, as background mode intends.
    with CannedServer() as upstream, gateway(upstream.url, tmp_path) as (url, gw, _):
        upstream.push(Reply(chunks=OPENING + CONTENT, end="hang"))
        received = _leave(url, b"Hello")
        assert RID.encode() in received
        assert eventually(
            lambda: gw.metrics.value("railings_gateway_client_disconnects_total") == 1
        )
    assert [(r.method, r.path) for r in upstream.requests] == [("POST", PATH)]
    (entry,) = rows(tmp_path)
    assert entry["outcome"] == "client_gone"
