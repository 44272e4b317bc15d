"""The gateway on a real socket, in front of the scripted server and the fault proxy:
every fault class, judged as the core judges the bytes the gateway read upstream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from railings.gateway.serve import ServingThread
from railings.gateway.shapes import CUT_CODE
from railings.replay import replay
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.testing.raw import RawResponse, raw_request
from railings.transport.config import Timeouts
from railings.turn.model import Outcome
from tests.gateway_kit import KEY, NO_WAITS, PATHS, TEXT, body, headers, running

PROVIDERS = ("openai", "anthropic", "openai-responses")
CUT_SCRIPT = {
    "api_key": KEY,
    "turns": [
        {
            "text": "Writing it.",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "a.txt", "content": {"$filler": 600}}}
            ],
        }
    ],
}
PROOFS = {
    "openai": b"data: [DONE]",
    "anthropic": b"event: message_stop",
    "openai-responses": b"event: response.completed",
}


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(Script.from_dict({"api_key": KEY, "turns": [{"text": TEXT}]})) as s:
        yield s


@pytest.fixture()
def proxy(server: ScriptedServer) -> Iterator[FaultProxy]:
    with FaultProxy(server.url) as p:
        yield p


# Each fault class of railings.testing.faults; the Empty ones cut before any content, once.
FAULTS = (
    "none",
    "truncate:events=1,times=1",
    "truncate:events=5",
    "truncate:bytes=700,end=abrupt",
    "drop_terminator",
    "idle:events=2,seconds=0.2",
    "reorder:event=3",
    "duplicate:event=3",
    "reset:events=1,times=1",
    "reset:events=5",
    "close_after_terminator",
    "drip:delay=0,size=7",
    "status:code=429,times=1",
    "error_event:events=1,times=1",
    "error_event:events=5",
    "corrupt:event=5",
    "corrupt:event=5,kind=utf8",
)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", FAULTS)
def test_every_fault_class_is_judged_as_the_core_judges_it(
    proxy: FaultProxy, tmp_path: Path, provider: str, fault: str
) -> None:
    with running(proxy.url, tmp_path) as (url, gateway, tee):
        got = raw_request(url, PATHS[provider], body(provider), headers=headers(provider, fault))
        metrics = gateway.metrics
    final = bytes(tee.bodies[-1])
    if fault.startswith("status"):
        assert got.status == 429 and got.body == final  # passed through: the SDK retries it
        return
    assert got.status == 200 and got.complete  # the gateway always ends its response
    first = replay(bytes(tee.bodies[0]), provider=provider).turn
    verdict = replay(final, provider=provider).turn
    if first.outcome is not Outcome.EMPTY:
        assert len(tee.bodies) == 1
    elif verdict.outcome is Outcome.EMPTY:
        assert len(tee.bodies) == NO_WAITS.attempts  # every attempt Empty: then the error
    else:
        assert len(tee.bodies) == 2  # resent once, transparently
    if verdict.outcome is Outcome.COMPLETE:
        assert got.body == final  # byte for byte, the retried stream only
        outcome = "complete"
    else:
        outcome = "partial" if verdict.outcome is Outcome.PARTIAL else "empty"
        assert PROOFS[provider] not in got.body
        assert got.body.endswith(b"\n\n")
        last = got.body[:-2].rfind(b"\n\n") + 2
        assert final.startswith(got.body[:last]) or b"error" in got.body[last:]
        assert b"error" in got.body[last:]  # the provider's own error event, or the gateway's
    assert metrics.value("railings_gateway_streams_total", provider=provider, outcome=outcome) == 1
    attempts = metrics.value("railings_gateway_upstream_attempts_total", provider=provider)
    assert attempts == len(tee.bodies)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_cut_tool_call_is_refused_in_the_providers_shape(tmp_path: Path, provider: str) -> None:
    with (
        ScriptedServer(Script.from_dict(CUT_SCRIPT)) as upstream,
        running(upstream.url, tmp_path) as (url, gateway, tee),
    ):
        got = raw_request(
            url, PATHS[provider], body(provider, max_tokens=40), headers=headers(provider)
        )
    final = bytes(tee.bodies[-1])
    assert replay(final, provider=provider).verdicts[0].reason.value == "truncated"  # type: ignore[union-attr]
    assert PROOFS[provider].replace(b"completed", b"incomplete") not in got.body
    assert PROOFS[provider] not in got.body
    at = got.body.rfind(b"data: ")
    error = json.loads(got.body[at + 6 :])
    text = json.dumps(error)
    assert "write_file" in text and "cut by the output limit" in text
    assert final.startswith(got.body[: got.body.rfind(b"\n\n", 0, at) + 2])
    assert (
        gateway.metrics.value(
            "railings_gateway_streams_total", provider=provider, outcome="refused"
        )
        == 1
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cut_calls_pass_leaves_the_stream_unchanged(tmp_path: Path, provider: str) -> None:
    with (
        ScriptedServer(Script.from_dict(CUT_SCRIPT)) as upstream,
        running(upstream.url, tmp_path, cut_calls="pass") as (url, _, tee),
    ):
        got = raw_request(
            url, PATHS[provider], body(provider, max_tokens=40), headers=headers(provider)
        )
    assert got.body == bytes(tee.bodies[-1])


def _check_refused(got: RawResponse, provider: str) -> None:
    assert got.status == 502 and got.headers["x-should-retry"] == "false"
    error = json.loads(got.body)["error"]
    assert "write_file" in error["message"] and "cut by the output limit" in error["message"]
    if provider != "anthropic":
        assert error["code"] == CUT_CODE


@pytest.mark.parametrize("provider", ["openai", "openai-responses"])
def test_a_non_streamed_cut_call_is_answered_with_an_error_body(
    tmp_path: Path, provider: str
) -> None:
    with (
        ScriptedServer(Script.from_dict(CUT_SCRIPT)) as upstream,
        running(upstream.url, tmp_path) as (url, gateway, _),
    ):
        path, ask = PATHS[provider], headers(provider)
        got = raw_request(url, path, body(provider, stream=False, max_tokens=40), headers=ask)
        passed = raw_request(url, path, body(provider, stream=False), headers=ask)
    _check_refused(got, provider)
    assert passed.status == 200 and json.loads(passed.body)  # a whole answer passes
    assert (
        gateway.metrics.value(
            "railings_gateway_answers_total", provider=provider, outcome="refused"
        )
        == 1
    )


# The scripted server leaves a cut tool_use out of a non-streamed Message (as the API
# does with unparseable input); the SDK accumulators keep it with partial input. That
# shape is served here by a one-route ASGI app.
CUT_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [
        {"type": "text", "text": "Writing it."},
        {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {"path": "a"}},
    ],
    "stop_reason": "max_tokens",
    "stop_sequence": None,
    "usage": {"input_tokens": 5, "output_tokens": 40},
}


async def _message_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    payload = json.dumps(CUT_MESSAGE).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def test_a_non_streamed_anthropic_message_cut_in_a_tool_use_is_refused(tmp_path: Path) -> None:
    with ServingThread(_message_app) as upstream, running(upstream, tmp_path) as (url, _, _):
        got = raw_request(
            url, PATHS["anthropic"], body("anthropic", stream=False), headers=headers("anthropic")
        )
    _check_refused(got, "anthropic")
    assert json.loads(got.body)["type"] == "error"


def test_other_paths_pass_through_untouched(server: ScriptedServer, tmp_path: Path) -> None:
    with running(server.url, tmp_path) as (url, _, _):
        via = raw_request(url, "/v1/models?limit=2", method="GET", headers=headers("openai"))
        health = httpx2.get(url + "/_railings/health")
    direct = raw_request(server.url, "/v1/models?limit=2", method="GET", headers=headers("openai"))
    assert via.status == direct.status
    assert json.loads(via.body)["error"]["type"] == json.loads(direct.body)["error"]["type"]
    assert health.status_code == 200


def test_an_unreachable_upstream_is_a_502_in_the_providers_shape(tmp_path: Path) -> None:
    with running("http://127.0.0.1:9", tmp_path) as (url, gateway, _):
        got = raw_request(url, PATHS["openai"], body("openai"), headers=headers("openai"))
    assert got.status == 502
    assert "upstream failed" in json.loads(got.body)["error"]["message"]
    assert gateway.metrics.value("railings_gateway_upstream_attempts_total", provider="openai") == 4


def test_silence_before_content_waits_for_first_byte_and_after_it_for_idle(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    timeouts = Timeouts(idle=2.0, first_byte=60.0)
    with running(proxy.url, tmp_path, timeouts=timeouts) as (url, gateway, tee):
        path, ask = PATHS["openai"], body("openai")
        # After the role chunk, 4 s of silence: a model thinking, not a dead stream.
        thinking = raw_request(url, path, ask, headers=headers("openai", "idle:events=1,seconds=4"))
        # After content, 6 s of silence: past the 2 s idle gap, the stream is cut.
        stalled = raw_request(url, path, ask, headers=headers("openai", "idle:events=3,seconds=6"))
    assert thinking.body == bytes(tee.bodies[0]) and b"[DONE]" in thinking.body
    assert b"[DONE]" not in stalled.body
    error = json.loads(stalled.body[:-2].rsplit(b"\n\n", 1)[-1].removeprefix(b"data: "))
    assert "stream went idle" in error["error"]["message"]
    assert len(tee.bodies) == 2  # neither was resent
    assert (
        gateway.metrics.value(
            "railings_gateway_streams_total", provider="openai", outcome="partial"
        )
        == 1
    )


def test_request_headers_and_keys_go_upstream_as_they_came(
    server: ScriptedServer, tmp_path: Path
) -> None:
    sent = {
        "authorization": f"Bearer {KEY}",
        "x-api-key": KEY,
        "api-key": KEY,
        "x-custom": "kept",
        "accept-encoding": "gzip",
    }
    with running(server.url, tmp_path) as (url, _, tee):
        raw_request(url, PATHS["openai"], body("openai"), headers=sent)
        raw_request(url, "/v1/models", method="GET", headers=sent)
    model, other = (r.headers for r in tee.requests)
    for name in ("authorization", "x-api-key", "api-key", "x-custom"):
        assert model[name] == other[name] == sent[name]
    assert model["accept-encoding"] == "identity"  # the judge reads the bytes it passes on
    assert other["accept-encoding"] == "gzip"  # elsewhere: untouched
    assert other.get("connection") != "close"  # hop-by-hop: not forwarded
    assert tee.requests[0].url.path == "/v1/chat/completions"


def test_the_upstream_path_prefix_comes_before_the_request_path(
    server: ScriptedServer, tmp_path: Path
) -> None:
    with running(server.url + "/v1/", tmp_path) as (url, _, tee):
        got = raw_request(url, "/chat/completions?x=1", body("openai"), headers=headers("openai"))
    assert got.status == 200 and b"[DONE]" in got.body
    assert str(tee.requests[0].url) == server.url + "/v1/chat/completions?x=1"


def test_a_client_that_leaves_stops_the_upstream_stream(proxy: FaultProxy, tmp_path: Path) -> None:
    import socket
    import time

    with running(proxy.url, tmp_path) as (url, gateway, _):
        port = int(url.rsplit(":", 1)[1])
        payload = json.dumps(body("openai")).encode()
        head = (
            f"POST {PATHS['openai']} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            f"authorization: Bearer {KEY}\r\nx-railings-fault: drip:delay=0.05,size=16\r\n"
            f"content-length: {len(payload)}\r\n\r\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(head + payload)
            received = b""
            while b"Hello" not in received and b"answer" not in received:
                received += sock.recv(4096)  # some content has arrived: now leave
        deadline = time.monotonic() + 60  # a guard against a hang, not a measurement
        while time.monotonic() < deadline and not (proxy.log and proxy.log[-1].done):
            time.sleep(0.05)
        record = proxy.log[-1]
        assert record.done  # the gateway closed its upstream stream
        assert record.bytes_out < record.bytes_in  # and stopped sending the rest
        while time.monotonic() < deadline and not gateway.metrics.value(
            "railings_gateway_client_disconnects_total", provider="openai"
        ):
            time.sleep(0.05)
    assert (
        gateway.metrics.value("railings_gateway_client_disconnects_total", provider="openai") == 1
    )
    assert (
        gateway.metrics.value(
            "railings_gateway_streams_total", provider="openai", outcome="complete"
        )
        == 0
    )


def test_a_final_provider_error_before_content_is_passed_on_and_not_resent(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    # An error the provider will give again (a bad request, not an overload): the client
    # gets it once, as it came, and no second stream is appended to it. (The proxy's
    # error_event takes a type for Anthropic; the Chat case is the sans-IO test below.)
    provider = "anthropic"
    fault = "error_event:events=1,type=invalid_request_error"
    with running(proxy.url, tmp_path) as (url, gateway, tee):
        got = raw_request(url, PATHS[provider], body(provider), headers=headers(provider, fault))
        metrics = gateway.metrics
    assert got.status == 200 and got.complete
    assert len(tee.bodies) == 1  # not resent
    assert got.body.count(b"invalid_request_error") == 1
    assert PROOFS[provider] not in got.body
    assert metrics.value("railings_gateway_streams_total", provider=provider, outcome="error") == 1


def test_the_judge_holds_a_chat_error_before_content_for_the_attempt_machine() -> None:
    from railings.errors import BadRequest, ServerError
    from railings.gateway.judge import Ending, StreamJudge
    from railings.turn.ending import Empty

    role = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
    error = b'data: {"error":{"message":"no","type":"invalid_request_error","code":null}}\n\n'
    overload = error.replace(b"invalid_request_error", b"server_error")
    for event, kind in ((error, BadRequest), (overload, ServerError)):
        judge = StreamJudge("openai", refuse_cut_calls=True)
        assert judge.feed(role + event) == b"" and judge.ending is Ending.EMPTY
        assert judge.close() == b""
        # Whether it is resent is the machine's: a final error is not, an overload is.
        assert isinstance(judge.outcome, Empty) and type(judge.outcome.error) is kind
        assert judge.give_up("no attempt left") == role + event  # the provider's own words


def test_a_request_target_that_names_another_host_is_refused(tmp_path: Path) -> None:
    # "POST @other-host/v1/..." appended to "http://upstream" would be "http://upstream@other-
    # host/...": the userinfo form, so another host, with the client's keys.
    with (
        ScriptedServer(Script.text("upstream")) as upstream,
        ScriptedServer(Script.text("elsewhere")) as elsewhere,
        running(upstream.url, tmp_path) as (url, _, _),
    ):
        target = "@" + elsewhere.url.removeprefix("http://") + PATHS["openai"]
        got = raw_request(url, target, body("openai"), headers=headers("openai"))
        assert got.status == 400
        assert elsewhere.requests == [] and upstream.requests == []


def test_keys_are_scrubbed_per_request_and_never_pile_up(
    server: ScriptedServer, tmp_path: Path
) -> None:
    from railings.gateway.record import TurnRecord
    from railings.secrets import SECRETS

    # An upstream that echoes the request's key into its error: never kept as it came.
    record = TurnRecord("openai", "POST", "/v1/chat/completions", "m", stream=True)
    record.secrets = ("sk-echoed-by-the-upstream-0001",)
    record.finish("partial", error="bad key sk-echoed-by-the-upstream-0001, try again")
    assert "sk-echoed" not in record.error and "sk-echoed" not in record.log_line()
    # Many clients, each with its own key: the process-wide registry does not grow.
    before = len(SECRETS)
    with running(server.url, tmp_path) as (url, _, _):
        for n in range(5):
            key = {"authorization": f"Bearer sk-client-{n:04d}-abcdefgh"}
            raw_request(url, "/v1/models", method="GET", headers=key)
    assert len(SECRETS) == before


def test_a_relayed_body_the_upstream_broke_off_is_broken_off_for_the_client(
    tmp_path: Path,
) -> None:
    # A chunked answer (no length) cut by the upstream: ending it normally would make the
    # cut body look whole to the client.
    from _server import CannedServer, Reply

    json_type = (("content-type", "application/json"),)
    with CannedServer() as upstream, running(upstream.url, tmp_path) as (url, _, _):
        upstream.push(
            Reply(chunks=[b'{"data": [', b'{"id": "m1"},'], headers=json_type, end="reset")
        )
        got = raw_request(url, "/v1/models", method="GET", headers=headers("openai"))
        upstream.push(Reply(chunks=[b'{"data": [', b"]}"], headers=json_type))
        whole = raw_request(url, "/v1/models", method="GET", headers=headers("openai"))
    assert whole.complete and whole.body == b'{"data": []}'
    assert not got.complete and got.body == b'{"data": [{"id": "m1"},'


def test_a_2xx_body_that_is_not_a_model_answer_is_unjudged_not_complete(tmp_path: Path) -> None:
    from _server import CannedServer, Reply

    json_type = (("content-type", "application/json"),)
    with CannedServer() as upstream, running(upstream.url, tmp_path) as (url, gateway, _):
        upstream.push(Reply(chunks=[b"[" * 100_000 + b"]" * 100_000], headers=json_type))
        got = raw_request(
            url, PATHS["openai"], body("openai", stream=False), headers=headers("openai")
        )
        metrics = gateway.metrics
    assert got.status == 200 and got.complete
    answers = "railings_gateway_answers_total"
    assert metrics.value(answers, provider="openai", outcome="unjudged") == 1
    assert metrics.value(answers, provider="openai", outcome="complete") == 0


def test_gateway_log_never_creates_a_journal(tmp_path: Path) -> None:
    import subprocess
    import sys

    typo = tmp_path / "typo.sqlite3"
    railings = Path(sys.executable).parent / "railings"
    done = subprocess.run(
        [str(railings), "gateway-log", "--journal", str(typo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and f"--journal {typo}: no such file" in done.stderr
    assert not typo.exists()


def test_a_wire_the_gateway_does_not_judge_passes_through_untouched(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    # Gemini: the gateway has no error shape of its own for it, so even a stream whose
    # proof was dropped is relayed as it came, and counted as no judged stream.
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    ask = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode()
    wire = {"x-goog-api-key": KEY, "x-railings-fault": "drop_terminator"}
    with running(proxy.url, tmp_path) as (url, _, _):
        via = raw_request(url, path, ask, headers=wire)
        direct = raw_request(proxy.url, path, ask, headers=wire)
        exposition = httpx2.get(url + "/_railings/metrics").text
    assert via.status == direct.status == 200
    relayed, plain = replay(via.body, provider="gemini"), replay(direct.body, provider="gemini")
    assert relayed.turn.text == plain.turn.text and relayed.turn.text
    assert relayed.turn.outcome is plain.turn.outcome is not Outcome.COMPLETE
    assert via.body.count(b"\n\n") == direct.body.count(b"\n\n")  # no error event added
    assert b'"error"' not in via.body
    assert 'provider="gemini"' not in exposition
