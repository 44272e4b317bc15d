"""One SDK call reaches the upstream at most as often as the Empty rule allows: the
gateway's resends follow the one retry policy, and every error it answers tells the
SDK whether to retry, so the SDK's own retries never multiply them."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from _server import CannedServer, Reply
from railings.transport.retry import RetryPolicy
from tests.gateway_kit import KEY, NO_WAITS, running


def _call(url: str, *, stream: bool) -> openai.APIStatusError:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=2) as client:
        try:
            got = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=stream
            )
            if stream:
                list(got)
        except openai.APIStatusError as exc:
            return exc
    raise AssertionError("the call did not fail")


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_that_drops_every_request_sees_the_policys_attempts_not_times_the_sdks(
    tmp_path: Path, stream: bool
) -> None:
    with CannedServer() as upstream, running(upstream.url, tmp_path) as (url, _, _):
        upstream.push(*[Reply(end="drop") for _ in range(20)])  # reads it whole, then closes
        error = _call(url, stream=stream)
        sent = len(upstream.requests)
    assert error.status_code == 502
    assert error.response.headers["x-should-retry"] == "false"
    assert sent == NO_WAITS.attempts  # 4, not 4 x 3


def test_the_policys_deadline_bounds_the_gateways_resends_too(tmp_path: Path) -> None:
    spent = RetryPolicy(initial=0.0, cap=0.0, deadline=1e-9)  # no time left for a resend
    with (
        CannedServer() as upstream,
        running(upstream.url, tmp_path, retry=spent) as (url, _, _),
    ):
        upstream.push(*[Reply(end="drop") for _ in range(20)])
        error = _call(url, stream=False)
        sent = len(upstream.requests)
    assert error.response.headers["x-should-retry"] == "false"
    assert sent == 1
