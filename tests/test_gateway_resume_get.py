"""A client's own resume of a kept response, ``GET .../responses/{id}?stream=true``
(``&starting_after=N``), through the gateway: forwarded as a GET, query and all, and
judged as a Responses stream that starts after event N; Empty is sent again, Partial is
not. A retrieval and a cancel pass through."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from railings.testing import ScriptedServer
from railings.testing.raw import raw_request
from tests.gateway_kept import AUTH, BACKGROUND, PATH, SCRIPT, gateway, response_id, rows
from tests.gateway_kit import KEY


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCRIPT) as srv:
        yield srv


def test_a_clients_own_resume_is_judged_complete(server: ScriptedServer, tmp_path: Path) -> None:
    post = raw_request(server.url, PATH, BACKGROUND, headers=AUTH)
    rid, events = response_id(post), post.events()
    text = next(i for i, e in enumerate(events) if b"output_text.delta" in e)
    with gateway(server.url, tmp_path) as (url, gw, tap):
        target = f"{PATH}/{rid}?stream=true&starting_after={text - 1}"
        got = raw_request(url, target, method="GET", headers=AUTH)
        # No response.created: the stream starts at the event after the point.
        assert got.status == 200 and got.complete and got.body == b"".join(events[text:])
        plain = raw_request(url, f"/responses/{rid}?stream=true", method="GET", headers=AUTH)
        assert plain.complete and plain.body == post.body
        assert tap.seen() == [f"GET {target}", f"GET /responses/{rid}?stream=true"]
        complete = gw.metrics.value(
            "railings_gateway_streams_total", provider="openai-responses", outcome="complete"
        )
        assert complete == 2
    entries = rows(tmp_path)
    assert [(e["method"], e["outcome"], e["stream"]) for e in entries] == [
        ("GET", "complete", True),
        ("GET", "complete", True),
    ]
    assert entries[0]["tool_calls"] == ["lookup"]


def test_a_clients_own_resume_reads_its_text_with_the_openai_sdk(
    server: ScriptedServer, tmp_path: Path
) -> None:
    openai = pytest.importorskip("openai")
    post = raw_request(server.url, PATH, BACKGROUND, headers=AUTH)
    rid, events = response_id(post), post.events()
    first_text = next(i for i, e in enumerate(events) if b"output_text.delta" in e)
    with gateway(server.url, tmp_path) as (url, _, _):
        client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
        stream = client.responses.retrieve(rid, stream=True, starting_after=first_text - 1)
        seen = list(stream)
    assert seen[0].type == "response.output_text.delta" and seen[-1].type == "response.completed"
    text = "".join(e.delta for e in seen if e.type == "response.output_text.delta")
    assert text == "Resumed answers come back whole."
    (entry,) = rows(tmp_path)
    assert entry["outcome"] == "complete"


def test_a_clients_own_resume_empty_is_sent_again_partial_is_not(
    server: ScriptedServer, tmp_path: Path
) -> None:
    post = raw_request(server.url, PATH, BACKGROUND, headers=AUTH)
    rid, events = response_id(post), post.events()
    target = f"{PATH}/{rid}?stream=true&starting_after=5"
    with gateway(server.url, tmp_path) as (url, _, tap):
        tap.cuts.append(5)  # behind the point: the GET is cut before its first event
        empty = raw_request(url, target, method="GET", headers=AUTH)
        assert empty.complete and empty.body == b"".join(events[6:])
        assert tap.seen() == [f"GET {target}"] * 2  # a GET is idempotent: nothing billed
        tap.cuts.append(14)
        partial = raw_request(url, target, method="GET", headers=AUTH)
        assert partial.complete and b"".join(partial.events()[:-1]) == b"".join(events[6:15])
        assert b"event: error" in partial.events()[-1]
        assert tap.seen() == [f"GET {target}"]  # content reached the client: not again
    assert [e["outcome"] for e in rows(tmp_path)] == ["complete", "partial"]


def test_a_retrieval_and_a_cancel_pass_through(server: ScriptedServer, tmp_path: Path) -> None:
    rid = response_id(raw_request(server.url, PATH, BACKGROUND, headers=AUTH))
    with gateway(server.url, tmp_path) as (url, gw, _):
        got = raw_request(url, f"{PATH}/{rid}", method="GET", headers=AUTH)
        assert got.status == 200 and json.loads(got.body)["id"] == rid
        cancel = raw_request(url, f"{PATH}/{rid}/cancel", headers=AUTH)
        assert cancel.status == 200 and json.loads(cancel.body)["id"] == rid
        assert gw.metrics.value("railings_gateway_streams_total") == 0
    assert rows(tmp_path) == []
