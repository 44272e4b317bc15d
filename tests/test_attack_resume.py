"""Resuming a kept response, attacked: a hostile model server and a hostile network.

Each test is one attack on the resume path (:mod:`railings.turn.resume`, the attempt
machine's rule 0, the client's attempt loop) and states what must hold whatever the
server does: the caller sees every event once, none twice and none missing; a turn is
finished only by the provider's proof; a Partial is never sent again by POST; an Empty
kept attempt is cancelled before its request is sent again; the request that reads a
response again goes to the configured origin and path, and nowhere else; memory stays
within the turn's bounds. Everything is bounded by bytes, events or requests, never by
time. Sans-IO attacks feed :class:`~railings.turn.attempt.Attempt` directly; the others
run the client against a hostile server of their own on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from railings.errors import (
    ConfigurationError,
    EventTooLarge,
    MalformedStream,
    ResumeFailed,
    StreamInterrupted,
    TurnTooLarge,
)
from railings.events import StreamEvent
from railings.limits import TurnLimits
from railings.messages import User
from railings.providers import spec
from railings.testing.http import (
    LAST_CHUNK,
    HTTPFault,
    Request,
    close_writer,
    encode_chunk,
    read_request,
    render_head,
)
from railings.testing.service import Service
from railings.transport import AsyncProviderClient, ClientConfig, ClientContext
from railings.transport.errors_map import error_from_response
from railings.transport.machine import (
    AttemptMachine,
    Finish,
    Raise,
    ReplayOverHTTP1,
    Resume,
    Retry,
)
from railings.transport.retry import RetryPolicy
from railings.turn.attempt import Attempt
from railings.turn.ending import Complete, Cut, Empty, Partial
from railings.turn.model import Outcome, Turn
from railings.turn.reader import StreamReader
from railings.turn.resume import ResumePoint, unresumed
from railings.turn.verdict import RejectReason, Verdict, judge
from railings.wire.blocks import EventSplitter

WIRE = "openai-responses"
RID = "resp_attack0001"
KiB, MiB = 1024, 1024 * 1024


# -- a Responses stream, written by hand ---------------------------------------------------


def event(number: int | None, kind: str, eol: bytes = b"\n", **fields: Any) -> bytes:
    """One Responses event, numbered ``number`` (None: no number), its lines ended by ``eol``."""
    obj: dict[str, Any] = {"type": kind}
    if number is not None:
        obj["sequence_number"] = number
    obj.update(fields)
    data = json.dumps(obj, ensure_ascii=False).encode()
    return b"event: " + kind.encode() + eol + b"data: " + data + eol + eol


def text_events(words: list[str], *, rid: str = RID, eol: bytes = b"\n") -> list[bytes]:
    """A whole text turn: created, an item, one delta per word, the item done, completed."""
    text = "".join(words)
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed"}
    item["content"] = [{"type": "output_text", "text": text, "annotations": []}]
    out = [
        event(0, "response.created", eol, response={"id": rid, "model": "m", "output": []}),
        event(1, "response.output_item.added", eol, output_index=0, item={**item, "content": []}),
    ]
    for word in words:
        out.append(
            event(
                len(out),
                "response.output_text.delta",
                eol,
                item_id="msg_1",
                output_index=0,
                content_index=0,
                delta=word,
            )
        )
    out.append(event(len(out), "response.output_item.done", eol, output_index=0, item=item))
    usage = {"input_tokens": 3, "output_tokens": len(words), "total_tokens": 3 + len(words)}
    response = {"id": rid, "status": "completed", "output": [item], "usage": usage}
    out.append(event(len(out), "response.completed", eol, response=response))
    return out


def call_events(fragments: list[str], *, proof: bytes | None = None, rid: str = RID) -> list[bytes]:
    """A turn with one function call whose arguments arrive as ``fragments``; ``proof``
    replaces the default ending (arguments done, item done, completed)."""
    item = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "run"}
    out = [
        event(0, "response.created", response={"id": rid, "model": "m", "output": []}),
        event(1, "response.output_item.added", output_index=0, item={**item, "arguments": ""}),
    ]
    for fragment in fragments:
        out.append(
            event(
                len(out),
                "response.function_call_arguments.delta",
                item_id="fc_1",
                output_index=0,
                delta=fragment,
            )
        )
    if proof is not None:
        return [*out, proof.replace(b'"sequence_number": -1', b'"sequence_number": %d' % len(out))]
    arguments = "".join(fragments)
    done = {**item, "arguments": arguments, "status": "completed"}
    out.append(
        event(
            len(out),
            "response.function_call_arguments.done",
            item_id="fc_1",
            output_index=0,
            arguments=arguments,
        )
    )
    out.append(event(len(out), "response.output_item.done", output_index=0, item=done))
    response = {"id": rid, "status": "completed", "output": [done]}
    out.append(event(len(out), "response.completed", response=response))
    return out


def number_of(block: bytes) -> int:
    return int(json.loads(block.partition(b"data: ")[2].splitlines()[0])["sequence_number"])


def after(blocks: list[bytes], n: int) -> bytes:
    """What an honest provider streams again after event ``n``."""
    return b"".join(b for b in blocks if number_of(b) > n)


def whole(body: bytes) -> tuple[Turn, list[StreamEvent]]:
    """The turn and the events one uncut stream of ``body`` gives the caller."""
    attempt = Attempt(WIRE)
    shown = list(attempt.feed(body, 0.0).events)
    ended = attempt.close()
    assert isinstance(ended, Complete)
    return ended.turn, shown + attempt.held()


def first_attempt(body: bytes, **options: Any) -> tuple[Partial | Empty, list[StreamEvent]]:
    """A kept attempt that read ``body`` and broke."""
    attempt = Attempt(WIRE, keeps=True, **options)
    shown = list(attempt.feed(body, 0.0).events)
    attempt.broke(Cut("the connection broke"))
    ended = attempt.close()
    assert isinstance(ended, Partial | Empty)
    return ended, shown


def resumed(
    point: ResumePoint, body: bytes, piece: int = 0, **options: Any
) -> tuple[Attempt, list[StreamEvent]]:
    """An attempt resuming ``point`` that read ``body`` (in pieces of ``piece`` bytes)."""
    attempt = Attempt(WIRE, resuming=point, **options)
    shown: list[StreamEvent] = []
    size = piece or max(1, len(body))
    for start in range(0, len(body), size):
        step = attempt.feed(body[start : start + size], 1.0)
        shown += step.events
        if step.done:
            break
    return attempt, shown


# -- what the resumed stream says about events the first one already gave -----------------


def test_events_sent_again_with_other_content_are_dropped_not_shown() -> None:
    blocks = text_events(["Hello", ", ", "world", "!"])
    uncut_turn, uncut_events = whole(b"".join(blocks))
    ended, shown = first_attempt(b"".join(blocks[:4]))  # created, item, Hello, ", "
    point = ended.resume
    assert point is not None and point.after == 3
    # The server sends events 0..3 again, each with other content, then the rest.
    forged = [b.replace(b"Hello", b"HIJACK").replace(b", ", b" ! ") for b in blocks[:4]]
    attempt, more = resumed(point, b"".join(forged) + after(blocks, 3), piece=3)
    result = attempt.close()
    assert isinstance(result, Complete)
    assert result.turn == replace(uncut_turn, resumed=(3,))
    assert shown + more + attempt.held() == uncut_events


def test_a_gap_in_the_resumed_stream_is_malformed_and_shows_nothing_twice() -> None:
    blocks = text_events(["a", "b", "c", "d", "e", "f", "g", "h"])
    _, uncut_events = whole(b"".join(blocks))
    ended, shown = first_attempt(b"".join(blocks[:4]))
    point = ended.resume
    assert point is not None
    gap = after(blocks, point.after + 5)  # N + 6 on: five events lost on the way
    attempt, more = resumed(point, gap)
    result = attempt.close()
    assert isinstance(result, Partial)
    assert result.turn.error is not None and "out of sequence" in result.turn.error.message
    assert more == []  # nothing after the gap reached the caller
    again = result.resume  # resumed again from where the reader really was
    assert again is not None and again.after == point.after
    final, rest = resumed(again, after(blocks, again.after))
    assert isinstance(final.close(), Complete)
    assert shown + more + rest + final.held() == uncut_events


def test_a_step_back_after_new_events_never_shows_an_event_twice() -> None:
    blocks = text_events(["a", "b", "c", "d", "e", "f"])
    uncut_turn, uncut_events = whole(b"".join(blocks))
    ended, shown = first_attempt(b"".join(blocks[:4]))
    point = ended.resume
    assert point is not None and point.after == 3
    # Two new events, then the server steps back to event 4 (new to the first attempt,
    # already given by this one) and goes on from there.
    hostile = blocks[4] + blocks[5] + blocks[4] + b"".join(blocks[5:])
    attempt, more = resumed(point, hostile)
    result = attempt.close()
    assert isinstance(result, Partial)
    assert isinstance(result.interruption.__cause__, MalformedStream) or (
        result.turn.error is not None and "out of sequence" in result.turn.error.message
    )
    assert shown + more == uncut_events[: len(shown) + len(more)]
    again = result.resume
    assert again is not None and again.after == 5
    final, rest = resumed(again, after(blocks, 5))
    end = final.close()
    assert isinstance(end, Complete) and end.turn == replace(uncut_turn, resumed=(3, 5))
    assert shown + more + rest + final.held() == uncut_events


def test_a_second_response_created_with_another_id_does_not_steer_the_next_resume() -> None:
    blocks = text_events(["a", "b", "c", "d", "e"])
    ended, _ = first_attempt(b"".join(blocks[:4]))
    point = ended.resume
    assert point is not None and point.response_id == RID
    other = event(4, "response.created", response={"id": "resp_elsewhere", "model": "m"})
    attempt, _ = resumed(point, other)
    attempt.broke(Cut("cut again"))
    result = attempt.close()
    assert isinstance(result, Partial) and result.turn.message_id == RID
    assert result.resume is not None and result.resume.response_id == RID


# -- a cut tool call -------------------------------------------------------------------------


def test_a_call_cut_by_the_output_limit_stays_refused_across_a_resume() -> None:
    incomplete = event(
        -1,
        "response.incomplete",
        response={
            "id": RID,
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "usage": {"input_tokens": 3, "output_tokens": 16, "total_tokens": 19},
        },
    )
    blocks = call_events(['{"cmd": "rm -rf /tmp/', "scratch"], proof=incomplete)
    ended, _ = first_attempt(b"".join(blocks[:3]))
    point = ended.resume
    assert point is not None
    attempt, _ = resumed(point, after(blocks, point.after), piece=5)
    result = attempt.close()
    assert isinstance(result, Complete) and result.turn.truncated
    (verdict,) = judge(result.turn)
    assert not verdict.execute and verdict.reason is RejectReason.TRUNCATED


def test_a_call_whose_resumed_stream_breaks_again_never_runs() -> None:
    blocks = call_events(['{"cmd": "rm -rf /tmp/', 'scratch/old"}'])
    ended, _ = first_attempt(b"".join(blocks[:3]))
    point = ended.resume
    assert point is not None
    # The rest of the arguments arrive, the stream breaks before the call is done.
    attempt, _ = resumed(point, blocks[3])
    attempt.broke(Cut("cut again"))
    result = attempt.close()
    assert isinstance(result, Partial) and result.turn.outcome is Outcome.PARTIAL
    (verdict,) = judge(result.turn)
    assert not verdict.execute and verdict.reason is RejectReason.INTERRUPTED


# -- cut anywhere: mid-event, mid-UTF-8, between CR and LF ----------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
def test_a_stream_cut_at_every_byte_resumes_to_the_uncut_turn(eol: bytes) -> None:
    blocks = text_events(["Zürich ", "日本", "🙂", " ok"], eol=eol)
    body = b"".join(blocks)
    uncut_turn, uncut_events = whole(body)
    created_end = len(blocks[0])
    for cut in range(1, len(body) - len(blocks[-1]) // 2):
        ended, shown = first_attempt(body[:cut])
        point = ended.resume
        if cut < created_end - len(eol) + 1:  # response.created not read whole: no id
            assert point is None, cut
            continue
        assert point is not None, (cut, body[cut - 3 : cut + 3])
        # A layer in between sends the point's own event again first; pieces of 1 byte.
        again = event_numbered(blocks, point.after) + after(blocks, point.after)
        attempt, more = resumed(point, again, piece=1)
        result = attempt.close()
        assert isinstance(result, Complete), cut
        assert result.turn == replace(uncut_turn, resumed=(point.after,)), cut
        assert shown + more + attempt.held() == uncut_events, cut


def event_numbered(blocks: list[bytes], n: int) -> bytes:
    return next(b for b in blocks if number_of(b) == n)


def test_a_network_that_sends_the_lf_after_a_cut_cr_changes_nothing() -> None:
    blocks = text_events(["one ", "two ", "three"], eol=b"\r\n")
    body = b"".join(blocks)
    uncut_turn, uncut_events = whole(body)
    cut = sum(len(b) for b in blocks[:4]) - 1  # between the last CR and LF of event 3
    ended, shown = first_attempt(body[:cut])
    point = ended.resume
    assert point is not None and point.after == 3
    attempt, more = resumed(point, b"\n" + after(blocks, 3), piece=2)
    result = attempt.close()
    assert isinstance(result, Complete) and result.turn == replace(uncut_turn, resumed=(3,))
    assert shown + more + attempt.held() == uncut_events


# -- forged numbers: the transcript is what the reader read, whatever the bytes say --------


def test_a_forged_nested_number_cannot_make_the_caller_see_events_twice() -> None:
    """An event carries a second ``sequence_number`` inside a nested object: the number
    the decoder reads is the event's own, and so must be the resume point's."""
    blocks = text_events(["a", "b", "c", "d", "e", "f"])
    _, uncut_events = whole(b"".join(blocks))
    forged = blocks[2].replace(b'"delta": "a"', b'"delta": "a", "x": {"sequence_number": 4}')
    first = [blocks[0], blocks[1], forged, blocks[3], blocks[4]]
    ended, shown = first_attempt(b"".join(first))
    point = ended.resume
    assert point is not None and point.after == 4
    # The server resumes from its event 3 again, each repeat with a nested number past 4.
    hostile = [b.replace(b'"delta"', b'"x": {"sequence_number": 99}, "delta"') for b in blocks[3:5]]
    attempt, more = resumed(point, b"".join(hostile) + after(blocks, 4))
    result = attempt.close()
    assert isinstance(result, Partial) and more == []  # out of sequence: nothing shown
    assert result.resume is not None and result.resume.after == 4
    seen = shown + more + attempt.held()
    assert seen == uncut_events[: len(seen)]


def test_an_event_without_a_number_that_was_shown_is_not_lost_by_the_resume() -> None:
    blocks = text_events(["a", "b", "c", "d"])
    unnumbered = event(
        None,
        "response.output_text.delta",
        item_id="msg_1",
        output_index=0,
        content_index=0,
        delta="+",
    )
    first = [*blocks[:4], unnumbered]
    ended, shown = first_attempt(b"".join(first))
    point = ended.resume
    texts = [e.text for e in shown if hasattr(e, "text")]
    assert texts == ["a", "b", "+"]
    assert point is not None and point.after == 3 and point.transcript.endswith(unnumbered)
    attempt, more = resumed(point, after(blocks, point.after))
    result = attempt.close()
    assert isinstance(result, Complete)
    assert result.turn.text == "".join(
        e.text for e in shown + more + attempt.held() if hasattr(e, "text")
    )


# -- memory: every byte kept for the transcript, within the turn's bounds -------------------


def flood(first: bytes, unit: bytes, total: int) -> Iterator[bytes]:
    """``first``, then ``unit`` repeated in 64 KiB chunks, ``total`` bytes in all, lazily."""
    piece = unit * max(1, 64 * KiB // len(unit))
    yield first
    sent = len(first)
    while sent < total:
        yield piece
        sent += len(piece)


def feed_all(attempt: Attempt, chunks: Iterator[bytes]) -> int:
    """Feed until the attempt is done; the bytes fed."""
    fed = 0
    for chunk in chunks:
        fed += len(chunk)
        if attempt.feed(chunk, 0.0).done:
            break
    return fed


def test_a_keep_alive_flood_on_a_kept_request_ends_too_large_with_no_resume() -> None:
    blocks = text_events(["a", "b"])
    limit = 2 * MiB

    def run() -> tuple[Partial | Empty | Complete, int]:
        attempt = Attempt(WIRE, keeps=True, limits=TurnLimits(bytes=limit))
        fed = feed_all(attempt, flood(b"".join(blocks[:3]), b": keep-alive\n\n", 64 * MiB))
        return attempt.close(), fed

    tracemalloc.start()
    try:
        ended, fed = run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(ended, Partial) and ended.resume is None
    assert isinstance(ended.interruption.__cause__, TurnTooLarge)
    assert fed <= limit + 128 * KiB
    assert peak < 3 * limit, f"peak {peak / MiB:.1f} MiB"


def test_a_resumed_stream_of_old_events_without_end_is_bounded_by_bytes() -> None:
    blocks = text_events(["a", "b", "c", "d"])
    ended, _ = first_attempt(b"".join(blocks[:5]))
    point = ended.resume
    assert point is not None
    limit = 2 * MiB
    attempt = Attempt(WIRE, resuming=point, limits=TurnLimits(bytes=limit))
    # Event 1 again and again: each dropped as already read, none new.
    fed = feed_all(attempt, flood(b"", blocks[1], 64 * MiB))
    assert fed <= limit + 128 * KiB, f"fed {fed / MiB:.1f} MiB before the bound"
    result = attempt.close()
    assert isinstance(result, Partial) and result.resume is None
    assert isinstance(result.interruption.__cause__, TurnTooLarge)


def test_a_resumed_event_that_never_ends_is_bounded() -> None:
    blocks = text_events(["a", "b", "c", "d"])
    ended, _ = first_attempt(b"".join(blocks[:5]))
    point = ended.resume
    assert point is not None
    size = 1 * MiB

    def run() -> tuple[Attempt, int]:
        attempt = Attempt(WIRE, resuming=point, max_event_size=size)
        fed = feed_all(attempt, flood(b"data: ", b"z", 64 * MiB))
        return attempt, fed

    tracemalloc.start()
    try:
        attempt, fed = run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert fed <= 4 * size + 128 * KiB, f"fed {fed / MiB:.1f} MiB before the bound"
    assert isinstance(attempt.failure, EventTooLarge | TurnTooLarge)
    assert peak < 6 * size, f"peak {peak / MiB:.1f} MiB"
    result = attempt.close()
    assert isinstance(result, Partial) and result.resume is None


# -- the double payment: a kept response is cancelled before its request goes again --------


def test_an_empty_kept_attempt_with_no_point_but_a_known_id_is_cancelled_before_a_resend() -> None:
    """``response.created`` came whole but without a number: the response exists and runs,
    but there is no point to resume from. Sending the request again must cancel it first."""
    created = event(None, "response.created", response={"id": RID, "model": "m"})
    ended, shown = first_attempt(created)
    assert isinstance(ended, Empty) and ended.resume is None and shown == []
    machine = AttemptMachine(RetryPolicy(attempts=3), zero_waits=True)
    machine.begin()
    decision = machine.decide(ended, kept=RID)
    assert isinstance(decision, Retry) and decision.cancel == RID


def test_an_empty_kept_attempt_replayed_over_http1_is_cancelled_first() -> None:
    """An HTTP/2 failure replays the request over HTTP/1.1: a resend like any other."""
    cut = StreamInterrupted("the stream broke", empty=True)
    cut.__cause__ = ConnectionError("h2 ConnectionTerminated error_code:2")
    machine = AttemptMachine(RetryPolicy(attempts=1), zero_waits=True)
    machine.begin()
    decision = machine.decide(Empty(error=cut, over_http2=True), kept=RID)
    assert isinstance(decision, ReplayOverHTTP1) and decision.cancel == RID


def refused_resume(status: int, retry_after: str, previous: Partial | Empty) -> Partial | Empty:
    """``previous`` after the request that reads it again was answered ``status``."""
    headers = {"retry-after": retry_after}
    body = b'{"error": {"message": "slow down", "type": "rate_limit_exceeded"}}'
    return unresumed(previous, error_from_response(status, headers, body))


@pytest.mark.parametrize("status", [429, 503])
def test_the_resume_waits_as_long_as_the_provider_said(status: int) -> None:
    blocks = text_events(["a", "b", "c"])
    ended, _ = first_attempt(b"".join(blocks[:4]))
    assert isinstance(ended, Partial)
    machine = AttemptMachine(RetryPolicy(attempts=4), rng=random.Random(1))
    machine.begin()
    first = machine.decide(ended)
    assert isinstance(first, Resume)
    machine.begin()
    decision = machine.decide(refused_resume(status, "7", ended))
    assert isinstance(decision, Resume) and decision.wait == 7.0


def test_a_resume_told_to_wait_too_long_gives_up_without_a_resend() -> None:
    blocks = text_events(["a", "b", "c"])
    partial, _ = first_attempt(b"".join(blocks[:4]))
    empty, _ = first_attempt(blocks[0])
    assert isinstance(partial, Partial) and isinstance(empty, Empty)
    for ended in (partial, empty):
        machine = AttemptMachine(RetryPolicy(attempts=4, max_retry_after=60), zero_waits=True)
        machine.begin()
        assert isinstance(machine.decide(ended), Resume)
        machine.begin()
        decision = machine.decide(refused_resume(429, "3600", ended))
        # The Partial is finished as it stands; the Empty is not sent again against the
        # provider's word (and not cancelled: it may yet be read).
        assert isinstance(decision, Finish if ended is partial else Raise), decision


def test_a_partial_whose_resumes_are_spent_is_finished_not_resent() -> None:
    blocks = text_events(["a", "b", "c"])
    ended, _ = first_attempt(b"".join(blocks[:4]))
    assert isinstance(ended, Partial) and ended.resume is not None
    machine = AttemptMachine(RetryPolicy(attempts=2), zero_waits=True)
    machine.begin()
    assert isinstance(machine.decide(ended), Resume)
    machine.begin()
    final = machine.decide(ended)
    assert isinstance(final, Finish) and final.interruption is ended.interruption


# -- the client against a hostile server on 127.0.0.1 ---------------------------------------

HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
)
KEY = "sk-attack-key-0001"


def sse(body: bytes, *, ends: bool = False) -> bytes:
    """A streamed answer of ``body``; without ``ends`` the connection is cut after it."""
    return HEAD + (encode_chunk(body) if body else b"") + (LAST_CHUNK if ends else b"")


def answer(status: int, obj: Any, *headers: tuple[str, str]) -> bytes:
    payload = json.dumps(obj).encode()
    head = [
        ("content-type", "application/json"),
        ("content-length", str(len(payload))),
        *headers,
        ("connection", "close"),
    ]
    return render_head(status, head) + payload


def error(status: int, message: str, *headers: tuple[str, str]) -> bytes:
    """An error answer as OpenAI's API gives it for ``status``."""
    kind = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status, "server_error")
    if 400 <= status < 500 and status not in (401, 429):
        kind = "invalid_request_error"
    body = {"error": {"message": message, "type": kind, "code": None}}
    return answer(status, body, *headers)


