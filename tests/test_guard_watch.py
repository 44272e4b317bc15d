"""One watched stream, chunk by chunk: what is read when, bounds and the content clock.

The watch reads every byte with the core (one :class:`~railings.turn.attempt.Attempt`):
each piece at once until the first content, then what gathered, per 64 KiB rather
than per network piece, and always before a piece that may carry the proof goes on. A
bound is seen at most 64 KiB late, and before the proof. The content clock runs on a
fake clock (``watch._now``): its cuts are asserted in fake seconds.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, ClassVar

import httpx2
import pytest

import railings.transport.watch as watch
from _server import anthropic_text, openai_chunk, openai_text
from railings import guard
from railings.errors import TurnTooLarge
from railings.limits import TurnLimits
from railings.transport.watch import StreamWatch
from railings.turn.attempt import Attempt, Step

KEEP_ALIVE = b": keep-alive\n\n"
LONG = 4 * 2**20  # text in a long body (the old guard read bodies past this differently)


def a_watch(provider: str, **clock: float | None) -> StreamWatch:
    settings: dict[str, float | None] = {"content_idle": 300.0, "first_content": 600.0, **clock}
    return StreamWatch(provider, {"read": 600.0}, 30.0, [], **settings)


class FakeClock:
    """``watch._now``: fake seconds, moved by the test."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(watch, "_now", fake)
    return fake


def big_openai_body(done: bool = True) -> list[bytes]:
    word = "x" * 2000
    count = LONG // len(openai_chunk({"content": word})) + 1000
    chunks = openai_text([word] * count, done=done)
    return chunks if done else chunks[:-2]  # no finish, no usage: unproven


class CountingAttempt(Attempt):
    """The core attempt, counting its feeds (every one made, in order)."""

    made: ClassVar[list[CountingAttempt]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.feeds = 0
        self.made.append(self)

    def feed(self, chunk: bytes, now: float) -> Step:
        self.feeds += 1
        return super().feed(chunk, now)


@pytest.fixture
def attempts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[CountingAttempt]]:
    made: list[CountingAttempt] = []
    monkeypatch.setattr(CountingAttempt, "made", made)
    monkeypatch.setattr(watch, "Attempt", CountingAttempt)
    yield made


@pytest.mark.parametrize("done", [True, False])
def test_past_the_first_content_the_body_is_read_per_64_kib_not_per_piece(
    attempts: list[CountingAttempt], done: bool
) -> None:
    chunks = big_openai_body(done)
    total = sum(map(len, chunks))
    w = a_watch("openai")
    for chunk in chunks:
        assert w.take(chunk) is None
    assert (w.ended() is None) is done
    [attempt] = attempts
    # The role chunk and the first content one by one, then one feed per 64 KiB (and one
    # at the proof), not one per piece: there are len(chunks).
    assert attempt.feeds <= total // 65536 + 8
    assert len(chunks) > 10 * (total // 65536 + 8)


@pytest.mark.parametrize("done", [True, False])
def test_a_long_body_is_judged_at_its_end(done: bool) -> None:
    w = a_watch("openai")
    for chunk in big_openai_body(done):
        assert w.take(chunk) is None
    error = w.ended()
    assert (error is None) is done
    if not done:
        assert isinstance(error, httpx2.RemoteProtocolError)
        cause = guard.interruption(error)
        assert cause is not None and not cause.empty


def test_a_bound_is_seen_within_64_kib() -> None:
    chunks = big_openai_body()
    w = StreamWatch("openai", None, None, [], limits=TurnLimits(text=LONG))
    # Where the text passes the bound: the bytes up to the end of that chunk.
    text = at = 0
    while text <= LONG:
        text += 2000 if at else 0
        at += 1
    crossed = sum(map(len, chunks[:at]))
    index, error = first_error(w, chunks)
    passed = sum(map(len, chunks[:index]))  # the bytes the SDK was let read
    assert crossed - len(chunks[at - 1]) <= passed <= crossed + 65536
    assert_text_bound(error)


def bound_near_the_end(provider: str) -> tuple[list[bytes], int]:
    """A long body whose text passes its bound (LONG + 10,000) about 4 KB before the end,
    then the proof: what the SDK would read to the end if nobody read it."""
    bound = LONG + 10_000
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


def test_content_counts_from_when_it_arrived(clock: FakeClock) -> None:
    # content_idle 10 s; the last content at 0.5 s, then keep-alives every 9 s: the limit
    # passes at 10.5 s, the first keep-alive after it (18.5 s) cuts.
    w = a_watch("openai", content_idle=10.0)
    role, a, b, *_ = openai_text(["a", "b"])
    assert feed_at(w, clock, 0.0, role) is None
    assert feed_at(w, clock, 0.0, a) is None  # the first content
    assert feed_at(w, clock, 0.5, b) is None
    assert first_cut(w, clock, 0.5, 9.0) == 18.5


def test_content_after_a_long_body_counts_from_when_it_arrived(clock: FakeClock) -> None:
    w = a_watch("openai", content_idle=10.0)
    for chunk in big_openai_body(done=False):
        assert feed_at(w, clock, 0.0, chunk) is None
    assert feed_at(w, clock, 0.5, openai_chunk({"content": "late"})) is None
    assert first_cut(w, clock, 0.5, 9.0) == 18.5


@pytest.mark.parametrize("arrival", [0.1, 0.5, 0.9, 1.0])
def test_the_clock_cuts_at_the_first_keepalive_at_its_limit_never_before(
    clock: FakeClock, arrival: float
) -> None:
    w = a_watch("openai", content_idle=10.0)
    role, a, b, *_ = openai_text(["a", "b"])
    assert feed_at(w, clock, 0.0, role) is None
    assert feed_at(w, clock, 0.0, a) is None
    assert feed_at(w, clock, arrival, b) is None
    cut = first_cut(w, clock, arrival, 0.25)
    assert arrival + 10.0 <= cut < arrival + 10.0 + 0.25  # the first keep-alive from the limit


def test_only_keepalives_before_the_first_content_are_cut_at_first_content(
    clock: FakeClock,
) -> None:
    w = a_watch("openai", content_idle=10.0, first_content=60.0)
    assert feed_at(w, clock, 0.0, openai_text(["a"])[0]) is None  # the role: no content yet
    assert first_cut(w, clock, 0.0, 7.0) == 63.0  # not at content_idle: 60 s, then a step
    w = a_watch("openai", content_idle=None, first_content=None)
    assert feed_at(w, clock, 5000.0, KEEP_ALIVE) is None  # both off: never cut


def test_content_in_the_chunk_that_finds_the_clock_due_is_seen(clock: FakeClock) -> None:
    w = a_watch("openai", content_idle=10.0)
    role, a, b, *_ = openai_text(["a", "b"])
    assert feed_at(w, clock, 0.0, role) is None
    assert feed_at(w, clock, 0.0, a) is None
    for i in range(1, 20):  # keep-alives to 9.5 s
        assert feed_at(w, clock, 0.5 * i, KEEP_ALIVE) is None
    # 10.5 s since the last content, and the clock is due: but this chunk is content.
    assert feed_at(w, clock, 10.5, b) is None
    assert first_cut(w, clock, 10.5, 9.0) == 28.5
