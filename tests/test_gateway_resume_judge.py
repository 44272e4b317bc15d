"""The gateway's judge resumes a kept response, sans-IO: every Responses capture cut
anywhere and read again from its resume point reaches the client as the uncut stream,
byte for byte, each byte once, held tool calls included."""

from __future__ import annotations

from pathlib import Path

import pytest

from railings.gateway.judge import Ending, StreamJudge
from railings.turn.ending import Complete, Cut, Empty, Partial
from railings.turn.resume import ResumePoint
from tests.kept_corpus import NUMBERED, WIRE, after, blocks


def cut_points(body: bytes) -> list[int]:
    """Every event boundary before the proof, and the middle of every event."""
    points, end = [], 0
    for block in blocks(body):
        if b"response.completed" in block or b"response.incomplete" in block:
            return [*points, end + len(block) // 2]
        points += [end + len(block) // 2, end + len(block)]
        end += len(block)
    return points


def uncut(body: bytes, refuse: bool) -> bytes:
    judge = StreamJudge(WIRE, keeps=True, refuse_cut_calls=refuse)
    return judge.feed(body) + judge.close()


def broken(body: bytes, refuse: bool) -> tuple[bytes, bytes, StreamJudge]:
    """A judge that read ``body`` and broke: what it sent, its tail and itself."""
    judge = StreamJudge(WIRE, keeps=True, refuse_cut_calls=refuse)
    sent = judge.feed(body)
    judge.attempt.broke(Cut("the connection broke"))
    return sent, judge.close(), judge


def resumed(point: ResumePoint, shown: int, body: bytes, refuse: bool, piece: int) -> bytes:
    judge = StreamJudge(WIRE, keeps=True, refuse_cut_calls=refuse)
    out = [judge.resume(point, shown)]
    out += [judge.feed(body[i : i + piece]) for i in range(0, len(body), piece)]
    out.append(judge.close())
    return b"".join(out)


@pytest.mark.parametrize("refuse", [True, False], ids=["refuse", "pass"])
@pytest.mark.parametrize("path", NUMBERED, ids=lambda p: p.stem)
def test_a_stream_cut_anywhere_reaches_the_client_as_the_uncut_one(
    path: Path, refuse: bool
) -> None:
    body = path.read_bytes()
    whole = uncut(body, refuse)
    for cut in cut_points(body):
        sent, tail, judge = broken(body[:cut], refuse)
        outcome = judge.outcome
        assert isinstance(outcome, Partial | Empty), cut
        point = outcome.resume
        if point is None:  # not even response.created read whole: nothing left the judge
            assert sent == b"" and judge.ending is Ending.EMPTY, cut
            continue
        # The error event a break ends with is the tail alone, for a resume to drop.
        assert (tail != b"") == (judge.ending is Ending.PARTIAL), cut
        assert b"event: error" not in sent, cut
        # The upstream repeats the point's own event first (dropped), in 7-byte pieces.
        again = blocks(point.transcript)[-1] + after(body, point.after)
        assert sent + resumed(point, len(sent), again, refuse, 7) == whole, cut


def test_a_stream_resumed_twice_is_the_uncut_one() -> None:
    body = NUMBERED[0].read_bytes()
    whole = uncut(body, True)
    parts = blocks(body)
    sent, _, first = broken(b"".join(parts[:3]) + parts[3][:5], True)
    p1 = first.outcome.resume  # type: ignore[union-attr]
    assert p1 is not None
    rest = after(body, p1.after)
    second = StreamJudge(WIRE, keeps=True)
    sent += second.resume(p1, len(sent))
    sent += second.feed(rest[: len(rest) // 2])
    second.attempt.broke(Cut("cut again"))
    assert second.close().startswith(b"event: error")  # dropped by the resume
    p2 = second.outcome.resume  # type: ignore[union-attr]
    assert p2 is not None and p2.after > p1.after
    assert sent + resumed(p2, len(sent), after(body, p2.after), True, 1) == whole


def test_a_held_call_is_held_again_and_leaves_once_whole() -> None:
    # Cut inside a call's arguments: under refuse its events were held, none sent; the
    # resumed judge holds them again from the transcript and sends them once, whole.
    path = next(p for p in NUMBERED if b"function_call_arguments.delta" in p.read_bytes())
    body = path.read_bytes()
    at = body.index(b"function_call_arguments.delta")
    cut = body.index(b"\n\n", at) + 2
    sent, _, judge = broken(body[:cut], True)
    assert b"function_call_arguments.delta" not in sent
    point = judge.outcome.resume  # type: ignore[union-attr]
    assert point is not None
    rest = resumed(point, len(sent), after(body, point.after), True, 64)
    assert sent + rest == uncut(body, True)
    assert rest.count(b"function_call_arguments.delta") == body.count(
        b"function_call_arguments.delta"
    )


def test_a_fault_after_content_is_resumable_and_its_error_event_waits() -> None:
    body = next(p for p in NUMBERED if b"output_text.delta" in p.read_bytes()).read_bytes()
    parts = blocks(body)
    text = next(i for i, b in enumerate(parts) if b"output_text.delta" in b)
    bad = b"event: response.output_text.delta\ndata: {not json\n\n"
    judge = StreamJudge(WIRE, keeps=True)
    sent = judge.feed(b"".join(parts[: text + 1]) + bad)
    assert judge.ending is Ending.PARTIAL and b"event: error" not in sent
    tail = judge.close()
    assert tail.startswith(b"event: error")
    point = judge.outcome.resume  # type: ignore[union-attr]
    assert point is not None and point.transcript == b"".join(parts[: text + 1])
    assert sent + resumed(point, len(sent), after(body, point.after), True, 5) == body
    # Without keeps, the same fault's error event leaves at once, as it always did.
    plain = StreamJudge(WIRE)
    assert plain.feed(b"".join(parts[: text + 1]) + bad).endswith(tail)


def test_a_resumed_event_past_the_event_limit_is_refused_not_held() -> None:
    body = NUMBERED[0].read_bytes()
    parts = blocks(body)
    sent, _, first = broken(b"".join(parts[:6]), True)
    point = first.outcome.resume  # type: ignore[union-attr]
    assert point is not None
    judge = StreamJudge(WIRE, keeps=True, max_event_size=4096)
    judge.resume(point, len(sent))
    judge.feed(b"data: " + b"x" * 5000)  # no blank line: one event growing without end
    assert judge.done and judge.ending is Ending.PARTIAL
    assert judge.close().startswith(b"event: error")
    assert judge.outcome.resume is None  # type: ignore[union-attr]


def test_a_final_ending_carries_no_point() -> None:
    # The gateway's refusal of a call held past its bound is its last word: not resumed.
    path = next(p for p in NUMBERED if b"function_call_arguments.delta" in p.read_bytes())
    body = path.read_bytes()
    judge = StreamJudge(WIRE, keeps=True, max_held=10)
    judge.feed(body[: body.rindex(b"function_call_arguments.delta")])
    assert judge.ending is Ending.REFUSED
    judge.close()
    assert judge.outcome is not None and not isinstance(judge.outcome, Complete)
    assert judge.outcome.resume is None


def test_without_keeps_no_point_and_the_tail_is_the_error_event() -> None:
    body = NUMBERED[0].read_bytes()
    judge = StreamJudge(WIRE)
    sent = judge.feed(body[: len(body) // 2])
    tail = judge.close()
    assert sent and tail.startswith(b"event: error")
    assert judge.outcome.resume is None  # type: ignore[union-attr]
    assert judge.kept is None
