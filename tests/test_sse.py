"""The SSE decoder: the WHATWG vectors, targeted edge cases, and split invariance."""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import random
import re
import tracemalloc
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from railings.errors import ConfigurationError, EventTooLarge, IllegalTransition
from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE, ServerSentEvent, SSEDecoder

CORPUS = Path(__file__).resolve().parent / "corpus"
VECTORS_PATH = CORPUS / "sse" / "vectors.json"
VECTORS: list[dict[str, Any]] = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))["vectors"]
with (CORPUS / "real" / "MANIFEST.tsv").open(encoding="utf-8", newline="") as manifest:
    CAPTURES = list(csv.DictReader(manifest, delimiter="\t"))

# h11's tr() idea: bytes after the input that end no block (no line end at all)
# must not add an event, nor change the last event ID or the reconnection time.
TRAILING_DATA = b"data: trailing, never ended\x00\xc3"


@dataclass(frozen=True)
class Outcome:
    events: list[dict[str, Any]]
    last_event_id: str
    reconnection_time: int | None


def as_dict(event: ServerSentEvent) -> dict[str, Any]:
    return {"event": event.event, "data": event.data, "id": event.id, "retry": event.retry}


def run(chunks: Iterable[bytes], **kwargs: Any) -> Outcome:
    decoder = SSEDecoder(**kwargs)
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    events += decoder.close()
    return Outcome([as_dict(e) for e in events], decoder.last_event_id, decoder.reconnection_time)


def expected(vector: dict[str, Any]) -> Outcome:
    return Outcome(
        vector["expected_events"],
        vector["expected_last_event_id"],
        vector["expected_reconnection_time"],
    )


