"""Background responses on the scripted server's Responses API, and through the fault proxy.

A ``background: true`` response is generated once, at its POST, and kept: a later
``GET /v1/responses/{id}?stream=true&starting_after=N`` sends the same events again from
N + 1, a cancel cuts it where it had got, and ``x-railings-cut-after`` makes a stream end
without its last chunk so that a client has to resume.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from railings.testing import FaultProxy, Script, ScriptedServer
from railings.testing.background import LIMIT
from railings.testing.raw import RawResponse, raw_request

SCRIPT: dict[str, Any] = {
    "seed": 21,
    "chunk_size": 6,
    "turns": [
        {
            "thinking": "Two steps.",
            "text": "Resumable answers come back whole.",
            "tool_calls": [{"name": "lookup", "arguments": {"q": "background"}}],
        }
    ],
}
PATH = "/v1/responses"
AUTH = {"authorization": "Bearer sk-test"}


def _body(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "input": "Hi", "stream": True, "background": True, **extra}


def _post(url: str, headers: dict[str, str] | None = None, **extra: Any) -> RawResponse:
    return raw_request(url, PATH, _body(**extra), headers={**AUTH, **(headers or {})})


def _get(url: str, target: str, headers: dict[str, str] | None = None) -> RawResponse:
    return raw_request(url, target, method="GET", headers={**AUTH, **(headers or {})})


def _data(event: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = json.loads(event.partition(b"\ndata: ")[2])
    return obj


def _response_id(resp: RawResponse) -> str:
    return str(_data(resp.events()[0])["response"]["id"])


def _sequence(resp: RawResponse) -> list[int]:
    return [_data(event)["sequence_number"] for event in resp.events()]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCRIPT) as srv:
        yield srv


def test_a_resume_from_every_event_sends_the_rest_of_the_same_stream(
    server: ScriptedServer,
) -> None:
    post = _post(server.url)
    assert post.status == 200 and post.complete
    events = post.events()
    assert _sequence(post) == list(range(len(events)))
    assert _data(events[-1])["type"] == "response.completed"
    response_id = _response_id(post)
    for n in range(len(events)):
        resumed = _get(server.url, f"{PATH}/{response_id}?stream=true&starting_after={n}")
        assert resumed.status == 200 and resumed.complete
        assert resumed.headers["content-type"].startswith("text/event-stream")
        assert resumed.body == b"".join(events[n + 1 :])
    whole = _get(server.url, f"/responses/{response_id}?stream=true")
    assert whole.body == post.body
    assert server.generations == 1  # every stream after the POST was the kept one
    gets = [r for r in server.requests if r.method == "GET"]
    assert len(gets) == len(events) + 1
    assert gets[0].path == f"{PATH}/{response_id}" and gets[0].status == 200
    assert gets[3].query == {"stream": "true", "starting_after": "3"}


def test_a_background_response_says_so(server: ScriptedServer) -> None:
    events = _post(server.url).events()
    for event in (events[0], events[1], events[-1]):
        assert _data(event)["response"]["background"] is True
    plain = raw_request(server.url, PATH, _body(background=False), headers=AUTH)
    assert _data(plain.events()[0])["response"]["background"] is False


def test_a_cut_stream_is_resumed_twice_into_the_whole_stream(server: ScriptedServer) -> None:
    post = _post(server.url, {"x-railings-cut-after": "3"})
    assert post.status == 200 and not post.complete  # closed without the last chunk
    assert _sequence(post) == [0, 1, 2, 3]
    response_id = _response_id(post)
    target = f"{PATH}/{response_id}?stream=true&starting_after="
    second = _get(server.url, target + "3", {"x-railings-cut-after": "9"})
    assert not second.complete and _sequence(second) == list(range(4, 10))
    third = _get(server.url, target + "9")
    assert third.complete
    whole = _get(server.url, f"{PATH}/{response_id}?stream=true")
    assert post.body + second.body + third.body == whole.body
    assert _data(third.events()[-1])["type"] == "response.completed"
    assert server.generations == 1


def test_a_cut_behind_the_resume_point_sends_nothing(server: ScriptedServer) -> None:
    response_id = _response_id(_post(server.url))
    resumed = _get(
        server.url,
        f"{PATH}/{response_id}?stream=true&starting_after=5",
        {"x-railings-cut-after": "2"},
    )
    assert resumed.status == 200 and resumed.body == b"" and not resumed.complete


def test_an_unknown_response_is_not_found(server: ScriptedServer) -> None:
    for resp in (
        _get(server.url, f"{PATH}/resp_x?stream=true&starting_after=2"),
        raw_request(server.url, f"{PATH}/resp_x/cancel", headers=AUTH),
    ):
        assert resp.status == 404
        assert json.loads(resp.body) == {
            "error": {
                "message": "Response with id 'resp_x' not found.",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        }
    assert resp.headers["x-request-id"].startswith("req_")


def test_a_response_not_in_background_is_not_streamed_again(server: ScriptedServer) -> None:
    plain = raw_request(server.url, PATH, _body(background=False), headers=AUTH)
    response_id = _response_id(plain)
    streamed = _get(server.url, f"{PATH}/{response_id}?stream=true")
    cancelled = raw_request(server.url, f"{PATH}/{response_id}/cancel", headers=AUTH)
    for resp in (streamed, cancelled):
        assert resp.status == 400
        error = json.loads(resp.body)["error"]
        assert error["type"] == "invalid_request_error"
        assert "not created with background=true" in error["message"]
    assert server.cancelled == frozenset()


def test_background_needs_store(server: ScriptedServer) -> None:
    resp = _post(server.url, store=False)
    assert resp.status == 400
    assert json.loads(resp.body)["error"]["message"] == (
        "Invalid value for 'store': background responses require store=true."
    )
    assert server.generations == 0


def test_a_cancel_cuts_the_response_where_it_had_got(server: ScriptedServer) -> None:
    post = _post(server.url, {"x-railings-cut-after": "4"})
    response_id = _response_id(post)
    cancel = raw_request(server.url, f"{PATH}/{response_id}/cancel", headers=AUTH)
    assert cancel.status == 200
    cancelled = json.loads(cancel.body)
    assert cancelled["id"] == response_id and cancelled["status"] == "cancelled"
    assert cancelled["background"] is True
    assert server.cancelled == {response_id}
    # Idempotent: a second cancel answers the same.
    again = raw_request(server.url, f"{PATH}/{response_id}/cancel", headers=AUTH)
    assert json.loads(again.body) == cancelled
    # A later stream has only what was sent before the cancel, and no terminal event.
    resumed = _get(server.url, f"{PATH}/{response_id}?stream=true&starting_after=2")
    assert resumed.complete and _sequence(resumed) == [3, 4]
    retrieved = _get(server.url, f"{PATH}/{response_id}")
    assert json.loads(retrieved.body)["status"] == "cancelled"
    assert [r.path for r in server.requests if r.path.endswith("/cancel")] == [
        f"{PATH}/{response_id}/cancel"
    ] * 2


def test_cancelling_a_finished_response_returns_it_as_it_is(server: ScriptedServer) -> None:
    post = _post(server.url)
    cancel = raw_request(server.url, f"/responses/{_response_id(post)}/cancel", headers=AUTH)
    assert cancel.status == 200
    assert json.loads(cancel.body) == _data(post.events()[-1])["response"]
    assert server.cancelled == frozenset()


def test_a_background_request_without_stream_is_queued_then_retrieved(
    server: ScriptedServer,
) -> None:
    queued = json.loads(_post(server.url, stream=False).body)
    assert queued["status"] == "queued" and queued["output"] == []
    done = json.loads(_get(server.url, f"{PATH}/{queued['id']}").body)
    assert done["status"] == "completed" and done["id"] == queued["id"]
    assert [item["type"] for item in done["output"]] == ["reasoning", "message", "function_call"]
    resumed = _get(server.url, f"{PATH}/{queued['id']}?stream=true&starting_after=0")
    assert _sequence(resumed)[0] == 1 and resumed.complete
    assert server.generations == 1


def test_a_bad_starting_after_and_a_wrong_method_are_refused(server: ScriptedServer) -> None:
    response_id = _response_id(_post(server.url))
    bad = _get(server.url, f"{PATH}/{response_id}?stream=true&starting_after=x")
    assert bad.status == 400 and "starting_after" in json.loads(bad.body)["error"]["message"]
    assert raw_request(server.url, f"{PATH}/{response_id}", headers=AUTH).status == 405


def test_the_key_is_checked_on_a_resume() -> None:
    with ScriptedServer(Script.from_dict({**SCRIPT, "api_key": "sk-test"})) as srv:
        response_id = _response_id(_post(srv.url))
        resp = raw_request(srv.url, f"{PATH}/{response_id}?stream=true", method="GET")
    assert resp.status == 401


def test_the_sdk_resumes_a_cut_background_stream(server: ScriptedServer) -> None:
    client = openai.OpenAI(
        base_url=server.openai_base_url,
        api_key="sk-test",
        max_retries=0,
        _strict_response_validation=True,
    )
    seen: list[Any] = []
    with pytest.raises(openai.APIConnectionError):
        for event in client.responses.create(
            model="m",
            input="Hi",
            stream=True,
            background=True,
            extra_headers={"x-railings-cut-after": "5"},
        ):
            seen.append(event)
    last = seen[-1].sequence_number
    rest = list(client.responses.retrieve(seen[0].response.id, stream=True, starting_after=last))
    assert [e.sequence_number for e in seen + rest] == list(range(len(seen) + len(rest)))
    assert rest[-1].type == "response.completed"
    assert rest[-1].response.output_text == "Resumable answers come back whole."
    cancelled = client.responses.cancel(seen[0].response.id)
    assert cancelled.status == "completed"  # finished: returned as it is


def test_the_oldest_kept_response_is_dropped_past_the_limit() -> None:
    with ScriptedServer(Script.text("ok", seed=2)) as srv:
        ids = [json.loads(_post(srv.url, stream=False).body)["id"] for _ in range(LIMIT + 1)]
        first = _get(srv.url, f"{PATH}/{ids[0]}?stream=true")
        second = _get(srv.url, f"{PATH}/{ids[1]}?stream=true")
    assert first.status == 404 and second.status == 200


def test_a_cut_works_on_every_stream_not_only_background_ones(server: ScriptedServer) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    resp = raw_request(
        server.url, "/v1/chat/completions", body, headers={"x-railings-cut-after": "1"}
    )
    assert resp.status == 200 and not resp.complete and len(resp.events()) == 2


# -- through the fault proxy ---------------------------------------------------------------


def test_the_proxy_cuts_a_background_stream_and_forwards_its_resume(
    server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    with FaultProxy(server.url, "truncate:events=3,end=abrupt") as proxy:
        cut = _post(proxy.url)
        assert not cut.complete and _sequence(cut) == [0, 1, 2]
        response_id = _response_id(cut)
        target = f"{PATH}/{response_id}?stream=true&starting_after=2"
        with caplog.at_level("INFO", logger="railings.testing.proxy"):
            rest = _get(proxy.url, target, {"x-railings-fault": "none"})
            again = _get(proxy.url, target)  # the proxy's fault applies to the GET too
        log = proxy.log
    whole = _get(server.url, f"{PATH}/{response_id}?stream=true")
    assert rest.complete and cut.body + rest.body == whole.body
    assert not again.complete and _sequence(again) == [3, 4, 5]
    assert [(r.method, r.path) for r in log[1:]] == [("GET", f"{PATH}/{response_id}")] * 2
    assert log[1].status == 200 and log[2].events_out == 3
    assert "starting_after" not in caplog.text and f"GET {PATH}/{response_id}" in caplog.text
    assert server.generations == 1


def test_the_proxy_forwards_a_cancel(server: ScriptedServer) -> None:
    with FaultProxy(server.url) as proxy:
        post = _post(server.url, {"x-railings-cut-after": "1"})
        response_id = _response_id(post)
        cancel = raw_request(proxy.url, f"{PATH}/{response_id}/cancel", headers=AUTH)
    assert cancel.status == 200 and json.loads(cancel.body)["status"] == "cancelled"
    assert server.cancelled == {response_id}


def test_an_error_injected_into_a_resumed_stream_continues_its_numbering(
    server: ScriptedServer,
) -> None:
    response_id = _response_id(_post(server.url))
    with FaultProxy(server.url, "error_event:events=2,type=error") as proxy:
        resumed = _get(proxy.url, f"{PATH}/{response_id}?stream=true&starting_after=4")
    events = resumed.events()
    assert _sequence(resumed) == [5, 6, 7]
    assert _data(events[-1])["type"] == "error"
