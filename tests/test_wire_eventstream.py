"""The event-stream frame decoder: the official vectors, botocore's, and the bounds."""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import struct
import uuid
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from railings.errors import ConfigurationError, EventTooLarge, IllegalTransition, MalformedStream
from railings.testing.eventstream import encode_message
from railings.wire.eventstream import (
    DEFAULT_MAX_MESSAGE_SIZE,
    EventStreamDecoder,
    Header,
    HeaderType,
    Message,
    looks_like_eventstream,
)

VECTORS = Path(__file__).resolve().parent / "corpus" / "eventstream"
POSITIVE = sorted(p.name for p in (VECTORS / "encoded" / "positive").iterdir())
NEGATIVE = sorted(p.name for p in (VECTORS / "encoded" / "negative").iterdir())
# The five official positive vectors and four negative ones (aws-c-event-stream's set, as
# the AWS SDKs for Go and JavaScript ship it), and botocore's own.
OFFICIAL = {"all_headers", "empty_message", "int32_header", "payload_no_headers"}


def encoded(kind: str, name: str) -> bytes:
    return (VECTORS / "encoded" / kind / name).read_bytes()


def decode_all(data: bytes, step: int | None = None) -> list[Message]:
    decoder = EventStreamDecoder()
    if step is None:
        out = decoder.feed(data)
    else:
        out = [m for i in range(0, len(data), step) for m in decoder.feed(data[i : i + step])]
    out += decoder.close()
    return out


def as_vector(message: Message) -> dict[str, Any]:
    """A message in the aws-sdk-go-v2 decoded form: CRCs as signed 32-bit integers, string,
    bytes and uuid values in base64."""

    def signed(value: int) -> int:
        return value - (1 << 32) if value >= 1 << 31 else value

    def value(header: Header) -> Any:
        v = header.value
        if isinstance(v, str):
            return base64.b64encode(v.encode()).decode()
        if isinstance(v, bytes):
            return base64.b64encode(v).decode()
        if isinstance(v, uuid.UUID):
            return base64.b64encode(v.bytes).decode()
        return v

    return {
        "total_length": message.total_length,
        "headers_length": message.headers_length,
        "prelude_crc": signed(message.prelude_crc),
        "headers": [
            {"name": h.name, "type": int(h.type), "value": value(h)} for h in message.headers
        ],
        "payload": base64.b64encode(message.payload).decode(),
        "message_crc": signed(message.message_crc),
    }


def test_the_vectors_are_all_there_with_their_provenance() -> None:
    assert OFFICIAL | {"payload_one_str_header"} <= set(POSITIVE)
    assert {
        "corrupted_headers",
        "corrupted_header_len",
        "corrupted_length",
        "corrupted_payload",
    } <= set(NEGATIVE)
    with (VECTORS / "MANIFEST.tsv").open(encoding="utf-8", newline="") as fh:
        rows = {row["file"]: row for row in csv.DictReader(fh, delimiter="\t")}
    files = [p for p in VECTORS.rglob("*") if p.is_file() and p.parent != VECTORS]
    assert len(files) == len(rows) == 40
    for path in files:
        row = rows[str(path.relative_to(VECTORS))]
        data = path.read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (int(row["bytes"]), row["sha256"])
        assert len(row["source_commit"]) == 40


@pytest.mark.parametrize("name", POSITIVE)
@pytest.mark.parametrize("step", [None, 1, 7])
def test_a_valid_vector_decodes_to_its_decoded_form(name: str, step: int | None) -> None:
    expected = json.loads((VECTORS / "decoded" / "positive" / name).read_bytes())
    (message,) = decode_all(encoded("positive", name), step)
    assert as_vector(message) == expected


@pytest.mark.parametrize("name", NEGATIVE)
@pytest.mark.parametrize("step", [None, 1])
def test_an_invalid_vector_is_a_malformed_stream(name: str, step: int | None) -> None:
    with pytest.raises(MalformedStream):
        decode_all(encoded("negative", name), step)


def test_the_official_negative_vectors_fail_on_the_checksum_they_name() -> None:
    for name in (
        "corrupted_headers",
        "corrupted_header_len",
        "corrupted_length",
        "corrupted_payload",
    ):
        said = (VECTORS / "decoded" / "negative" / name).read_text().strip().lower()
        with pytest.raises(MalformedStream) as caught:
            decode_all(encoded("negative", name))
        assert said.split()[0] in str(caught.value)  # "prelude" or "message"


def test_all_valid_vectors_decode_back_to_back_in_one_buffer() -> None:
    body = b"".join(encoded("positive", name) for name in POSITIVE)
    assert [as_vector(m) for m in decode_all(body, 5)] == [
        json.loads((VECTORS / "decoded" / "positive" / n).read_bytes()) for n in POSITIVE
    ]