class Hostile(Service):
    """Answers its n-th request (a cancel aside) with ``answers[n]``, written whole, then
    closes the connection; past the list, 404. A cancel is answered 200 and recorded."""

    def __init__(self, answers: list[bytes]) -> None:
        super().__init__()
        self.answers = answers
        self.requests: list[Request] = []
        self._used = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await read_request(reader)
        except (EOFError, HTTPFault):
            await close_writer(writer)
            return
        self.requests.append(request)
        if request.path.endswith("/cancel"):
            reply = answer(200, {"id": "cancelled", "status": "cancelled"})
        elif self._used < len(self.answers):
            reply, self._used = self.answers[self._used], self._used + 1
        else:
            reply = error(404, "no more answers")
        writer.write(reply)
        await writer.drain()
        await close_writer(writer)

    @property
    def sent(self) -> list[tuple[str, str]]:
        return [(r.method, r.target) for r in self.requests]

    @property
    def posts(self) -> int:
        """The requests that would generate (and bill) the turn again."""
        return sum(1 for r in self.requests if r.method == "POST" and r.path == "/v1/responses")


@pytest.fixture
def hostile() -> Iterator[Callable[[list[bytes]], Hostile]]:
    servers: list[Hostile] = []

    def start(answers: list[bytes]) -> Hostile:
        server = Hostile(answers).start_in_thread()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def kept_config(server: Hostile, **options: Any) -> ClientConfig:
    """The client's configuration for ``server``, resume on."""
    base_url = options.pop("base_url", server.url + "/v1")
    return ClientConfig(
        provider="openai-responses",
        model="m",
        base_url=base_url,
        api_key=KEY,
        http2=False,
        resume=True,
        **options,
    )


