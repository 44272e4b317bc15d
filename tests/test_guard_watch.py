"""The guard's work per chunk, counted in calls (never in seconds), and its content count.

Past the first content a kept chunk costs the guard no Python call of its own
but the content clock's, when due; the reader that looks for the first content
stops at it; a body read by the core is read per 64 KiB, not per network piece,
and always before a piece that may carry the proof. The content clock runs on a
fake clock (``watch._now``): its cuts are asserted in fake seconds.
"""

from __future__ import annotations

import sys
import zlib
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
KEEP_ALIVE = b": keep-alive\n\n"
# The content clock, when it is due: the chunk goes the long way, and the clock looks.
CLOCK = ("_take", "_piece", "_look", "_kept_progress", "carries_data", "_judge")


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


class FakeClock:
    """``watch._now``: fake seconds, moved by the test (``tick`` per reading, if set)."""

    def __init__(self, tick: float = 0.0) -> None:
        self.t = 1000.0
        self.tick = tick

    def __call__(self) -> float:
        self.t += self.tick
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(watch, "_now", fake)
    return fake


@pytest.mark.parametrize(
    ("settings", "tick"),
    [({}, 0.0), ({"content_idle": None, "first_content": None}, 1.0), ({}, 1.0)],
    ids=["clock-not-due", "clock-off", "clock-due-every-chunk"],
)
def test_past_the_first_content_a_kept_chunk_costs_no_python_call(
    clock: FakeClock, settings: dict[str, float | None], tick: float
) -> None:
    chunks = anthropic_chunks(500)
    w = a_watch("anthropic", **settings)
    for chunk in chunks[:4]:  # up to the first content delta
        assert w.take(chunk) is None
    clock.tick = tick

    def rest() -> None:
        for chunk in chunks[4:]:
            assert w.take(chunk) is None

    calls = python_calls(rest)
    assert calls.count("take") == len(chunks) - 4
    # The fake clock is a Python call (time.monotonic, which it stands for, is C).
    assert calls.count("__call__") <= len(chunks) - 4
    others = [name for name in calls if name not in ("take", "__call__")]
    if tick and settings == {}:  # the clock due at every chunk: its look, no more
        assert set(others) <= set(CLOCK)  # no decoding, no reader, no count per chunk
        # Per chunk: the long way (_take, _piece), two looks (what came before the chunk,
        # then the chunk) of at most three calls each, the judgement.
        assert len(others) <= 9 * (len(chunks) - 4)
    else:  # not due, or off: nothing but the append and the clock read
        assert others == []
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


