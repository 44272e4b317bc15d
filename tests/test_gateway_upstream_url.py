"""The upstream URL as httpx2 reads it: the base the gateway sends to, what it shows of it,
the secrets it registers, and the URLs it refuses at startup without quoting them."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from _server import CannedServer, json_reply
from railings.errors import ConfigurationError
from railings.gateway.upstream import upstream_base, upstream_shown
from railings.redact import MARKER, redact
from railings.testing.raw import raw_request
from tests.gateway_kit import headers, running

SRC = Path(__file__).resolve().parent.parent / "src"


@pytest.fixture()
def upstream() -> Iterator[CannedServer]:
    with CannedServer() as server:
        yield server


@pytest.mark.parametrize(
    ("password", "sent"),
    [
        ("Open Sesame Kv52", "Open%20Sesame%20Kv52"),
        ("Open@Sesame-Kv52", "Open%40Sesame-Kv52"),
        ("Open%20Sesame%20Kv53", "Open%20Sesame%20Kv53"),
        ("pw", "pw"),  # shorter than the registry keeps: the shown form still has none
    ],
)
def test_the_base_is_what_httpx2_sends_and_the_shown_form_has_no_userinfo(
    password: str, sent: str
) -> None:
    url = f"https://user-kv:{password}@api.example.com:8443/v1/"
    base = upstream_base(url)
    assert base == f"https://user-kv:{sent}@api.example.com:8443/v1"
    assert httpx2.URL(base).password == httpx2.URL(url).password
    shown = upstream_shown(base)
    assert shown == f"https://{MARKER}@api.example.com:8443/v1"
    assert redact(base) == shown
    if len(password) >= 8:  # the registry's minimum: shorter values are not registered
        decoded = httpx2.URL(url).password
        for form in {password, decoded, sent}:
            assert form not in redact(f"the upstream said: {form}")


def test_a_base_without_userinfo_is_shown_as_it_is() -> None:
    assert upstream_shown(upstream_base("http://127.0.0.1:9/")) == "http://127.0.0.1:9"
    assert upstream_base("https://api.openai.com") == "https://api.openai.com"


@pytest.mark.parametrize(
    "url",
    [
        "http://gateway-user:Sesame/Kv54@127.0.0.1:9/v1",  # the port would be "Sesame"
        "http://gateway-user:12345/Kv54@127.0.0.1:9/v1",  # a port, then the host in the path
        "http://gateway-user:Sesame?Kv54@127.0.0.1:9/v1",
        "http://gateway-user:12345#Kv54@127.0.0.1:9/v1",
        "http://gateway-user:12345?Kv54@127.0.0.1:9/v1",
        "gateway-user:Sesame-Kv54@127.0.0.1:9/v1",  # no scheme: "gateway-user" is one
        "ftp://gateway-user:Sesame-Kv54@127.0.0.1:9/v1",
        "http://gateway-user:Sesame-Kv54@/v1",
        "http://gateway-user:Sesame-Kv54@127.0.0.1:99999/v1",
        "http://gateway-user:Sesame-Kv54@127.0.0.1:-1/v1",
        "http://gateway-user:Sesame-Kv54@127.0.0.1:0/v1",
    ],
)
def test_a_url_that_is_not_what_was_meant_is_refused_without_quoting_it(url: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        upstream_base(url)
    message = str(raised.value)
    assert message.startswith("--upstream ") and "\n" not in message
    for part in ("Sesame", "Kv54", "gateway-user", "12345"):
        assert part not in message


def test_the_cli_refuses_a_password_with_a_slash_in_one_line() -> None:
    upstream = "http://gateway-user:Sesame/Kv55@127.0.0.1:9/v1"
    done = subprocess.run(
        [sys.executable, "-m", "railings", "gateway", "--port", "0", "--upstream", upstream],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "percent-encode" in done.stderr
    assert "Sesame" not in done.stderr + done.stdout and "Kv55" not in done.stderr


def test_an_unencoded_password_is_what_the_upstream_is_sent(
    upstream: CannedServer, tmp_path: Path
) -> None:
    # The base carries the password percent-encoded; httpx2 decodes it for Basic auth,
    # so the upstream gets exactly the password that was written.
    upstream.push(json_reply(200, {"data": []}))
    base = upstream.url.replace("http://", "http://gateway-user:Open Sesame@Kv56@")
    with running(base, tmp_path) as (url, gateway, _tee):
        got = raw_request(url, "/v1/models", method="GET", headers=headers("openai"))
        assert "Kv56" not in upstream_shown(gateway.upstream)
    assert got.status == 200
    sent = upstream.requests[0].headers["authorization"]
    assert base64.b64decode(sent.split(" ", 1)[1]) == b"gateway-user:Open Sesame@Kv56"
    assert upstream.requests[0].path == "/v1/models"
