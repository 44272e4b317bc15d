"""SigV4 signing of Bedrock requests (railings.transport.sigv4): botocore's signer, checked
by a real server on 127.0.0.1 that verifies each signature the way AWS does -- by
recomputing it over the request it received -- and that the key material never reaches
a log line."""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from botocore.auth import SigV4Auth  # the dev extras install it (railings[bedrock])
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from _server import CannedServer, Recorded, Reply
from railings.errors import ConfigurationError, MissingDependency
from railings.transport.sigv4 import SERVICE, SigV4

ACCESS = "AKIDEXAMPLE0RAILINGS"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "FwoGZXIvYXdzEXAMPLEsessionTOKENvalue0123456789"
MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"

_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<access>[A-Z0-9]+)/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)"
    r"/(?P<service>[a-z-]+)/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})"
)


@pytest.fixture
def server() -> Iterator[CannedServer]:
    with CannedServer() as running:
        yield running


def _send(server: CannedServer, auth: httpx2.Auth, body: bytes = b'{"messages":[]}') -> None:
    async def go() -> None:
        async with httpx2.AsyncClient(auth=auth) as client:
            response = await client.post(
                f"{server.url}/model/{MODEL.replace(':', '%3A')}/converse-stream",
                content=body,
                headers={"content-type": "application/json", "accept": "application/json"},
            )
            assert response.status_code == 200

    server.push(Reply(200, [b"{}"], headers=(("content-type", "application/json"),)))
    asyncio.run(go())


def _verify(recorded: Recorded, port: int, credentials: Any, region: str) -> str:
    """What AWS does with a signed request: rebuild the canonical request from what
    arrived (the headers the signature names, the body), recompute the signature with
    botocore's own signer for the timestamp the request carries, and compare."""
    match = _AUTHORIZATION.fullmatch(recorded.headers["authorization"])
    assert match is not None, recorded.headers["authorization"]
    signed = match["signed"].split(";")
    headers = {name: recorded.headers[name] for name in signed}
    aws = AWSRequest(
        method=recorded.method,
        url=f"http://127.0.0.1:{port}{recorded.path}",
        data=recorded.body,
        headers=headers,
    )
    aws.context["timestamp"] = recorded.headers["x-amz-date"]
    signer = SigV4Auth(credentials, match["service"], match["region"])
    canonical = signer.canonical_request(aws)
    expected = signer.signature(signer.string_to_sign(aws, canonical), aws)
    assert match["signature"] == expected
    assert match["region"] == region and match["service"] == SERVICE
    assert match["access"] == credentials.access_key
    assert match["date"] == recorded.headers["x-amz-date"][:8]
    return match["signed"]


def test_each_request_is_signed_as_botocore_signs_it(server: CannedServer) -> None:
    credentials = Credentials(ACCESS, SECRET, TOKEN)
    _send(server, SigV4("eu-west-1", credentials=credentials))
    (request,) = server.requests
    signed = _verify(request, server.port, credentials, "eu-west-1")
    # The host (with its port), the body's headers and botocore's own are signed; the
    # session token travels in its header; user-agent is not signed (a proxy may change it).
    assert signed == "accept;content-type;host;x-amz-date;x-amz-security-token"
    assert request.headers["x-amz-security-token"] == TOKEN
    assert SECRET not in repr(request.headers)
    # The model id's ":" went percent-encoded, as botocore sends a modelId.
    assert request.path == f"/model/{MODEL.replace(':', '%3A')}/converse-stream"


def test_a_tampered_body_no_longer_matches_the_signature(server: CannedServer) -> None:
    credentials = Credentials(ACCESS, SECRET)
    _send(server, SigV4("us-east-1", credentials=credentials), body=b'{"a":1}')
    (request,) = server.requests
    _verify(request, server.port, credentials, "us-east-1")
    request.body = b'{"a":2}'  # the payload hash is signed: another body fails
    with pytest.raises(AssertionError):
        _verify(request, server.port, credentials, "us-east-1")


def test_signing_twice_signs_afresh(server: CannedServer) -> None:
    """A retry is a new signature over the same request (never the stale header)."""
    credentials = Credentials(ACCESS, SECRET)
    auth = SigV4("us-west-2", credentials=credentials)
    _send(server, auth)
    _send(server, auth)
    first, second = server.requests
    for request in (first, second):
        assert request.headers["authorization"].count("AWS4-HMAC-SHA256") == 1
        _verify(request, server.port, credentials, "us-west-2")


def test_the_sync_client_signs_too(server: CannedServer) -> None:
    credentials = Credentials(ACCESS, SECRET)
    server.push(Reply(200, [b"{}"], headers=(("content-type", "application/json"),)))
    with httpx2.Client(auth=SigV4("ap-south-1", credentials=credentials)) as client:
        client.post(f"{server.url}/model/x/converse-stream", content=b"{}")
    (request,) = server.requests
    _verify(request, server.port, credentials, "ap-south-1")


def test_key_material_never_reaches_a_log_line(
    server: CannedServer, caplog: pytest.LogCaptureFixture
) -> None:
    """botocore logs each canonical request at DEBUG, the session token's value in it: the
    redacting filter is on its logger once a client is built, and the token is a secret."""
    from railings.secrets import install_log_redaction

    install_log_redaction()
    with caplog.at_level(logging.DEBUG):
        _send(server, SigV4("us-east-1", credentials=Credentials(ACCESS, SECRET, TOKEN)))
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "CanonicalRequest" in logged  # botocore did log it, at DEBUG
    assert TOKEN not in logged and SECRET not in logged


def test_no_region_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="region"):
        SigV4("")


def test_no_credentials_anywhere_is_one_clear_error(
    server: CannedServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """botocore's default chain finds nothing: the error names both ways to authenticate."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_WEB_IDENTITY_TOKEN_FILE", raising=False)
    with pytest.raises(ConfigurationError, match="AWS_BEARER_TOKEN_BEDROCK"):
        _send(server, SigV4("us-east-1"))
    assert server.requests == []  # nothing was sent unsigned


def test_the_default_chain_reads_the_environment(
    server: CannedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    _send(server, SigV4("us-east-1"))
    (request,) = server.requests
    _verify(request, server.port, Credentials(ACCESS, SECRET), "us-east-1")


def test_without_botocore_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules is how Python marks a module that cannot be imported.
    monkeypatch.setitem(sys.modules, "botocore", None)
    with pytest.raises(MissingDependency) as caught:
        SigV4("us-east-1")
    assert caught.value.extra == "bedrock" and caught.value.package == "botocore"
    assert "pip install botocore (railings' bedrock extra)" in str(caught.value)
