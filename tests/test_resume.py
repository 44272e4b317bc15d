"""Resuming a kept response, sans-IO: every Responses capture, cut anywhere, read again
from its resume point, is the turn the uncut stream is, and shows each event once."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from railings.errors import BadRequest, ConnectError, ResumeFailed, TurnTooLarge
from railings.events import StreamEvent
from railings.limits import TurnLimits
from railings.providers import spec
from railings.transport.machine import AttemptMachine, Finish, Resume, Retry
from railings.transport.retry import RetryPolicy
from railings.turn.attempt import Attempt
from railings.turn.ending import Complete, Cut, Empty, Partial
from railings.turn.model import Turn
from railings.turn.resume import Splice, plain_id, unresumed
from tests.kept_corpus import NUMBERED, WIRE, after, blocks


def read(
    body: bytes, *, keeps: bool = True, **options: object
) -> tuple[Attempt, list[StreamEvent]]:
    attempt = Attempt(WIRE, keeps=keeps, **options)  # type: ignore[arg-type]
    shown = list(attempt.feed(body, 0.0).events)
    return attempt, shown


def uncut(body: bytes) -> tuple[Turn, list[StreamEvent]]:
    attempt, shown = read(body, keeps=False)
    result = attempt.close()
    assert isinstance(result, Complete)
    return result.turn, shown + attempt.held()


def first_numbered_end(body: bytes) -> int:
    end = 0
    for block in blocks(body):
        end += len(block)
        if spec(WIRE).sequence_numbers(block):
            return end
    raise AssertionError("no numbered event")


def cut_points(body: bytes) -> list[int]:
    """Every event boundary, and the middle of every event."""
    points, end = [], 0
    for block in blocks(body):
        if b"response.completed" in block or b"response.incomplete" in block:
            return [*points, end + len(block) // 2]
        points += [end + len(block) // 2, end + len(block)]
        end += len(block)
    return points


@pytest.mark.parametrize("path", NUMBERED, ids=lambda p: p.stem)
def test_a_stream_cut_anywhere_resumes_to_the_uncut_turn(path: Path) -> None:
    body = path.read_bytes()
    whole, whole_events = uncut(body)
    for cut in cut_points(body):
        first, shown = read(body[:cut])
        first.broke(Cut("the connection broke"))
        ended = first.close()
        assert isinstance(ended, Partial | Empty), cut
        point = ended.resume
        if cut < first_numbered_end(body):  # not even response.created read whole: no id
            assert point is None, cut
            continue
        assert point is not None, cut
        assert point.response_id == whole.message_id
        # The provider streams the events after the point; a layer in between repeats the
        # point's own event first (dropped), and the bytes arrive in 7-byte pieces.
        again = blocks(point.transcript)[-1] + after(body, point.after)
        second = Attempt(WIRE, resuming=point)
        for start in range(0, len(again), 7):
            shown += second.feed(again[start : start + 7], 1.0).events
        result = second.close()
        assert isinstance(result, Complete), cut
        assert result.turn == replace(whole, resumed=(point.after,)), cut
        assert shown + second.held() == whole_events, cut


def test_a_stream_resumed_twice_records_both_points() -> None:
    body = NUMBERED[0].read_bytes()
    whole, whole_events = uncut(body)
    parts = blocks(body)
    one = sum(len(b) for b in parts[:3]) + 5
    first, shown = read(body[:one])
    first.broke(Cut("cut"))
    p1 = first.close().resume  # type: ignore[union-attr]
    assert p1 is not None
    rest = after(body, p1.after)
    second = Attempt(WIRE, resuming=p1)
    shown += second.feed(rest[: len(rest) // 2], 1.0).events
    second.broke(Cut("cut again"))
    p2 = second.close().resume  # type: ignore[union-attr]
    assert p2 is not None and p2.after > p1.after and p2.resumed == (p1.after,)
    third = Attempt(WIRE, resuming=p2)
    shown += third.feed(after(body, p2.after), 2.0).events
    result = third.close()
    assert isinstance(result, Complete)
    assert result.turn.resumed == (p1.after, p2.after)
    assert result.turn.text == whole.text and shown + third.held() == whole_events


def test_no_point_without_a_kept_response_or_for_a_final_ending() -> None:
    body = NUMBERED[0].read_bytes()
    half = body[: len(body) // 2]
    plain, _ = read(half, keeps=False)
    plain.broke(Cut("cut"))
    assert plain.close().resume is None  # type: ignore[union-attr]
    # A provider error event: the response failed on the server.
    whole = half[: half.rfind(b"\n\n") + 2]
    number = spec(WIRE).sequence_numbers(whole)[-1] + 1
    failed = whole + (
        b'event: error\ndata: {"type":"error","code":"server_error","message":"boom",'
        b'"sequence_number":%d}\n\n' % number
    )
    attempt, _ = read(failed)
    assert attempt.close().resume is None  # type: ignore[union-attr]
    # A bound railings enforces: reading the same events again ends the same way.
    small = Attempt(WIRE, keeps=True, limits=TurnLimits(events=3))
    for block in blocks(body):
        small.feed(block, 0.0)
    assert isinstance(small.failure, TurnTooLarge)
    assert small.close().resume is None  # type: ignore[union-attr]
    # Nothing numbered read whole: no response id, no point.
    early, _ = read(body[:10])
    early.broke(Cut("cut"))
    assert early.close().resume is None  # type: ignore[union-attr]


def test_the_splice_drops_repeats_and_passes_whole_events() -> None:
    body = NUMBERED[0].read_bytes()
    splice = Splice(WIRE, 3)
    out = b"".join(splice.feed(body[i : i + 5]) for i in range(0, len(body), 5))
    assert out == after(body, 3) and splice.dropped == 4 and splice.close() == b""


def machine(attempts: int = 4) -> AttemptMachine:
    return AttemptMachine(RetryPolicy(attempts=attempts), zero_waits=True)


def partial_with_point() -> Partial:
    body = NUMBERED[0].read_bytes()
    parts = blocks(body)
    attempt, _ = read(b"".join(parts[: len(parts) - 2]))
    attempt.broke(Cut("cut"))
    ended = attempt.close()
    assert isinstance(ended, Partial) and ended.resume is not None
    return ended


def test_the_machine_resumes_a_partial_within_the_attempts_then_finishes_it() -> None:
    ended = partial_with_point()
    m = machine(attempts=3)
    for attempt in (2, 3):
        m.begin()
        decision = m.decide(ended)
        assert isinstance(decision, Resume) and decision.attempt == attempt
        assert decision.point == ended.resume
    m.begin()
    final = m.decide(ended)
    assert isinstance(final, Finish) and final.interruption is ended.interruption
    assert [r.resume for r in m.retries] == [True, True]


def test_a_refused_resume_leaves_the_turn_partial_with_a_typed_error() -> None:
    ended = partial_with_point()
    refused = unresumed(ended, BadRequest("Response with id 'resp_x' not found.", status=404))
    assert isinstance(refused, Partial) and refused.resume is None
    assert isinstance(refused.interruption, ResumeFailed)
    assert refused.interruption.after == ended.resume.after  # type: ignore[union-attr]
    assert refused.turn is ended.turn
    decision = machine().decide(refused)
    assert isinstance(decision, Finish) and isinstance(decision.interruption, ResumeFailed)
    # A failure that may pass keeps the point: resumed again.
    passing = unresumed(ended, ConnectError("connection refused"))
    assert passing.resume == ended.resume
    assert isinstance(machine().decide(passing), Resume)


def test_an_empty_kept_attempt_that_cannot_resume_cancels_before_the_resend() -> None:
    body = NUMBERED[0].read_bytes()
    attempt, _ = read(blocks(body)[0])  # response.created only
    attempt.broke(Cut("cut"))
    ended = attempt.close()
    assert isinstance(ended, Empty) and ended.resume is not None
    m = machine()
    m.begin()
    assert isinstance(m.decide(ended), Resume)
    refused = unresumed(ended, BadRequest("not found", status=404))
    m.begin()
    decision = m.decide(refused)
    assert isinstance(decision, Retry) and decision.cancel == ended.resume.response_id


@pytest.mark.parametrize(
    "hostile", ["..", ".", "a/b", "resp_1?x=1", "resp_1#f", "http://evil", "a b", "", "é"]
)
def test_a_response_id_that_would_steer_the_next_request_gives_no_point(hostile: str) -> None:
    body = NUMBERED[0].read_bytes()
    whole = blocks(body)
    created = whole[0]
    real = uncut(body)[0].message_id
    forged = created.replace(real.encode(), json_string(hostile))
    attempt, _ = read(forged + b"".join(whole[1:4]))
    assert attempt.kept is None  # never named in a cancel either
    attempt.broke(Cut("cut"))
    ended = attempt.close()
    assert ended.resume is None  # type: ignore[union-attr]
    assert not plain_id(hostile) and plain_id(real)


def json_string(text: str) -> bytes:
    return json.dumps(text)[1:-1].encode()


def test_an_attempt_names_its_kept_response_only_while_it_may_run() -> None:
    body = NUMBERED[0].read_bytes()
    real = uncut(body)[0].message_id
    running, _ = read(b"".join(blocks(body)[:3]))
    assert running.kept == real
    plain, _ = read(b"".join(blocks(body)[:3]), keeps=False)
    assert plain.kept is None  # it asked the provider to keep nothing


def test_the_gateway_names_no_kept_response_a_hostile_server_steers() -> None:
    from railings.gateway.judge import StreamJudge

    body = NUMBERED[0].read_bytes()
    created, *rest = blocks(body)
    forged = created.replace(uncut(body)[0].message_id.encode(), b"..")
    judge = StreamJudge(WIRE, keeps=True)
    judge.feed(forged + b"".join(rest[:3]))
    assert judge.kept is None