def run_turn(
    server: Hostile, *, attempts: int = 4, **options: Any
) -> tuple[Turn, list[StreamEvent], Any]:
    """One turn with resume on: (the turn, the events the caller saw, the interruption)."""
    config = kept_config(server, retry=RetryPolicy(attempts=attempts), **options)

    async def main() -> tuple[Turn, list[StreamEvent], Any]:
        context = ClientContext(zero_waits=True)
        async with AsyncProviderClient(config, context=context) as client:
            stream = client.stream_turn([User("Hi")])
            events = [event async for event in stream]
            return stream.turn, events, stream.interruption

    return asyncio.run(main())


def same_turn(turn: Turn, uncut: Turn) -> bool:
    """``turn`` is ``uncut`` but for the resumes and the limit the client's request carried."""
    return replace(turn, resumed=(), max_tokens=None) == uncut


def cut_after(blocks: list[bytes], n: int) -> bytes:
    """The first ``n + 1`` events, then the connection cut."""
    return sse(b"".join(blocks[: n + 1]))


BLOCKS = text_events(["Kept ", "responses ", "come ", "back ", "whole, ", "once."])
UNCUT_TURN, UNCUT_EVENTS = whole(b"".join(BLOCKS))


def test_a_redirect_of_the_resume_is_never_followed(
    hostile: Callable[[list[bytes]], Hostile],
) -> None:
    elsewhere = hostile([sse(after(BLOCKS, 3), ends=True)])
    location = f"{elsewhere.url}/v1/responses/{RID}?stream=true&starting_after=3"
    server = hostile([cut_after(BLOCKS, 3), answer(307, {}, ("location", location))])
    turn, events, interruption = run_turn(server)
    assert elsewhere.requests == []  # the key never went to another host
    assert turn.outcome is Outcome.PARTIAL and events == UNCUT_EVENTS[: len(events)]
    assert isinstance(interruption, ResumeFailed)
    assert isinstance(interruption.__cause__, ConfigurationError)
    assert server.posts == 1