def bound_near_the_end(provider: str) -> tuple[list[bytes], int]:
    """A body past keep whose text passes its bound (MAX_KEEP + 10,000) about 4 KB before
    the end, then the proof: what the SDK would read to the end if nobody read it."""
    bound = MAX_KEEP + 10_000
    words = ["x" * 2000] * (bound // 2000 + 3)
    if provider == "openai":
        return openai_text(words, done=True), bound
    return anthropic_text(words), bound


def split_at(chunks: list[bytes], at: int) -> list[bytes]:
    """The last chunk (the proof) split in two network pieces ``at`` bytes in."""
    *body, proof = chunks
    return [*body, proof[:at], proof[at:]] if 0 < at < len(proof) else chunks


def first_error(w: StreamWatch, chunks: list[bytes]) -> tuple[int, httpx2.HTTPError]:
    """The first chunk ``take`` refuses (it is never handed over), and its error."""
    for index, chunk in enumerate(chunks):
        error = w.take(chunk)
        if error is not None:
            return index, error
    pytest.fail("the text bound was never seen")


def assert_text_bound(error: httpx2.HTTPError | None) -> None:
    assert isinstance(error, httpx2.RemoteProtocolError)
    cause = guard.interruption(error)
    assert cause is not None and isinstance(cause.__cause__, TurnTooLarge)
    assert cause.__cause__.bound == "text"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("at", [0, 3, 8, 9, 11, 14])
def test_a_bound_crossed_near_the_end_is_seen_before_the_proof_goes_on(
    provider: str, at: int
) -> None:
    # The SDK stops at the proof (the openai SDK at [DONE], a caller at message_stop) and
    # closes the body: the guard must have read the bytes before it, and raise, first.
    chunks, bound = bound_near_the_end(provider)
    chunks = split_at(chunks, at)
    crossed = next(i for i in range(len(chunks)) if b"x" * 2000 in chunks[i]) + bound // 2000
    w = StreamWatch(provider, None, None, [], limits=TurnLimits(text=bound))
    index, error = first_error(w, chunks)
    # Seen no earlier than the chunk that passed the bound, and before the proof's last
    # piece (the one that completes its event) was handed over.
    assert crossed <= index <= len(chunks) - 1
    assert_text_bound(error)


def test_a_bound_crossed_near_the_end_of_a_gzip_body_is_seen_before_the_proof() -> None:
    chunks, bound = bound_near_the_end("openai")
    deflate = zlib.compressobj(wbits=31)  # gzip, one flushed block per event
    raw = [deflate.compress(chunk) + deflate.flush(zlib.Z_SYNC_FLUSH) for chunk in chunks]
    raw[-1] += deflate.flush()
    w = StreamWatch("openai", None, None, ["gzip"], limits=TurnLimits(text=bound))
    index, error = first_error(w, raw)
    assert index == len(raw) - 1  # at the proof's chunk, before the SDK had it
    assert_text_bound(error)


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


# -- the content clock (fake seconds) -------------------------------------------------------


def feed_at(w: StreamWatch, clock: FakeClock, t: float, chunk: bytes) -> httpx2.HTTPError | None:
    clock.t = 1000.0 + t
    return w.take(chunk)


def first_cut(w: StreamWatch, clock: FakeClock, start: float, every: float) -> float:
    """Keep-alives from ``start`` every ``every`` seconds: when does the clock cut?"""
    for i in range(1, 1000):
        t = start + every * i
        error = feed_at(w, clock, t, KEEP_ALIVE)
        if error is not None:
            assert isinstance(error, httpx2.ReadTimeout)
            return t
    pytest.fail("never cut")


def test_content_between_looks_counts_from_when_it_arrived(clock: FakeClock) -> None:
    # content_idle 10 s (the clock looks once a second); the last content at 0.5 s, then
    # keep-alives every 9 s: the limit passes at 10.5 s, the first keep-alive after it
    # (18.5 s) cuts. Stamped when the clock next looked (9.5 s), it cut at 27.5 s.
    w = a_watch("openai", content_idle=10.0)
    role, a, b, *_ = openai_text(["a", "b"])
    assert feed_at(w, clock, 0.0, role) is None
    assert feed_at(w, clock, 0.0, a) is None  # the first content: the clock looks now
    assert feed_at(w, clock, 0.5, b) is None  # content before the next look is due
    assert first_cut(w, clock, 0.5, 9.0) == 18.5


def test_content_read_between_looks_counts_from_when_it_arrived(clock: FakeClock) -> None:
    # The same past keep, where the reader reads what gathered.
    w = a_watch("openai", content_idle=10.0)
    for chunk in big_openai_body(done=False):
        assert feed_at(w, clock, 0.0, chunk) is None
    assert w._reader is not None  # read, not kept
    assert feed_at(w, clock, 0.5, openai_chunk({"content": "late"})) is None
    assert first_cut(w, clock, 0.5, 9.0) == 18.5


@pytest.mark.parametrize("arrival", [0.1, 0.5, 0.9, 1.0])
def test_the_clock_cuts_at_most_one_step_late_never_early(clock: FakeClock, arrival: float) -> None:
    w = a_watch("openai", content_idle=10.0)
    role, a, b, *_ = openai_text(["a", "b"])
    assert feed_at(w, clock, 0.0, role) is None
    assert feed_at(w, clock, 0.0, a) is None
    assert feed_at(w, clock, arrival, b) is None
    cut = first_cut(w, clock, arrival, 0.25)
    assert arrival + 10.0 < cut <= arrival + 10.0 + 1.0 + 0.25  # the step, one keep-alive


def test_content_in_the_chunk_that_finds_the_clock_due_is_seen(clock: FakeClock) -> None:
    w = a_watch("openai", content_idle=10.0)
    role, a, b, *_ = openai_text(["a", "b"])
    assert feed_at(w, clock, 0.0, role) is None
    assert feed_at(w, clock, 0.0, a) is None
    for i in range(1, 20):  # keep-alives to 9.5 s: the clock last looked at 9.0 s
        assert feed_at(w, clock, 0.5 * i, KEEP_ALIVE) is None
    # 10.5 s since the last content, and the clock is due: but this chunk is content.
    assert feed_at(w, clock, 10.5, b) is None
    assert first_cut(w, clock, 10.5, 9.0) == 28.5
