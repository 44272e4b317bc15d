"""The test kit's HTTP/1.1 request parser is strict: every malformed request gets a 4xx.

``railings serve`` and ``railings proxy`` read requests with
:func:`railings.testing.http.read_request`. These tests hold it to three rules:
a chunked body is bounded like a ``Content-Length`` one (413), a chunk size is
hexadecimal digits and nothing else, and whatever the bytes, the parser returns a
request or raises :class:`HTTPFault` with a 4xx status (501 only for a transfer
coding other than chunked, RFC 9112 §6.1) -- never any other exception.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railings.testing import FaultProxy, Script, ScriptedServer
from railings.testing import http as kit_http
from railings.testing.http import MAX_HEAD, HTTPFault, Request, read_request

HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"


def parse(data: bytes) -> Request | HTTPFault | EOFError:
    """Feed ``data`` then EOF to the parser, as the server's socket would."""

    async def run() -> Request | HTTPFault | EOFError:
        reader = asyncio.StreamReader(limit=MAX_HEAD)
        reader.feed_data(data)
        reader.feed_eof()
        try:
            return await read_request(reader)
        except (HTTPFault, EOFError) as exc:
            return exc

    return asyncio.run(run())


def status_of(data: bytes) -> int:
    result = parse(data)
    assert isinstance(result, HTTPFault), result
    return result.status


# -- chunk sizes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "size", [b"-5", b"0x5", b"5_", b"+5", b" 5", b"5 5", b"", b"g", b"\xb2", b"1" * 17]
)
def test_a_chunk_size_that_is_not_hex_digits_is_400(size: bytes) -> None:
    body = size + b"\r\nhello\r\n0\r\n\r\n"
    assert status_of(HEAD + b"transfer-encoding: chunked\r\n\r\n" + body) == 400


@pytest.mark.parametrize("size", [b"5", b"05", b"5;ext=1", b"5 ;ext", b"5\t;x"])
def test_a_hex_chunk_size_with_extensions_is_read(size: bytes) -> None:
    request = parse(HEAD + b"transfer-encoding: chunked\r\n\r\n" + size + b"\r\nhello\r\n0\r\n\r\n")
    assert isinstance(request, Request)
    assert request.body == b"hello"


def test_a_chunked_body_is_bounded_like_a_content_length_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(kit_http, "MAX_BODY", 1000)
    chunks = b"".join(b"64\r\n" + b"x" * 100 + b"\r\n" for _ in range(11)) + b"0\r\n\r\n"
    assert status_of(HEAD + b"transfer-encoding: chunked\r\n\r\n" + chunks) == 413
    assert status_of(HEAD + b"content-length: 1001\r\n\r\n" + b"x" * 1001) == 413
    # One chunk declaring more than the limit is refused before its data is read.
    assert status_of(HEAD + b"transfer-encoding: chunked\r\n\r\n3e9\r\n") == 413
    ten = b"".join(b"64\r\n" + b"x" * 100 + b"\r\n" for _ in range(10)) + b"0\r\n\r\n"
    request = parse(HEAD + b"transfer-encoding: chunked\r\n\r\n" + ten)
    assert isinstance(request, Request)
    assert len(request.body) == 1000


# -- framing and the head -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"content-length: \xb2\r\n", 400),  # str.isdigit() says yes; int() says no
        (b"content-length: -1\r\n", 400),
        (b"content-length: 5\r\ncontent-length: 6\r\n", 400),
        (b"content-length: 5\r\ntransfer-encoding: chunked\r\n", 400),  # smuggling shape
        (b"transfer-encoding: gzip\r\n", 501),
        (b"transfer-encoding: chunked\x00\r\n", 400),
        (b"bad name: x\r\n", 400),
        (b" folded\r\n", 400),
        (b"x: a\nb\r\n", 400),
    ],
)
def test_malformed_framing_and_headers(head: bytes, status: int) -> None:
    assert status_of(HEAD + head + b"\r\nhello") == status