@pytest.mark.parametrize(
    "refusal",
    [
        error(401, "Incorrect API key provided"),
        error(403, "forbidden"),
        error(404, f"Response with id '{RID}' not found."),
        answer(429, {"error": {"message": "quota", "type": "insufficient_quota"}}),
    ],
    ids=["401", "403", "404", "quota"],
)
def test_a_refused_resume_of_a_partial_ends_it_and_never_resends(
    hostile: Callable[[list[bytes]], Hostile], refusal: bytes
) -> None:
    server = hostile([cut_after(BLOCKS, 4), refusal, refusal, refusal])
    turn, events, interruption = run_turn(server)
    assert turn.outcome is Outcome.PARTIAL and events == UNCUT_EVENTS[: len(events)]
    assert isinstance(interruption, ResumeFailed) and interruption.after == 4
    assert server.posts == 1
    assert [m for m, _ in server.sent] == ["POST", "GET"]  # a refusal ends the resuming


def test_a_server_error_on_the_resume_then_success_completes_the_turn(
    hostile: Callable[[list[bytes]], Hostile],
) -> None:
    server = hostile(
        [
            cut_after(BLOCKS, 3),
            error(500, "boom"),
            error(503, "busy"),
            sse(after(BLOCKS, 3), ends=True),
        ]
    )
    turn, events, _ = run_turn(server)
    assert same_turn(turn, UNCUT_TURN) and turn.resumed == (3,) and events == UNCUT_EVENTS
    assert server.posts == 1
    assert [t for _, t in server.sent][1:] == [
        f"/v1/responses/{RID}?stream=true&starting_after=3"
    ] * 3


