"""The guard fails closed: it reads what httpx2 decodes, refuses what it cannot read,
holds a bounded part of any body, and bounds one turn as the client does.

Against a real server on 127.0.0.1; memory is measured as tracemalloc peak bytes.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import tracemalloc
import zlib
from collections.abc import Iterator, Sequence

import anthropic
import httpx2
import httpx2._decoders
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _server import CannedServer, Reply, anthropic_text, openai_text
from railings import guard
from railings.errors import IdleTimeout, StreamInterrupted, TurnTooLarge
from railings.limits import TurnLimits
from railings.transport import coding
from railings.transport.coding import BodyDecoder, codings
from streams import openai_chunk, sse

MiB = 2**20
SSE = (("content-type", "text/event-stream"),)


@pytest.fixture
def server() -> Iterator[CannedServer]:
    with CannedServer() as running:
        yield running


def text_of(server: CannedServer, **kw: object) -> str:
    http = httpx2.Client(transport=guard.transport(**kw))  # type: ignore[arg-type]
    client = openai.OpenAI(
        api_key="sk-test", base_url=server.openai_base_url, http_client=http, max_retries=0
    )
    with client:
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True, max_tokens=16
        )
        with stream:
            return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def encode(body: bytes, applied: Sequence[str]) -> bytes:
    for name in applied:
        if name == "gzip":
            body = gzip.compress(body)
        elif name == "deflate":
            body = zlib.compress(body)
    return body


# -- the codings httpx2 decodes, normalised the way httpx2 does -----------------------------


def test_the_guard_knows_the_codings_httpx2_decodes_here() -> None:
    assert set(httpx2._decoders.SUPPORTED_DECODERS) == coding.HTTPX2_CODINGS


# Header lists and what httpx2 makes of them: repeated, mixed-case, unknown values.
HEADER_SETS: list[tuple[list[str], list[str]]] = [
    (["utf-8"], []),  # a common misconfiguration: httpx2 ignores it
    (["identity", "identity"], []),
    (["GZIP"], ["gzip"]),
    (["gzip, identity"], ["gzip"]),
    (["identity", " gzip "], ["gzip"]),
    (["x-gzip"], []),  # not in httpx2's table: passed through undecoded
    (["deflate"], ["deflate"]),
    (["gzip", "deflate"], ["gzip", "deflate"]),
    (["gzip, gzip"], ["gzip", "gzip"]),
    (["br"] if "br" not in coding.HTTPX2_CODINGS else ["utf-8"], []),
]


@pytest.mark.parametrize(("values", "applied"), HEADER_SETS)
def test_codings_are_normalised_as_httpx2_normalises_them(
    values: list[str], applied: list[str]
) -> None:
    assert codings(values) == applied


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["gzip", "deflate", "identity", "utf-8", "GZIP"]), max_size=4),
    st.binary(max_size=3000),
    st.integers(1, 700),
)
def test_the_guard_decodes_exactly_what_httpx2_decodes(
    values: list[str], body: bytes, split: int
) -> None:
    applied = codings(values)
    raw = encode(body, applied)
    headers = [("content-encoding", v) for v in values]
    expected = httpx2.Response(200, headers=headers, content=raw).read()
    decoder = BodyDecoder(applied)
    pieces = [raw[i : i + split] for i in range(0, len(raw), split)]
    got = b"".join(itertools.chain(*(decoder.feed(p) for p in pieces), decoder.close()))
    assert got == expected


def test_raw_deflate_is_read_as_httpx2_reads_it() -> None:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw = packer.compress(b"data: [DONE]\n\n") + packer.flush()
    decoder = BodyDecoder(["deflate"])
    assert b"".join([*decoder.feed(raw), *decoder.close()]) == b"data: [DONE]\n\n"


@pytest.mark.parametrize(("values", "applied"), HEADER_SETS)
@pytest.mark.parametrize("done", [True, False])
def test_a_cut_stream_raises_whatever_its_content_encoding_says(
    server: CannedServer, values: list[str], applied: list[str], done: bool
) -> None:
    body = encode(b"".join(openai_text(["half", " an answer"], done=done)), applied)
    headers = SSE + tuple(("content-encoding", v) for v in values)
    server.push(Reply(chunks=[body[:17], body[17:]], headers=headers))
    if done:
        assert text_of(server) == "half an answer"
    else:
        with pytest.raises(openai.APIConnectionError) as raised:
            text_of(server)
        assert isinstance(guard.interruption(raised.value), StreamInterrupted)


def test_a_coding_httpx2_decodes_but_the_guard_cannot_is_refused(
    server: CannedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if brotli were importable: httpx2 would decode br; the guard cannot, so it
    # refuses the stream before passing a byte, instead of passing it unjudged.
    monkeypatch.setattr(coding, "HTTPX2_CODINGS", coding.HTTPX2_CODINGS | {"br"})
    server.push(
        Reply(chunks=openai_text(["never judged"]), headers=(*SSE, ("content-encoding", "br")))
    )
    with (
        httpx2.Client(transport=guard.transport()) as http,
        http.stream("POST", server.url + "/v1/chat/completions", json={}) as response,
        pytest.raises(httpx2.DecodingError) as raised,
    ):
        response.read()
    assert response.num_bytes_downloaded == 0  # refused before a byte was passed on
    cause = guard.interruption(raised.value)
    assert cause is not None and "cannot judge" in cause.message


def test_more_codings_than_httpx2_allows_are_refused(server: CannedServer) -> None:
    headers = (*SSE, ("content-encoding", "gzip, " * 5 + "gzip"))
    server.push(Reply(chunks=openai_text(["x"]), headers=headers))
    with (
        httpx2.Client(transport=guard.transport()) as http,
        http.stream("POST", server.url + "/v1/chat/completions", json={}) as response,
        pytest.raises(httpx2.DecodingError),
    ):
        response.read()


def test_a_body_that_does_not_decode_raises(server: CannedServer) -> None:
    headers = (*SSE, ("content-encoding", "gzip"))
    server.push(Reply(chunks=[b"this is not gzip at all"], headers=headers))
    with pytest.raises(openai.APIConnectionError) as raised:
        text_of(server)
    assert guard.interruption(raised.value) is not None


# -- bounded memory -------------------------------------------------------------------------


def _peak_reading(
    server: CannedServer, body: object = None, **kw: object
) -> tuple[BaseException | None, int]:
    """Read one watched stream to its end with httpx2; (what it raised, tracemalloc peak)."""
    error: BaseException | None = None
    with httpx2.Client(transport=guard.transport(**kw)) as http:  # type: ignore[arg-type]
        tracemalloc.start()
        try:
            url = server.url + "/v1/chat/completions"
            with http.stream("POST", url, json=body or {}) as response:
                for _ in response.iter_bytes():
                    pass
        except httpx2.HTTPError as exc:
            error = exc
        finally:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
    return error, peak


def test_a_gzip_body_of_keepalives_costs_bounded_memory(server: CannedServer) -> None:
    inflated = 15 * MiB  # under the byte bound of max_tokens 16 (16 MiB + 64 KiB)
    body = gzip.compress(b": keep-alive\n\n" * (inflated // 14), 9)
    assert len(body) < inflated // 200  # a small body that inflates 200-fold and more
    chunks = [body[i : i + 65536] for i in range(0, len(body), 65536)]
    server.push(Reply(chunks=chunks, headers=(*SSE, ("content-encoding", "gzip"))))
    error, peak = _peak_reading(server, {"max_tokens": 16})
    assert isinstance(error, httpx2.RemoteProtocolError)  # no proof: not passed as finished
    cause = guard.interruption(error)
    assert cause is not None and cause.empty and cause.__cause__ is None  # not a bound
    # What the guard holds: the 1 MiB pieces httpx2 and the guard inflate at a time, and
    # the reader's work on one piece; nothing of the body is kept. The old guard inflated
    # the whole body in one call at the end (294 MB for 0.31 MB).
    assert peak < 6 * MiB, f"peak {peak / MiB:.1f} MiB for {inflated / MiB:.0f} MiB inflated"


# -- the same bounds as the client ----------------------------------------------------------


def test_a_provider_ignoring_max_tokens_is_cut_at_the_text_bound(server: CannedServer) -> None:
    piece = openai_chunk({"content": "x" * 4000})
    server.push(Reply(chunks=[openai_chunk({"role": "assistant", "content": ""}), *[piece] * 3000]))
    seen: list[str] = []
    http = httpx2.Client(transport=guard.transport())
    client = openai.OpenAI(
        api_key="sk-test", base_url=server.openai_base_url, http_client=http, max_retries=0
    )
    with client, pytest.raises(openai.APIConnectionError) as raised:
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True, max_tokens=16
        )
        with stream:
            seen.extend(c.choices[0].delta.content or "" for c in stream if c.choices)
    cause = guard.interruption(raised.value)
    assert cause is not None and isinstance(cause.__cause__, TurnTooLarge)
    bound = cause.__cause__
    assert (bound.bound, bound.max_tokens) == ("text", 16)
    assert bound.limit == TurnLimits().resolve(16).text
    # The SDK saw at most the bound and one decoded piece more, not 12 M characters.
    assert len("".join(seen)) <= bound.limit + MiB


def test_the_byte_bound_ends_endless_keepalives(server: CannedServer) -> None:
    body = gzip.compress(b": keep-alive\n\n" * 1_000_000)
    chunks = [body[i : i + 65536] for i in range(0, len(body), 65536)]
    server.push(Reply(chunks=chunks, headers=(*SSE, ("content-encoding", "gzip"))))
    error, _ = _peak_reading(server, limits=TurnLimits(bytes=MiB))
    assert isinstance(error, httpx2.RemoteProtocolError)
    cause = guard.interruption(error)
    assert cause is not None and cause.empty
    assert isinstance(cause.__cause__, TurnTooLarge) and cause.__cause__.bound == "bytes"


# -- the content clock ----------------------------------------------------------------------

PINGS = 3000  # 20 ms apart: a minute of keep-alives if nothing ended them


def _count_until_error(server: CannedServer, needle: bytes, **kw: object) -> tuple[object, int]:
    seen = b""
    error: object = None
    with httpx2.Client(transport=guard.transport(**kw)) as http:  # type: ignore[arg-type]
        try:
            with http.stream("POST", server.url + "/v1/chat/completions", json={}) as response:
                for chunk in response.iter_bytes():
                    seen += chunk
        except httpx2.HTTPError as exc:
            error = exc
    return error, seen.count(needle)


def test_keepalives_do_not_reset_the_guards_content_clock(server: CannedServer) -> None:
    chunks: list[bytes | float] = [openai_chunk({"role": "assistant", "content": "hi"})]
    chunks += [0.02, b": ping\n\n"] * PINGS
    server.push(Reply(chunks=chunks))
    error, pings = _count_until_error(server, b": ping", content_idle=0.3)
    assert isinstance(error, httpx2.ReadTimeout)
    cause = guard.interruption(error)
    assert cause is not None and "only keep-alives" in cause.message and not cause.empty
    assert pings < PINGS  # ended by the guard, not by the server


def test_anthropic_pings_do_not_reset_the_guards_content_clock(server: CannedServer) -> None:
    events = anthropic_text(["hello"])
    ping = sse({"type": "ping"}, "ping")
    server.push(Reply(chunks=[*events[:4], *([0.02, ping] * PINGS)]))
    http = httpx2.Client(transport=guard.transport(content_idle=0.3))
    client = anthropic.Anthropic(
        api_key="sk-test", base_url=server.anthropic_base_url, http_client=http, max_retries=0
    )
    with client, pytest.raises(httpx2.ReadTimeout) as raised:
        stream = client.messages.create(
            model="c", max_tokens=64, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        with stream:
            for _ in stream:
                pass
    assert isinstance(guard.interruption(raised.value), IdleTimeout)


def test_content_split_anywhere_keeps_the_content_clock_alive(server: CannedServer) -> None:
    # Every event after the first split inside its "data:" prefix, pings between: content
    # all along (the first, whole, starts the content clock).
    chunks: list[bytes | float] = [openai_chunk({"role": "assistant", "content": ""})]
    for word in ["a"] * 30:
        event = openai_chunk({"content": word})
        chunks += [event[:2], event[2:], 0.05, b": ping\n\n"]
    chunks += openai_text(["b"])[1:]
    server.push(Reply(chunks=chunks))
    error, _ = _count_until_error(server, b"", content_idle=1.0)
    assert error is None


def test_the_async_guard_bounds_a_turn_the_same_way(server: CannedServer) -> None:
    piece = openai_chunk({"content": "x" * 4000})
    server.push(Reply(chunks=[openai_chunk({"role": "assistant", "content": ""}), *[piece] * 500]))

    async def main() -> BaseException | None:
        transport = guard.async_transport(limits=TurnLimits(text=100_000))
        async with httpx2.AsyncClient(transport=transport) as http:
            try:
                url = server.url + "/v1/chat/completions"
                async with http.stream("POST", url, json={"max_tokens": 16}) as response:
                    async for _ in response.aiter_bytes():
                        pass
            except httpx2.HTTPError as exc:
                return exc
        return None

    error = asyncio.run(main())
    assert isinstance(error, httpx2.RemoteProtocolError)
    cause = guard.interruption(error)
    assert cause is not None and isinstance(cause.__cause__, TurnTooLarge)
    assert (cause.__cause__.bound, cause.__cause__.limit) == ("text", 100_000)