@pytest.mark.parametrize(
    "line",
    [
        b"POST /v1 HTTP/2.0",
        b"POST /v1 HTTP/1.1 extra",
        b"PO ST /v1 HTTP/1.1",
        b"POST  HTTP/1.1",
        b"P\x00ST /v1 HTTP/1.1",
        b"POST /v\x7f1 HTTP/1.1",
        b"",
    ],
)
def test_malformed_request_lines(line: bytes) -> None:
    assert status_of(line + b"\r\nhost: x\r\n\r\n") == 400


def test_a_silent_close_is_eof_and_a_cut_head_is_400() -> None:
    assert isinstance(parse(b""), EOFError)
    assert status_of(b"POST /v1 HTTP/1.1\r\nhost") == 400
    assert status_of(HEAD + b"content-length: 10\r\n\r\nshort") == 400
    assert status_of(HEAD + b"transfer-encoding: chunked\r\n\r\n5\r\nhel") == 400
    assert status_of(HEAD + b"transfer-encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n") == 400


# -- the fuzz property ----------------------------------------------------------------------

_pieces = st.sampled_from(
    [
        b"POST /v1/chat/completions HTTP/1.1\r\n",
        b"GET / HTTP/1.0\r\n",
        b"host: x\r\n",
        b"content-length: 5\r\n",
        b"content-length: 99999999999\r\n",
        b"transfer-encoding: chunked\r\n",
        b"transfer-encoding: gzip, chunked\r\n",
        b"\r\n",
        b"5\r\nhello\r\n",
        b"-5\r\n",
        b"0x10\r\n",
        b"ffffffffffffffff\r\n",
        b"0\r\n\r\n",
        b"0\r\ntrailer: x\r\n\r\n",
        b": \t\x00\r\x7f\xff",
        b"hello",
    ]
)
_chunked = st.lists(
    st.one_of(
        st.from_regex(rb"\A[-+ 0-9a-fA-FxX_;]{0,10}\r\n\Z"),
        st.sampled_from([b"hello", b"\r\n", b"0\r\n\r\n"]),
        st.binary(max_size=8),
    ),
    max_size=8,
).map(lambda body: HEAD + b"transfer-encoding: chunked\r\n\r\n" + b"".join(body))
_requests = st.one_of(
    st.binary(max_size=300),
    _chunked,
    st.lists(st.one_of(_pieces, st.binary(max_size=12)), max_size=12).map(b"".join),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_requests)
def test_fuzz_any_bytes_give_a_request_or_a_4xx(data: bytes) -> None:
    result = parse(data)
    if isinstance(result, HTTPFault):
        assert 400 <= result.status < 500 or (
            result.status == 501 and "transfer-encoding" in result.message
        ), result.message
    elif isinstance(result, EOFError):
        assert data == b""
    else:
        assert isinstance(result, Request)
        assert len(result.body) <= kit_http.MAX_BODY


# -- over a real socket: the server and the proxy answer -----------------------------------


def _answer(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer.split(b"\r\n", 1)[0]


@pytest.fixture
def services() -> Iterator[tuple[ScriptedServer, FaultProxy]]:
    with ScriptedServer(Script.text("hi")) as server, FaultProxy(server.url) as proxy:
        yield server, proxy


@pytest.mark.parametrize(
    "data",
    [
        HEAD + b"transfer-encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
        HEAD + b"transfer-encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
        HEAD + b"content-length: \xb2\r\n\r\n",
        HEAD + b"transfer-encoding: chunked\r\n\r\n4000001\r\n",  # over 64 MiB: 413
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",  # a TLS hello
    ],
)
def test_server_and_proxy_answer_malformed_requests_with_4xx(
    services: tuple[ScriptedServer, FaultProxy], data: bytes
) -> None:
    for service in services:
        status_line = _answer(service.port, data)
        assert status_line.startswith(b"HTTP/1.1 4"), (type(service).__name__, status_line)