@pytest.mark.parametrize(
    "odd",
    [
        answer(200, {"id": RID, "status": "in_progress"}),  # the response object, not a stream
        HEAD + LAST_CHUNK,  # an empty stream
        sse(b": keep-alive\n\n"),  # one keep-alive, then cut
        sse(b"\x00\xff garbage that is no protocol\n\n", ends=True),
        error(500, "boom"),
        error(429, "slow down", ("retry-after", "0")),
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 99\r\n\r\n",
    ],
    ids=["json", "empty", "keepalive", "garbage", "500", "429", "short"],
)
def test_endless_resumes_that_bring_nothing_are_bounded_by_the_attempts(
    hostile: Callable[[list[bytes]], Hostile], odd: bytes
) -> None:
    server = hostile([cut_after(BLOCKS, 4), *[odd] * 10])
    turn, events, _ = run_turn(server, attempts=4)
    assert turn.outcome is Outcome.PARTIAL and events == UNCUT_EVENTS[: len(events)]
    assert len(server.requests) == 4 and server.posts == 1  # three resumes, no resend


def test_resumes_that_each_bring_one_new_event_are_bounded_by_the_attempts(
    hostile: Callable[[list[bytes]], Hostile],
) -> None:
    server = hostile([cut_after(BLOCKS, 2), *[sse(BLOCKS[n]) for n in range(3, 8)]])
    turn, events, _ = run_turn(server, attempts=4)
    assert turn.outcome is Outcome.PARTIAL and turn.resumed == (2, 3, 4)
    _, through_5 = first_attempt(b"".join(BLOCKS[:6]))
    assert events == through_5
    assert len(server.requests) == 4 and server.posts == 1


