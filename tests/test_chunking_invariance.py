"""The verdict does not depend on how the bytes were split, on any wire, with any fault.

Every capture of ``tests/corpus`` (Chat Completions, Messages, Responses, Gemini,
Bedrock's event-stream frames, Ollama's NDJSON lines) gets one fault after its first
content (tools/reliability/faulted.py: invalid UTF-8, broken JSON, one bad byte
anywhere, a cut, a bad CRC, a unit over the reader's bound), and is fed whole, byte by
byte and in random pieces: the report (outcome, Empty or Partial, text, calls, verdicts,
error) and the events must be the same. A framing layer that meets a bad unit keeps the
units before it, and the error takes effect right after them, whatever the chunking.
``make fuzz`` runs the same campaign at scale (``faults_after_content``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railings.errors import IllegalTransition, MalformedStream
from railings.providers.bedrock.decoder import BedrockStream
from railings.providers.gemini.decoder import GeminiStream
from railings.providers.ollama.decoder import OllamaStream
from railings.turn.reader import StreamReader
from railings.wire.eventstream import EventStreamDecoder
from railings.wire.ndjson import NDJSONDecoder
from railings.wire.sse import SSEDecoder
from tools.reliability import faulted
from tools.reliability.campaigns import Fuzzer
from tools.reliability.corpus import load_captures
from tools.reliability.faulted import Stream, every_byte, inject, load_streams, read, same
from tools.reliability.properties import ShellSpy

STREAMS = load_streams()
CASES = [(s, kind) for s in STREAMS for kind in s.kinds]


def test_every_capture_of_every_wire_is_in_the_campaign() -> None:
    providers = {s.provider for s in STREAMS}
    assert providers == {"openai", "anthropic", "openai-responses", "gemini", "bedrock", "ollama"}
    assert len(STREAMS) >= 76
    # The fault lands after content wherever a capture has content after its first unit.
    assert sum(1 for s in STREAMS if s.content >= 0) >= 70


@pytest.mark.parametrize(("stream", "kind"), CASES, ids=[f"{s.name}-{kind}" for s, kind in CASES])
def test_a_fault_right_after_the_first_content_reads_the_same_in_any_pieces(
    stream: Stream, kind: str
) -> None:
    case = inject(stream, kind, stream.after_content[0], offset=7)
    whole = read(case.body, stream.provider, (), max_event_size=case.max_event_size)
    for cuts in (every_byte(case.body), range(7, len(case.body), 7), range(97, len(case.body), 97)):
        split = read(case.body, stream.provider, cuts, max_event_size=case.max_event_size)
        assert same(whole, split) is None, (case.what, cuts, same(whole, split))


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_any_fault_after_content_reads_the_same_in_any_pieces(data: st.DataObject) -> None:
    stream = data.draw(st.sampled_from(STREAMS), label="capture")
    kind = data.draw(st.sampled_from(stream.kinds), label="fault")
    unit = data.draw(st.sampled_from(stream.after_content), label="unit")
    case = inject(stream, kind, unit, data.draw(st.integers(0, 1 << 16), label="offset"))
    provider = data.draw(st.sampled_from((stream.provider, "auto")), label="provider")
    cuts = data.draw(st.lists(st.integers(0, len(case.body)), max_size=24), label="cuts")
    whole = read(case.body, provider, (), max_event_size=case.max_event_size)
    split = read(case.body, provider, cuts, max_event_size=case.max_event_size)
    assert same(whole, split) is None, (case.what, provider, sorted(set(cuts)))


def test_the_ollama_capture_of_the_report_is_partial_whole_and_in_pieces() -> None:
    """One bad byte after the first content of a real Ollama stream: the content that
    arrived is kept (Partial, never resent), fed whole as in pieces of 7 or 97 bytes."""
    stream = next(s for s in STREAMS if s.name == "ollama/docs_streaming_no_done_reason.ndjson")
    case = inject(stream, "utf8", 1)
    for cuts in ((), range(7, len(case.body), 7), range(97, len(case.body), 97)):
        report = read(case.body, "ollama", cuts, max_event_size=case.max_event_size).report
        assert (report["outcome"], report["text"]) == ("partial", "The")
        assert report["error"]["kind"] == "malformed_stream"


# -- each framing layer alone: the units before a bad one, then its error ---------------------


def test_ndjson_returns_the_lines_before_a_bad_one_and_raises_on_the_next_call() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a":1}\n{"b":2}\n{"c":"\xff"}\n{"d":4}\n') == ['{"a":1}', '{"b":2}']
    assert decoder.failure is not None
    with pytest.raises(type(decoder.failure), match="not UTF-8"):
        decoder.feed(b"")


def test_ndjson_keeps_the_lines_before_one_over_its_bound() -> None:
    decoder = NDJSONDecoder(max_line_size=8)
    assert decoder.feed(b'{"a":1}\n' + b"x" * 9) == ['{"a":1}']
    assert decoder.failure is not None and "longer than 8" in str(decoder.failure)


def test_sse_returns_the_events_before_one_over_its_bound() -> None:
    decoder = SSEDecoder(max_event_size=10)
    events = decoder.feed(b"data: a\n\ndata: " + b"x" * 20 + b"\n\n")
    assert [e.data for e in events] == ["a"]
    assert decoder.failure is not None and "longer than 10" in str(decoder.failure)


def test_sse_says_which_events_came_before_invalid_utf8() -> None:
    """A U+FFFD the model wrote (valid UTF-8) before the first invalid byte of a chunk is
    text; the events from the invalid byte on are the reader's to fault."""
    decoder = SSEDecoder()
    events = decoder.feed("data: \ufffd\n\n".encode() + b"data: \xff\n\ndata: x\n\n")
    assert [e.data for e in events] == ["\ufffd", "\ufffd", "x"]
    assert decoder.clean_events == 1
    assert decoder.feed("data: \ufffd\n\n".encode()) and decoder.clean_events == 0