def byte_by_byte(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


# --- the corpus vectors ---------------------------------------------------------------


def whole(body: bytes) -> list[bytes]:
    return [body]


def with_trailing_data(body: bytes) -> list[bytes]:
    return [body + TRAILING_DATA]


WAYS = {"whole": whole, "byte_by_byte": byte_by_byte, "trailing_data": with_trailing_data}


def test_vectors_are_there() -> None:
    assert len(VECTORS) >= 77
    assert len({v["name"] for v in VECTORS}) == len(VECTORS)


@pytest.mark.parametrize("way", list(WAYS))
@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector(vector: dict[str, Any], way: str) -> None:
    # A leading U+FEFF in "input" stands for the BOM bytes: encoding gives exactly those.
    body = vector["input"].encode("utf-8")
    assert run(WAYS[way](body)) == expected(vector)


CHUNKED = [v for v in VECTORS if "chunks" in v]


@pytest.mark.parametrize("vector", CHUNKED, ids=[v["name"] for v in CHUNKED])
def test_vector_as_the_source_split_it(vector: dict[str, Any]) -> None:
    assert "".join(vector["chunks"]) == vector["input"]
    assert run(chunk.encode("utf-8") for chunk in vector["chunks"]) == expected(vector)


@pytest.mark.parametrize("capture", CAPTURES, ids=[c["file"] for c in CAPTURES])
def test_real_capture_event_count(capture: dict[str, str]) -> None:
    body = (CORPUS / "real" / capture["file"]).read_bytes()
    rng = random.Random(capture["sha256"])
    cuts = sorted(rng.sample(range(len(body)), min(len(body), 200)))
    chunks = [body[a:b] for a, b in itertools.pairwise([0, *cuts, len(body)])]
    assert len(run([body]).events) == int(capture["sse_events"])
    assert run(chunks) == run([body])


def test_decoded_events_are_ordinary_frozen_events() -> None:
    [event] = SSEDecoder().feed(b"event: e\nid: 1\nretry: 5\ndata: a\ndata: b\n\n")
    built = ServerSentEvent(event="e", data="a\nb", id="1", retry=5)
    assert event == built
    assert hash(event) == hash(built)
    assert repr(event) == repr(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.data = "changed"  # type: ignore[misc]


# --- line ends ------------------------------------------------------------------------


def test_cr_at_chunk_end_then_lf_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\ndata: b\r") == []
    assert decoder.feed(b"\n") == []  # not a blank line: the pair of the CR before it
    [event] = decoder.feed(b"\r\n")
    assert event.data == "a\nb"


def test_cr_lf_split_next_to_a_split_character() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"data: \xe2\x82") == []  # half of "€"
    assert decoder.feed(b"\xac\r") == []
    assert decoder.feed(b"\n") == []
    [event] = decoder.feed(b"\n")
    assert event.data == "a\n€"


def test_event_ended_by_cr_is_dispatched_without_waiting() -> None:
    decoder = SSEDecoder()
    [event] = decoder.feed(b"data: a\r\r")
    assert event.data == "a"
    assert not decoder.pending


def test_cr_then_cr_across_chunks_is_a_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    [event] = decoder.feed(b"\r")
    assert event.data == "a"


NOT_LINE_ENDS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("char", NOT_LINE_ENDS)
def test_only_cr_and_lf_end_lines(char: str) -> None:
    [event] = SSEDecoder().feed(f"data: a{char}b\n\n".encode())
    assert event.data == f"a{char}b"


# --- BOM and UTF-8 ----------------------------------------------------------------------


def test_bom_split_across_chunks_is_stripped() -> None:
    outcome = run([b"", b"\xef", b"\xbb", b"\xbfdata: x\n\n"])
    assert [e["data"] for e in outcome.events] == ["x"]


def test_bom_is_stripped_only_at_the_start() -> None:
    # Later, U+FEFF is part of the field name "\ufeffdata", an unknown field.
    outcome = run([b"data: a\n\n\xef\xbb\xbfdata: b\n\n"])
    assert [e["data"] for e in outcome.events] == ["a"]
    outcome = run([b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\n"])  # only one is stripped
    assert outcome.events == []


def test_bom_in_data_is_kept() -> None:
    outcome = run([b"data: \xef\xbb\xbfa\n\n"])
    assert [e["data"] for e in outcome.events] == ["\ufeffa"]


def test_four_byte_character_split_at_every_position() -> None:
    body = "data: 😀\n\n".encode()
    start = body.index(b"\xf0")
    for cut in range(len(body) + 1):
        assert run([body[:cut], body[cut:]]).events[0]["data"] == "😀", cut
    for first in range(start, start + 4):
        for second in range(first, start + 4):
            chunks = [body[:first], body[first:second], body[second:]]
            assert run(chunks).events[0]["data"] == "😀", (first, second)


@pytest.mark.parametrize(
    ("chunks", "data"),
    [
        ([b"data: a\xffb\n\n"], "a\ufffdb"),
        ([b"data: a\xc3(\n\n"], "a\ufffd("),
        ([b"data: \xf0\x9f\n\n"], "\ufffd"),  # truncated sequence ended by the line end
        ([b"data: \xf0\x9f", b"\n\n"], "\ufffd"),
        ([b"data: \xed\xa0\x80\n\n"], "\ufffd\ufffd\ufffd"),  # a surrogate is not UTF-8
    ],
)
def test_invalid_utf8_becomes_replacement_character(chunks: list[bytes], data: str) -> None:
    assert [e["data"] for e in run(chunks).events] == [data]


# --- fields -----------------------------------------------------------------------------


def test_id_with_nul_is_ignored() -> None:
    outcome = run([b"id: 1\ndata: a\n\nid: x\x00y\ndata: b\n\n"])
    assert [e["id"] for e in outcome.events] == ["1", "1"]
    assert outcome.last_event_id == "1"


def test_id_is_committed_by_a_blank_line_without_data() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 7\n") == []
    assert decoder.last_event_id == ""  # not yet: the block has not ended
    assert decoder.feed(b"\n") == []
    assert decoder.last_event_id == "7"


@pytest.mark.parametrize("value", ["12a", "-1", "+1", "1.5", " 10", "1e3", "", "²", "١٢"])
def test_retry_that_is_not_ascii_digits_is_ignored(value: str) -> None:
    outcome = run([f"retry: {value}\ndata: x\n\n".encode()])
    assert outcome.events[0]["retry"] is None
    assert outcome.reconnection_time is None


def test_retry_of_any_length_never_escapes_as_a_foreign_error() -> None:
    zeros = "0" * 5000
    outcome = run([f"retry: {zeros}25\ndata: x\n\n".encode()])
    assert outcome.reconnection_time == 25  # leading zeros do not count
    outcome = run([b"retry: 7\n\nretry: " + b"9" * 5000 + b"\ndata: x\n\n"])
    assert outcome.events[0]["retry"] is None  # beyond int()'s digit limit: ignored
    assert outcome.reconnection_time == 7


def test_retry_belongs_to_its_block_and_the_reconnection_time_persists() -> None:
    outcome = run([b"retry: 0100\ndata: a\n\ndata: b\n\nretry: 7\n\n"])
    assert [e["retry"] for e in outcome.events] == [100, None]
    assert outcome.reconnection_time == 7


def test_event_type_resets_even_when_nothing_is_dispatched() -> None:
    outcome = run([b"event: x\n\ndata: y\n\n"])
    assert [(e["event"], e["data"]) for e in outcome.events] == [("message", "y")]


def test_comments_are_counted() -> None:
    decoder = SSEDecoder()
    decoder.feed(b": OPENROUTER PROCESSING\n\n:\r:ping\r\ndata: x\n: inside\n\n")
    decoder.feed(b": split ")
    assert decoder.comments == 4
    decoder.feed(b"comment\n")
    assert decoder.comments == 5


def test_bytes_fed_counts_every_byte() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"\xef\xbb\xbfdata")
    decoder.feed(b": x\r\n\r\n")
    assert decoder.bytes_fed == 14


# --- EOF and misuse ---------------------------------------------------------------------


def test_close_returns_no_unterminated_event() -> None:
    decoder = SSEDecoder()
    [first] = decoder.feed(b"data: a\n\nid: 2\ndata: b\n")
    assert first.data == "a"
    assert decoder.pending
    assert decoder.close() == []
    assert decoder.last_event_id == ""  # the unterminated block's id was never committed
    assert decoder.pending  # still says what close() threw away


@pytest.mark.parametrize(
    ("chunks", "pending"),
    [
        ([], False),
        ([b"data: a\n\n"], False),
        ([b"data: a\n\n", b"da"], True),  # a line started
        ([b"data: a\n"], True),  # a block started
        ([b": keep-alive\n"], True),
        ([b"data: a\n\n\xe2\x82"], True),  # half a character
        ([b"data: a\n\r"], False),  # the CR already ended the block
    ],
)
def test_pending(chunks: list[bytes], pending: bool) -> None:
    decoder = SSEDecoder()
    for chunk in chunks:
        decoder.feed(chunk)
    assert decoder.pending is pending
    decoder.close()
    assert decoder.pending is pending


def test_feed_after_close_is_an_illegal_transition() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: a\n\n")
    assert decoder.close() == []
    assert decoder.close() == []  # close is idempotent
    with pytest.raises(IllegalTransition) as info:
        decoder.feed(b"data: b\n\n")
    assert (info.value.state, info.value.event) == ("closed", "feed")


def test_max_event_size_must_be_positive() -> None:
    with pytest.raises(ConfigurationError):
        SSEDecoder(max_event_size=0)


# --- bounded memory ---------------------------------------------------------------------


def test_a_100_mb_line_raises_once_past_the_default_limit() -> None:
    piece = b"x" * 65536
    decoder = SSEDecoder()
    tracemalloc.start()
    try:
        with pytest.raises(EventTooLarge) as info:
            decoder.feed(b"data: ")
            for _ in range(100 * 1024 * 1024 // len(piece)):
                decoder.feed(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.limit == DEFAULT_MAX_EVENT_SIZE
    assert decoder.bytes_fed <= DEFAULT_MAX_EVENT_SIZE + len(piece)
    assert peak < DEFAULT_MAX_EVENT_SIZE * 1.25
    with pytest.raises(IllegalTransition) as transition:
        decoder.feed(b"\n\n")
    assert transition.value.state == "failed"


@pytest.mark.parametrize("split", [False, True])
def test_line_limit_boundary(split: bool) -> None:
    line = b":" + b"x" * 99  # a comment: its length counts even though it is not kept
    chunks = byte_by_byte(line + b"\n") if split else [line + b"\n"]
    run(chunks, max_event_size=100)
    with pytest.raises(EventTooLarge):
        run([b"x", *chunks], max_event_size=100)


def test_line_limit_counts_characters_not_bytes() -> None:
    [event] = SSEDecoder(max_event_size=8).feed("data:€€€\n\n".encode())
    assert event.data == "€€€"


def test_event_built_from_many_data_lines_raises() -> None:
    decoder = SSEDecoder(max_event_size=1000)
    line = b"data: " + b"0123456789" * 9 + b"\n"  # 90 characters of data and one LF
    for _ in range(11):
        decoder.feed(line)  # 11 * 91 - 1 = 1000 characters of data: at the limit, fine
    with pytest.raises(EventTooLarge) as info:
        decoder.feed(line)  # 1091 characters: over
    assert info.value.limit == 1000


def test_event_data_exactly_at_the_limit_is_dispatched() -> None:
    body = b"data: " + b"a" * 49 + b"\ndata: " + b"b" * 50 + b"\n\n"  # 49 + 1 + 50 = 100
    [event] = SSEDecoder(max_event_size=100).feed(body)
    assert len(event.data) == 100
    with pytest.raises(EventTooLarge):
        SSEDecoder(max_event_size=99).feed(body)


# --- properties -------------------------------------------------------------------------

_text = st.text(
    st.sampled_from(list("ab 0129:\x00\ufeff€😀\u2028\x85\r\n")) | st.characters(), max_size=8
)
_field_line = st.builds(
    lambda name, sep, value: name + sep + value,
    st.sampled_from(["data", "event", "id", "retry", "dat", "", "\ufeffdata", " data"]),
    st.sampled_from(["", ":", ": ", ":  "]),
    _text | st.sampled_from(["10", "007", "1x", "²"]),
)
_line = _field_line | st.just("") | st.builds(lambda t: ":" + t, _text)
_piece = st.builds(
    lambda line, end: (line + end).encode("utf-8", "surrogatepass"),
    _line,
    st.sampled_from(["\n", "\r", "\r\n"]),
)
_body = st.builds(
    b"".join,
    st.lists(
        _piece
        | st.binary(max_size=4)
        | st.sampled_from([b"\xef\xbb\xbf", b"\xf0\x9f\x98", b"\xe2\x82", b"\xff"]),
        max_size=30,
    ),
)


@st.composite
def body_and_cuts(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    body = draw(_body)
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=12)))
    bounds = [0, *cuts, len(body)]
    return body, [body[a:b] for a, b in itertools.pairwise(bounds)]


def observe(chunks: Iterable[bytes]) -> tuple[Outcome, int, bool]:
    decoder = SSEDecoder()
    events = [as_dict(e) for chunk in chunks for e in decoder.feed(chunk)]
    outcome = Outcome(events, decoder.last_event_id, decoder.reconnection_time)
    return outcome, decoder.comments, decoder.pending


@settings(max_examples=200, deadline=None)
@given(body_and_cuts())
def test_any_split_gives_the_same_result(case: tuple[bytes, list[bytes]]) -> None:
    body, chunks = case
    assert observe(chunks) == observe([body])
    assert observe(byte_by_byte(body)) == observe([body])


@settings(max_examples=200, deadline=None)
@given(body_and_cuts(), st.integers(1, 40))
def test_only_railings_errors_escape(case: tuple[bytes, list[bytes]], limit: int) -> None:
    _, chunks = case
    decoder = SSEDecoder(max_event_size=limit)
    try:
        for chunk in chunks:
            decoder.feed(chunk)
    except EventTooLarge as error:
        assert error.limit == limit
    decoder.close()


def reference(body: bytes) -> Outcome:
    """WHATWG "interpret an event stream", written as plainly as the spec reads."""
    lines = re.split("\r\n|\r|\n", body.decode("utf-8-sig", "replace"))
    lines.pop()  # EOF: the last line has no line end (or is the "" after one)
    events: list[dict[str, Any]] = []
    data = event_type = id_buffer = last_event_id = ""
    retry: int | None = None
    reconnection_time: int | None = None
    for line in lines:
        if line == "":
            last_event_id = id_buffer
            if data:
                events.append(
                    {
                        "event": event_type or "message",
                        "data": data[:-1],
                        "id": last_event_id,
                        "retry": retry,
                    }
                )
            data = event_type = ""
            retry = None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data += value + "\n"
        elif name == "event":
            event_type = value
        elif name == "id" and "\x00" not in value:
            id_buffer = value
        elif name == "retry" and value and all(c in "0123456789" for c in value):
            retry = reconnection_time = int(value)
    return Outcome(events, last_event_id, reconnection_time)


@settings(max_examples=200, deadline=None)
@given(body_and_cuts())
def test_matches_a_plain_reading_of_the_spec(case: tuple[bytes, list[bytes]]) -> None:
    body, chunks = case
    assert run(chunks) == reference(body)