def test_an_empty_kept_attempt_whose_resume_is_refused_is_cancelled_before_the_resend(
    hostile: Callable[[list[bytes]], Hostile],
) -> None:
    server = hostile(
        [cut_after(BLOCKS, 0), error(404, "expired"), sse(b"".join(BLOCKS), ends=True)]
    )
    turn, events, _ = run_turn(server)
    assert turn.complete and events == UNCUT_EVENTS
    assert [(m, r.path) for (m, _), r in zip(server.sent, server.requests, strict=True)] == [
        ("POST", "/v1/responses"),
        ("GET", f"/v1/responses/{RID}"),
        ("POST", f"/v1/responses/{RID}/cancel"),
        ("POST", "/v1/responses"),
    ]


def test_an_empty_kept_attempt_without_a_point_is_cancelled_before_the_resend(
    hostile: Callable[[list[bytes]], Hostile],
) -> None:
    created = event(None, "response.created", response={"id": RID, "model": "m"})
    server = hostile([sse(created), sse(b"".join(BLOCKS), ends=True)])
    turn, events, _ = run_turn(server)
    assert turn.complete and events == UNCUT_EVENTS
    assert [(r.method, r.path) for r in server.requests] == [
        ("POST", "/v1/responses"),
        ("POST", f"/v1/responses/{RID}/cancel"),
        ("POST", "/v1/responses"),
    ]


