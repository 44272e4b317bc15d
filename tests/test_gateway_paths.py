"""Request paths stay under the upstream's prefix, and the log line is the gateway's own:
every form of climbing out sent as raw bytes through a real gateway, and client-chosen
strings that try to write lines of their own into the log."""

from __future__ import annotations

import json
import logging
import shlex
from pathlib import Path

import pytest

from _server import CannedServer, Reply
from railings.gateway.record import TurnRecord
from railings.testing.raw import raw_request
from tests.gateway_kit import body, headers, running

CLIMBS = (
    "/../../admin",
    "/v1/../../admin",
    "/v1/./../../admin",
    "/..",
    "/%2e%2e/admin",
    "/%2E%2e/admin",
    "/.%2e/admin",
    "/%2e./admin",
    "/v1/%2e%2e/%2e%2e/admin",
    "/v1/%2e/chat/completions",
    "/v1%2f..%2f..%2fadmin",
    "/v1%2F..%2F..%2Fadmin",
    "/..%5c..%5cadmin",
    "/..%5C..%5Cadmin",
    "/v1/%00/models",
    "/..;/admin",
    "/v1/..;x/..;x/admin",
)
REJECTED = "railings_gateway_rejected_requests_total"


@pytest.fixture()
def upstream() -> CannedServer:
    with CannedServer() as server:
        yield server


@pytest.mark.parametrize("target", CLIMBS)
def test_a_path_that_would_climb_out_of_the_prefix_is_refused(
    upstream: CannedServer, tmp_path: Path, target: str
) -> None:
    with running(upstream.url + "/openai", tmp_path) as (url, gateway, _):
        got = raw_request(url, target, method="GET", headers=headers("openai"))
        metrics = gateway.metrics
    assert got.status == 400
    assert upstream.requests == []  # nothing reached the upstream, least of all /admin
    assert metrics.value(REJECTED, reason="bad_path") == 1


def test_a_model_path_that_climbs_out_is_refused_in_the_providers_shape(
    upstream: CannedServer, tmp_path: Path
) -> None:
    with running(upstream.url + "/openai", tmp_path) as (url, _, _):
        got = raw_request(
            url, "/%2e%2e/v1/chat/completions", body("openai"), headers=headers("openai")
        )
    assert got.status == 400 and got.headers["x-should-retry"] == "false"
    assert "path" in json.loads(got.body)["error"]["message"]
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("target", "arrives"),
    [
        ("/v1/models", "/openai/v1/models"),
        ("/v1/./models", "/openai/v1/models"),
        ("/v1/x/../models", "/openai/v1/models"),
        ("/v1/x/y/../../models?limit=2", "/openai/v1/models?limit=2"),
        ("/v1/models/gpt%2D4o", "/openai/v1/models/gpt%2D4o"),  # other encodings kept
        ("/v1/files/a..b", "/openai/v1/files/a..b"),  # dots inside a segment are a name
    ],
)
def test_dot_segments_inside_the_path_are_removed_before_joining(
    upstream: CannedServer, tmp_path: Path, target: str, arrives: str
) -> None:
    upstream.push(Reply(200, [b"{}"], (("content-type", "application/json"),)))
    with running(upstream.url + "/openai", tmp_path) as (url, _, _):
        got = raw_request(url, target, method="GET", headers=headers("openai"))
    assert got.status == 200
    assert [r.path for r in upstream.requests] == [arrives]


# -- the log line ---------------------------------------------------------------------------

FORGED = "gpt\nrailings gateway: POST /v1/chat/completions openai gpt status=200 outcome=complete"


def test_client_chosen_strings_never_forge_a_log_line(
    upstream: CannedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    answer = {"id": "x", "object": "chat.completion", "model": "m", "choices": []}
    upstream.push(
        Reply(200, [json.dumps(answer).encode()], (("content-type", "application/json"),))
    )
    ask = {**body("openai", stream=False), "model": FORGED + " \x1b[2J\x07\r\u2028\x85"}
    path = "/v1%0astatus=200%20outcome=complete%1b%5b2J/chat/completions"
    with (
        caplog.at_level(logging.INFO, logger="railings.gateway"),
        running(upstream.url, tmp_path) as (url, _, _),
    ):
        got = raw_request(url, path, ask, headers=headers("openai"))
    assert got.status == 200
    lines = [r.getMessage() for r in caplog.records if "attempts=" in r.getMessage()]
    assert len(lines) == 1
    line = lines[0]
    assert all(ch.isprintable() for ch in line), repr(line)  # no newline, CR, ESC, BEL, U+2028
    fields = shlex.split(line)
    assert [f for f in fields if f.startswith("status=")] == ["status=200"]
    assert len([f for f in fields if f.startswith("outcome=")]) == 1
    assert len(fields) == 7  # method path provider model status outcome attempts


def test_the_log_line_escapes_each_client_string_and_keeps_plain_ones_plain() -> None:
    record = TurnRecord("openai", "POST", "/v1/chat/completions", "gpt-4o-mini", stream=True)
    record.status, record.outcome, record.attempts = 200, "complete", 1
    assert record.log_line() == (
        "POST /v1/chat/completions openai gpt-4o-mini status=200 outcome=complete attempts=1"
    )
    record = TurnRecord("openai", "POST", "/v1 x/chat/completions", 'a "b"\n', stream=True)
    record.rejected = ("write_file\nstatus=200", "ok")
    line = record.log_line()
    assert "\n" not in line
    assert line.startswith('POST /v1%20x/chat/completions openai "a \\"b\\"\\n" status=None')
    assert line.endswith(' refused="write_file\\nstatus=200",ok')