def test_sse_events_before_a_line_over_the_bound_and_invalid_bytes_stay_clean() -> None:
    decoder = SSEDecoder(max_event_size=10)
    events = decoder.feed("data: \ufffd\n\n".encode() + b"data: " + b"x" * 20 + b"\n\n\xff")
    assert [e.data for e in events] == ["\ufffd"] and decoder.clean_events == 1
    assert decoder.failure is not None


def test_eventstream_says_it_holds_an_error_for_the_next_call() -> None:
    stream = next(s for s in STREAMS if s.provider == "bedrock")
    decoder = EventStreamDecoder()
    bad = inject(stream, "crc", 2).body
    frames = decoder.feed(bad)
    assert len(frames) == 2 and decoder.failure is not None


# -- the campaign of make fuzz, a few examples -------------------------------------------------


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_the_fuzz_campaign_runs(data: st.DataObject) -> None:
    with ShellSpy() as spy:
        faulted.campaign(Fuzzer(load_captures(), spy), data)


# -- the reader: the error takes effect right after the units before it ----------------------


def _chat(*contents: bytes) -> bytes:
    blocks = [
        b'data: {"choices":[{"index":0,"delta":{"content":"' + text + b'"}}]}\n\n'
        for text in contents
    ]
    return b"".join(blocks) + b"data: [DONE]\n\n"


def test_a_u_fffd_the_model_wrote_before_invalid_bytes_is_text_whatever_the_split() -> None:
    body = _chat("a\ufffdb".encode(), b"c\xffd", b"e")
    for cuts in ((), every_byte(body), (len(body) // 2,)):
        report = read(body, "openai", cuts, max_event_size=1 << 20).report
        assert (report["outcome"], report["text"]) == ("partial", "a\ufffdb"), cuts
        assert report["error"]["message"] == "invalid UTF-8 in the stream"


def test_a_bad_frame_ends_the_turn_in_the_feed_that_brought_it() -> None:
    """The reader does not wait for more bytes (which may never come, or come only after
    an idle timeout) to apply the error of a frame the chunk completed after good ones."""
    stream = next(s for s in STREAMS if s.name == "bedrock/text_end_turn.bin")
    body = inject(stream, "crc", 3).body
    reader = StreamReader("bedrock")
    events = reader.feed(body)
    assert events and reader.terminated and not reader.reads_on
    assert "checksum" in reader.turn().error.message  # type: ignore[union-attr]


def test_after_the_proof_a_bad_frame_and_more_bytes_change_nothing() -> None:
    """Bedrock reads on after its proof (the usage follows it): a frame the framer refuses
    there is read past, and so is every byte after it."""
    stream = next(s for s in STREAMS if s.name == "bedrock/text_end_turn.bin")
    proof = len(stream.units) - 1  # messageStop, then metadata
    clean = b"".join(stream.units[:proof])
    reader = StreamReader("bedrock")
    reader.feed(clean)
    assert reader.terminated and reader.reads_on
    assert reader.feed(stream.framing.corrupt(stream.units[proof], "crc")) == []
    assert reader.feed(stream.units[proof]) == []
    reader.close()
    assert reader.turn().complete


# -- the bytes-to-events streams of the newer wires ---------------------------------------------

_WIRE_STREAMS = {"gemini": GeminiStream, "bedrock": BedrockStream, "ollama": OllamaStream}
_STREAM_CASES = [
    (s, kind)
    for s in STREAMS
    if s.provider in _WIRE_STREAMS and s.content >= 0
    for kind in ("json", "utf8", "crc")
    # SSE decodes invalid UTF-8 as U+FFFD (WHATWG): the reader, not the stream, faults it.
    if kind in s.kinds and not (kind == "utf8" and s.provider == "gemini")
]


def _stream_events(make: Callable[[], Any], body: bytes, size: int) -> tuple[list[Any], str]:
    stream, events = make(), []
    try:
        for at in range(0, len(body), size):
            events += stream.feed(body[at : at + size])
        events += stream.close()
    except MalformedStream as exc:
        with pytest.raises(IllegalTransition):
            stream.feed(b"{}")  # a failed stream reads nothing more
        return events, str(exc)
    return events, ""


@pytest.mark.parametrize(
    ("stream", "kind"), _STREAM_CASES, ids=[f"{s.name}-{k}" for s, k in _STREAM_CASES]
)
def test_a_wire_stream_returns_the_events_before_a_bad_frame_then_raises(
    stream: Stream, kind: str
) -> None:
    case = inject(stream, kind, stream.after_content[0])
    make = _WIRE_STREAMS[stream.provider]
    whole = _stream_events(make, case.body, len(case.body))
    assert whole[1], case.what  # the fault is raised
    for size in (1, 7, 97):
        assert _stream_events(make, case.body, size) == whole, (case.what, size)