def test_typed_header_values() -> None:
    (message,) = decode_all(encoded("positive", "all_headers"))
    assert message.header("timestamp") == 8675309
    assert message.header("uuid") == uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")
    assert message.header("byte") == -49
    assert message.header("bool true") is True and message.header("bool false") is False
    assert message.header("byte buf") == b"I'm a little teapot!"
    assert message.text_header("content-type") == "application/json"
    assert message.text_header("event-type") == ""  # an integer, not a string
    assert message.header("absent") is None
    assert [h.type for h in message.headers][:2] == [HeaderType.INTEGER, HeaderType.STRING]


def test_the_encoder_writes_what_the_decoder_reads_for_every_type() -> None:
    headers = [
        Header(name="t", type=HeaderType.BOOL_TRUE, value=True),
        Header(name="f", type=HeaderType.BOOL_FALSE, value=False),
        Header(name="b", type=HeaderType.BYTE, value=-128),
        Header(name="s", type=HeaderType.SHORT, value=-32768),
        Header(name="i", type=HeaderType.INTEGER, value=2**31 - 1),
        Header(name="l", type=HeaderType.LONG, value=-(2**63)),
        Header(name="y", type=HeaderType.BYTES, value=b"\x00\xff"),
        Header(name="u", type=HeaderType.STRING, value="é日本"),
        Header(name="ts", type=HeaderType.TIMESTAMP, value=1_700_000_000_000),
        Header(name="id", type=HeaderType.UUID, value=uuid.UUID(int=7)),
    ]
    (message,) = decode_all(encode_message(headers, b"payload"))
    assert message.headers == tuple(headers)
    assert message.payload == b"payload"


def frame_cut_and_corrupted() -> bytes:
    return encode_message({":event-type": "messageStop"}, b'{"stopReason":"end_turn"}')


def test_a_frame_cut_short_is_malformed_at_close() -> None:
    frame = frame_cut_and_corrupted()
    for cut in range(1, len(frame)):
        decoder = EventStreamDecoder()
        assert decoder.feed(frame[:cut]) == []
        assert decoder.pending == cut
        with pytest.raises(MalformedStream, match="ended inside a frame"):
            decoder.close()
    decoder = EventStreamDecoder()
    assert decoder.close() == []  # nothing held: a clean end


def test_every_corrupted_byte_is_caught() -> None:
    frame = frame_cut_and_corrupted()
    for position in range(len(frame)):
        corrupted = bytearray(frame)
        corrupted[position] ^= 0x01
        decoder = EventStreamDecoder()
        try:
            decoder.feed(bytes(corrupted))
            decoder.close()
        except MalformedStream:
            continue
        pytest.fail(f"a flipped bit at byte {position} went unnoticed")


def test_a_frame_over_the_bound_raises_before_its_bytes_are_kept() -> None:
    frame = encode_message({"k": "v"}, b"x" * 100)
    decoder = EventStreamDecoder(max_message_size=64)
    with pytest.raises(EventTooLarge) as caught:
        decoder.feed(frame[:12])  # the prelude alone says how large the frame is
    assert caught.value.limit == 64
    with pytest.raises(IllegalTransition):
        decoder.feed(b"more")
    assert DEFAULT_MAX_MESSAGE_SIZE > 16 * 1024 * 1024


def test_impossible_lengths_and_headers() -> None:
    def prelude(total: int, headers: int) -> bytes:
        head = struct.pack(">II", total, headers)
        return head + struct.pack(">I", zlib.crc32(head))

    for total, headers in [(15, 0), (20, 8), (200_000, 140_000)]:
        with pytest.raises(MalformedStream):
            EventStreamDecoder().feed(prelude(total, headers))

    def with_headers(block: bytes) -> bytes:
        head = struct.pack(">II", 16 + len(block), len(block))
        body = head + struct.pack(">I", zlib.crc32(head)) + block
        return body + struct.pack(">I", zlib.crc32(body))

    for block in [
        b"\x00",  # an empty name
        b"\x05ab",  # a name past the block
        b"\x01a\x0a",  # type 10 does not exist
        b"\x01a\x04\x00\x00",  # an integer cut short
        b"\x01a\x07\x00\x09abc",  # a string longer than the block
        b"\x01a\x07\x00\x01\xff",  # a string that is not UTF-8
        b"\x02\xff\xfe\x00",  # a name that is not UTF-8
    ]:
        with pytest.raises(MalformedStream):
            EventStreamDecoder().feed(with_headers(block))


def test_misuse() -> None:
    with pytest.raises(ConfigurationError):
        EventStreamDecoder(max_message_size=15)
    decoder = EventStreamDecoder()
    decoder.close()
    assert decoder.close() == []
    with pytest.raises(IllegalTransition):
        decoder.feed(b"")


def test_detection_hint() -> None:
    assert looks_like_eventstream(encoded("positive", "payload_no_headers"))
    assert not looks_like_eventstream(b"data: {}\n\n" + b" " * 10)
    assert not looks_like_eventstream(b"\x00\x00")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_split_gives_the_same_frames(data: st.DataObject) -> None:
    body = b"".join(encoded("positive", name) for name in POSITIVE)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=20)))
    decoder = EventStreamDecoder()
    out: list[Message] = []
    for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True):
        out += decoder.feed(body[start:end])
    out += decoder.close()
    assert out == decode_all(body)
