"""Attacks on the gateway's attempts, through a real upstream on 127.0.0.1.

The HTTP/1.1 fallback is sticky for every client of the gateway: it must be set by an
HTTP/2 failure, never by words the upstream chose (a provider's error message).
"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from _server import CannedServer, make_certificate, openai_chunk
from railings.gateway import app
from railings.gateway.serve import ServingThread
from railings.testing.raw import raw_request
from tests.gateway_kit import NO_WAITS, PATHS, body, headers

ROLE = openai_chunk({"role": "assistant", "content": ""})
# A final error whose words happen to hold the fallback's markers.
FINAL = (
    b'data: {"error":{"message":"The model http2-goaway-preview does not exist",'
    b'"type":"invalid_request_error","code":"model_not_found"}}\n\n'
)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


def test_attack_an_error_message_naming_http2_neither_replays_nor_poisons_the_pools(
    certificate: tuple[Path, Path],
) -> None:
    # Over HTTP/2 the upstream answers with its own final error event before any content
    # (then its connection goes away: the judge has stopped reading by then).
    verify = ssl.create_default_context(cafile=str(certificate[0]))
    with CannedServer(tls=certificate, h2_partial=ROLE + FINAL) as server:
        gateway = app(server.url, journal=False, retry=NO_WAITS, verify=verify)
        with ServingThread(gateway) as url:
            got = raw_request(url, PATHS["openai"], body("openai"), headers=headers("openai"))
            first = [r.protocol for r in server.requests]
            again = raw_request(url, PATHS["openai"], body("openai"), headers=headers("openai"))
    assert first == ["HTTP/2"]  # not replayed over HTTP/1.1
    assert got.body == ROLE + FINAL  # the provider's final word, once
    assert again.body == ROLE + FINAL
    # Neither call was replayed, and the second still went over HTTP/2.
    assert [r.protocol for r in server.requests] == ["HTTP/2", "HTTP/2"]