@pytest.mark.parametrize(
    "steer",
    ["..", ".", "%2e%2e", "a/../../admin", "http://evil.example/x", "résumé", "a" * 300, "a\nb"],
)
def test_a_response_id_that_would_steer_a_request_sends_none(
    hostile: Callable[[list[bytes]], Hostile], steer: str
) -> None:
    forged = [b.replace(RID.encode(), json.dumps(steer)[1:-1].encode()) for b in BLOCKS]
    server = hostile([cut_after(forged, 4), *[sse(after(forged, 4), ends=True)] * 3])
    turn, _, _ = run_turn(server)
    assert turn.outcome is Outcome.PARTIAL
    assert server.sent == [("POST", "/v1/responses")]  # no resume, no cancel, no resend

    async def abandon() -> None:  # the cancel on abandonment asks Kept.live
        config = kept_config(server)
        async with AsyncProviderClient(config, context=ClientContext(zero_waits=True)) as client:
            stream = client.stream_turn([User("Hi")])
            async for _ in stream:
                break
            await stream.aclose()

    server.answers.append(sse(b"".join(forged)))
    asyncio.run(abandon())
    assert [r.path for r in server.requests] == ["/v1/responses"] * 2


def test_abandoning_a_resumed_stream_cancels_the_kept_response(
    hostile: Callable[[list[bytes]], Hostile],
) -> None:
    server = hostile([cut_after(BLOCKS, 3), sse(after(BLOCKS, 3))])
    seen: list[StreamEvent] = []

    async def main() -> None:
        config = kept_config(server)
        async with AsyncProviderClient(config, context=ClientContext(zero_waits=True)) as client:
            stream = client.stream_turn([User("Hi")])
            async for item in stream:
                seen.append(item)
                if len(seen) == len(UNCUT_EVENTS) - 3:  # inside the resumed stream
                    break
            await stream.aclose()

    asyncio.run(main())
    assert seen == UNCUT_EVENTS[: len(seen)]
    assert [(r.method, r.path) for r in server.requests][-1] == (
        "POST",
        f"/v1/responses/{RID}/cancel",
    )


