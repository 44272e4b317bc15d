"""The guard's work per chunk, counted in calls (never in seconds), and its content count.

Past the first content a kept chunk costs the guard no Python call of its own
but the content clock's, when due; the reader that looks for the first content
stops at it; a body read by the core is read per 64 KiB, not per network piece.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, ClassVar

import httpx2
import pytest

import railings.transport.watch as watch
from _server import DONE, anthropic_text, openai_chunk, openai_text, sse
from railings import guard
from railings.errors import TurnTooLarge
from railings.limits import TurnLimits
from railings.transport.watch import MAX_KEEP, StreamWatch, carries_data
from railings.turn.reader import StreamReader

PING = sse({"type": "ping"}, "ping")
CLOCK = ("_check", "_kept_progress", "carries_data")  # the content clock, when it is due


class CountingReader(StreamReader):
    """The core reader, counting its feeds (every one made, in order)."""

    made: ClassVar[list[CountingReader]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.feeds = 0
        self.made.append(self)

    def feed(self, chunk: bytes) -> list[Any]:
        self.feeds += 1
        return super().feed(chunk)


@pytest.fixture
def readers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[CountingReader]]:
    made: ClassVar[list[CountingReader]] = []
    monkeypatch.setattr(CountingReader, "made", made)
    monkeypatch.setattr(watch, "StreamReader", CountingReader)
    yield made


def a_watch(provider: str, **clock: float | None) -> StreamWatch:
    settings: dict[str, Any] = {"content_idle": 300.0, "first_content": 600.0, **clock}
    return StreamWatch(provider, {"read": 600.0}, 30.0, [], **settings)


def python_calls(run: Callable[[], object]) -> list[str]:
    """The names of the Python functions ``run`` calls, in order (C calls not counted)."""
    names: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            names.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return names[1:]  # run itself


def anthropic_chunks(words: int, *, stop: bool = True) -> list[bytes]:
    """One event per chunk (message_start, content_block_start, a ping, the first content
    delta ...), a ping after every content delta."""
    events = anthropic_text(["w"] * words, stop=stop)
    return [*events[:4], *[c for event in events[4:] for c in (event, PING)]]


@pytest.mark.parametrize("clock", [{}, {"content_idle": None, "first_content": None}])
def test_past_the_first_content_a_kept_chunk_costs_no_python_call(
    clock: dict[str, float | None],
) -> None:
    chunks = anthropic_chunks(500)
    w = a_watch("anthropic", **clock)
    for chunk in chunks[:4]:  # up to the first content delta
        assert w.take(chunk) is None

    def rest() -> None:
        for chunk in chunks[4:]:
            assert w.take(chunk) is None

    calls = python_calls(rest)
    assert calls.count("take") == len(chunks) - 4
    others = [name for name in calls if name != "take"]
    assert set(others) <= set(CLOCK)  # no decoding, no reader, no count per chunk
    if not clock:
        assert others == []  # the clock off: nothing but the append and the clock read
    assert w.ended() is None


def test_the_first_content_reader_stops_at_the_first_content(
    readers: list[CountingReader],
) -> None:
    chunks = anthropic_chunks(500)
    w = a_watch("anthropic")
    for chunk in chunks:
        assert w.take(chunk) is None
    assert w.ended() is None
    # The probe read up to the first content delta (the fourth chunk), then no more; a kept
    # body is never read as it passes (its tail judged it at the end).
    assert [r.feeds for r in readers] == [4]


def test_an_unproven_kept_body_is_still_judged_by_the_core(
    readers: list[CountingReader],
) -> None:
    w = a_watch("anthropic")
    for chunk in anthropic_chunks(50, stop=False):
        assert w.take(chunk) is None
    error = w.ended()
    assert isinstance(error, httpx2.RemoteProtocolError)
    assert [r.feeds for r in readers] == [4]  # the verdict: the core over the body, once


def big_openai_body(done: bool = True) -> list[bytes]:
    word = "x" * 2000
    count = MAX_KEEP // len(openai_chunk({"content": word})) + 1000  # past keep
    chunks = openai_text([word] * count, done=done)
    return chunks if done else chunks[:-2]  # no finish, no usage: unproven


@pytest.mark.parametrize("done", [True, False])
def test_a_body_past_keep_is_read_per_64_kib_not_per_piece(
    readers: list[CountingReader], done: bool
) -> None:
    chunks = big_openai_body(done)
    total = sum(map(len, chunks))
    w = a_watch("openai")
    for chunk in chunks:
        assert w.take(chunk) is None
    error = w.ended()
    assert (error is None) is done
    probe, reader = readers
    assert probe.feeds <= 2  # the role chunk, the first content
    assert reader.feeds <= total // 65536 + 8  # not one per piece: there are len(chunks)
    assert len(chunks) > 10 * (total // 65536 + 8)


def test_a_bound_past_keep_is_seen_within_64_kib() -> None:
    chunks = big_openai_body()
    w = StreamWatch("openai", None, None, [], limits=TurnLimits(text=MAX_KEEP))
    # Where the text passes the bound: the bytes up to the end of that chunk.
    text = at = 0
    while text <= MAX_KEEP:
        text += 2000 if at else 0
        at += 1
    crossed = sum(map(len, chunks[:at]))
    passed = 0  # the bytes the SDK was let read
    for chunk in chunks:
        error = w.take(chunk)
        if error is not None:
            break
        passed += len(chunk)
    else:
        pytest.fail("the text bound was never seen")
    assert isinstance(error, httpx2.RemoteProtocolError)
    cause = guard.interruption(error)
    assert cause is not None and isinstance(cause.__cause__, TurnTooLarge)
    assert cause.__cause__.bound == "text"
    assert crossed - len(chunks[1]) <= passed <= crossed + 65536


# -- the content count ----------------------------------------------------------------------


@pytest.mark.parametrize("ping", [b'{"type": "ping"}', b'{"type":"ping"}'])
def test_pings_are_not_content_in_either_spelling(ping: bytes) -> None:
    assert not carries_data(b"event: ping\ndata: " + ping + b"\n\n" * 3, b"")
    assert not carries_data(b": keep-alive\n\n", b"")
    assert carries_data(b"data: " + ping + b"\n\ndata: {}\n\n", b"")


def test_a_data_line_split_at_the_edge_counts() -> None:
    assert carries_data(b'ta: {"type":"content_block_delta"}\n\n', b"\n\nda")
    assert not carries_data(b'ta: {"type":"ping"}\n\n', b"\n\nda")


def test_a_ping_marker_before_the_first_data_belongs_to_an_earlier_line() -> None:
    # The region starts inside a ping whose data: came before: its marker hides nothing.
    assert carries_data(b'"type": "ping"}\n\ndata: {"type":"content_block_delta"}\n\n', b"a: {")
    assert not carries_data(b'"type": "ping"}\n\n', b"a: {")


def test_a_ping_split_across_looks_counts_as_progress_never_the_reverse() -> None:
    assert carries_data(b'event: ping\ndata: {"type": "pi', b"")  # lenient
    assert DONE.startswith(b"data:") and carries_data(DONE, b"")