def test_a_request_path_with_a_query_keeps_it_on_the_resume_and_the_cancel(
    hostile: Callable[[list[bytes]], Hostile],
) -> None:
    """Azure OpenAI's ``?api-version=``: the resume goes below the path, not into the query."""
    server = hostile([cut_after(BLOCKS, 3), sse(after(BLOCKS, 3), ends=True)])
    turn, events, _ = run_turn(
        server, base_url=server.url, request_path="/openai/v1/responses?api-version=preview"
    )
    assert turn.complete and events == UNCUT_EVENTS
    get = server.requests[1]
    assert get.method == "GET" and get.path == f"/openai/v1/responses/{RID}"
    query = parse_qs(get.target.partition("?")[2])
    assert query == {"api-version": ["preview"], "stream": ["true"], "starting_after": ["3"]}


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_a_network_cut_anywhere_shows_every_event_once(
    hostile: Callable[[list[bytes]], Hostile], eol: bytes
) -> None:
    blocks = text_events(["Zürich ", "日本", "🙂", " ok"], eol=eol)
    body = b"".join(blocks)
    uncut_turn, uncut_events = whole(body)
    ends = [sum(len(b) for b in blocks[: i + 1]) for i in range(len(blocks))]
    # Mid-event, mid-UTF-8, and between each event's last CR and LF.
    cuts = {ends[0] + 5, ends[2] + 40, body.index("日".encode()) + 1, body.index("🙂".encode()) + 2}
    cuts |= {end - 1 for end in ends[:-1]}
    for cut in sorted(cuts):
        server = hostile([sse(body[:cut]), *[sse(body, ends=True)] * 2])
        # An honest provider streams from after N; this one from event 0 each time.
        turn, events, _ = run_turn(server)
        assert turn.complete, cut
        assert same_turn(turn, uncut_turn), cut
        assert events == uncut_events, cut
        # Sent again only when no event was read whole: the response's id is unknown.
        reader = StreamReader(WIRE)
        reader.feed(body[:cut])
        assert server.posts == (1 if reader.sequence is not None else 2), cut


CORPUS = Path(__file__).parent / "corpus" / "responses"


def test_a_call_cut_then_completed_by_the_server_is_never_repaired() -> None:
    # A server ends the response right after a cut argument delta: the turn is Complete and
    # its stop reason the wire's ``completed``, but the call never got its ``.done``. Its
    # fragment must not climb the repair ladder: closing it would finish a half-command.
    body = (CORPUS / "swiftagent_function_call_gpt5.sse").read_bytes()
    events = EventSplitter().feed(body)
    deltas = [i for i, b in enumerate(events) if b"function_call_arguments.delta" in b]
    kept = events[: deltas[len(deltas) // 2] + 1]
    last = spec("openai-responses").sequence_numbers(kept[-1])[-1]
    (completed,) = [b for b in events if b"response.completed" in b]
    completed = re.sub(rb'"sequence_number":\d+', b'"sequence_number":%d' % (last + 1), completed)
    attempt = Attempt("openai-responses")
    attempt.feed(b"".join(kept) + completed, 0.0)
    ended = attempt.close()
    assert isinstance(ended, Complete)
    (call,) = ended.turn.tool_calls
    assert call.arguments is None and not call.closed
    (verdict,) = judge(ended.turn)
    assert verdict.verdict is Verdict.REJECT and verdict.reason is RejectReason.MALFORMED
