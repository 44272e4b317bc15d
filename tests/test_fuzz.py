"""Bounded runs of the fuzz campaigns of ``make fuzz`` (tools.reliability.fuzz).

tests/test_properties.py already holds split invariance, random bytes and noise
through ``replay``, and truncation at sampled offsets. These add what the long
campaign checks and those do not: the spy on ``spawn`` behind every verdict,
event reorderings / duplications / drops, the transport-to-agent path, the
hand-made hostile fragments, and truncation at *every* byte offset of the small
captures (``make fuzz`` walks every offset of all of them).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railings.errors import ConfigurationError
from railings.replay import Replay, replay, to_json
from railings.turn.reader import StreamReader
from railings.turn.verdict import judge
from railings.wire.sse import SSEDecoder
from tools.reliability import fuzz
from tools.reliability.campaigns import Fuzzer
from tools.reliability.corpus import ENV_VAR, find_corpus, is_proof_block, load_captures
from tools.reliability.inputs import Mutation, mutate
from tools.reliability.properties import PropertyViolation, ShellSpy, feed

CAPTURES = load_captures()
SMALL = [c for c in CAPTURES if len(c.body) <= 3300]

_BASE = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def bounded(examples: int) -> settings:
    return settings(_BASE, max_examples=examples)


@pytest.fixture(scope="module")
def fuzzer() -> Iterator[Fuzzer]:
    with ShellSpy() as spy:
        yield Fuzzer(CAPTURES, spy)


# -- the campaigns, bounded -------------------------------------------------------------


@bounded(300)
@given(data=st.data())
def test_random_bytes_only_typed_errors_and_no_shell(fuzzer: Fuzzer, data: st.DataObject) -> None:
    fuzzer.random_bytes(data)


@bounded(250)
@given(data=st.data())
def test_real_blocks_mixed_with_hostile_fragments(fuzzer: Fuzzer, data: st.DataObject) -> None:
    fuzzer.protocol_noise(data)


@bounded(250)
@given(data=st.data())
def test_cut_before_the_proof_is_never_clean_and_never_reaches_the_shell(
    fuzzer: Fuzzer, data: st.DataObject
) -> None:
    fuzzer.truncations(data)


@bounded(250)
@given(data=st.data())
def test_reordered_duplicated_dropped_events(fuzzer: Fuzzer, data: st.DataObject) -> None:
    fuzzer.mutations(data)


@bounded(60)
@given(data=st.data())
def test_agent_over_the_transport_never_runs_a_cut_call(
    fuzzer: Fuzzer, data: st.DataObject
) -> None:
    fuzzer.agent_e2e(data)


@pytest.mark.parametrize("name", [c.name for c in SMALL])
def test_every_byte_offset_of_the_small_captures(fuzzer: Fuzzer, name: str) -> None:
    capture = next(c for c in SMALL if c.name == name)
    checked = fuzzer.every_offset(capture, samples=24)
    assert checked == len(capture.body) + 1


# -- the spy is not vacuous ----------------------------------------------------------------


@pytest.mark.parametrize("name", [c.name for c in CAPTURES if c.tool_calls])
def test_the_spy_sees_exactly_the_executable_calls(name: str) -> None:
    capture = next(c for c in CAPTURES if c.name == name)
    result = replay(capture.body)
    # An MCP approval request is answered (approved or denied), never run locally.
    executable = [v for v in result.verdicts if v.execute and v.call.type != "mcp_approval"]
    with ShellSpy() as spy:
        spawned = spy.dispatch(result.turn)
    assert len(spawned) == len(executable)
    if capture.name == "anthropic/max_tokens_inside_tool_input.sse":
        assert spawned == []  # cut by max_tokens: rejected, never run


def test_a_violation_is_reported_with_what_reproduces_it() -> None:
    full = replay(
        next(c for c in CAPTURES if c.name.endswith("single_tool_call_nonstrict.sse")).body
    )
    with ShellSpy() as spy, pytest.raises(PropertyViolation, match="never_clean") as info:
        from tools.reliability.properties import check_not_clean

        check_not_clean(full, "on purpose", "the whole capture")
        spy.check(full)
    assert "reproduce: the whole capture" in str(info.value)


def test_a_foreign_exception_is_a_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: object, chunk: bytes) -> list[object]:
        raise KeyError("boom")

    monkeypatch.setattr("railings.turn.reader.StreamReader.feed", broken)
    with pytest.raises(PropertyViolation, match="typed_errors_only: KeyError escaped"):
        feed(b"data: [DONE]\n\n")


# -- the pieces ---------------------------------------------------------------------------


def test_mutations_edit_the_block_list() -> None:
    blocks = [b"a", b"b", b"c"]
    assert mutate(blocks, [Mutation("swap", 0)]) == [b"b", b"a", b"c"]
    assert mutate(blocks, [Mutation("dup", 1, 2)]) == [b"a", b"b", b"b", b"b", b"c"]
    assert mutate(blocks, [Mutation("drop", 4)]) == [b"a", b"c"]  # index modulo the length
    assert mutate(blocks, [Mutation("move", 0, 2)]) == [b"b", b"c", b"a"]
    assert mutate([], [Mutation("drop", 0)]) == []


def test_proofs_are_located_without_the_decoder() -> None:
    by_name = {c.name: c for c in CAPTURES}
    assert by_name["groq/midstream_error_event_no_done.sse"].proof_end is None
    for capture in CAPTURES:
        assert b"".join(capture.blocks) + capture.tail == capture.body
        if replay(capture.body).turn.complete:  # (a provider error can end a turn first)
            assert capture.proof_end is not None
            assert replay(capture.body[: capture.proof_end]).turn.complete
    assert is_proof_block(b"data: [DONE]\n\n")
    assert is_proof_block(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    assert is_proof_block(b'data: {"type": "message_stop"}\n\n')
    assert not is_proof_block(b'data: {"text": "[DONE] message_stop"}\n\n')
    assert not is_proof_block(b"data: [DONE] \n\n")


def test_the_corpus_is_found_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = find_corpus()
    monkeypatch.setenv(ENV_VAR, str(real))
    assert find_corpus() == real
    with pytest.raises(ConfigurationError, match="no corpus at"):
        find_corpus(tmp_path)


def test_a_pickled_decoder_keeps_working() -> None:
    # The exhaustive campaign forks readers with pickle; the decoder compared its state
    # by identity, so an unpickled copy refused every byte with IllegalTransition.
    decoder = SSEDecoder()
    decoder.feed(b"data: a")
    copy = pickle.loads(pickle.dumps(decoder))
    assert [e.data for e in copy.feed(b"b\n\n")] == ["ab"]


@pytest.mark.parametrize(
    "name",
    ["openai/parallel_tool_calls_usage_chunk.sse", "anthropic/tool_use_input_json_delta.sse"],
)
def test_a_reader_with_a_learned_template_pickles_and_its_copy_reads_on(name: str) -> None:
    # A block template holds its decoder's checks as closures; a reader that had learned
    # one could not be pickled, and the exhaustive campaign fed every prefix from the
    # start instead of forking (quadratic: three times the campaign's time).
    (capture,) = [c for c in CAPTURES if c.name == name]
    reader, start = StreamReader(fast=True), 0
    for end in capture.block_ends:  # block by block, as the campaign feeds
        reader.feed(capture.body[start:end])
        start = end
        if reader._template is not None:  # the fast path learned one
            break
    assert start < len(capture.body) and reader._template is not None
    copy: StreamReader = pickle.loads(pickle.dumps(reader))
    for each in (reader, copy):
        each.feed(capture.body[start:])
        each.close()
    assert to_json(Replay(copy.turn(), judge(copy.turn()))) == to_json(replay(capture.body))
    assert copy.turn() == reader.turn()


def test_make_fuzz_entry_point_reports_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fuzz.json"
    code = fuzz.main(["--examples", "4", "--skip-exhaustive", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["ok"] is True
    assert {c["name"] for c in report["campaigns"]} == set(fuzz.CAMPAIGNS)
    assert all(p["examples"] > 0 for p in report["properties"])
    assert "fuzz: PASS" in capsys.readouterr().out


# -- found by the mutations campaign -----------------------------------------------------


def _without_stop_reason(blocks: tuple[bytes, ...], how: str) -> bytes:
    at = next(i for i, b in enumerate(blocks) if b"message_delta" in b or b'"length"' in b)
    if how == "drop":
        return b"".join(blocks[:at] + blocks[at + 1 :])
    return b"".join(mutate(blocks, [Mutation("move", at, len(blocks) - 1)]))  # to the end


@pytest.mark.parametrize("how", ["drop", "move after the proof"])
def test_a_lost_stop_reason_does_not_let_a_cut_call_run(how: str) -> None:
    # The event that says max_tokens is lost (dropped, or reordered past message_stop):
    # the stop reason is then derived as tool_use, and the repair ladder used to close
    # the cut JSON and run the model's half-sentence. A call whose end never came, in a
    # turn whose stop reason the wire never gave, is not repaired.
    capture = next(c for c in CAPTURES if c.name == "anthropic/max_tokens_inside_tool_input.sse")
    result = replay(_without_stop_reason(capture.blocks, how))
    assert result.turn.complete and result.turn.stop_reason_source == "derived"
    [cut] = [v for v in result.verdicts if not v.call.closed]
    assert not cut.execute and cut.reason is not None and cut.reason.value == "malformed"
    with ShellSpy() as spy:
        assert all("Filing taxes" not in c for c in spy.dispatch(result.turn))


def test_a_finished_call_is_still_repaired() -> None:
    # The rule above is narrow: a call whose end was signalled is repaired as before.
    chunks = [
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1",'
        b'"function":{"name":"shell","arguments":"{\\"command\\": \\"ls\\",}"}}]}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    [verdict] = replay(b"".join(chunks)).verdicts
    assert verdict.execute and verdict.repaired and verdict.arguments == {"command": "ls"}
    [verdict] = replay(chunks[0] + chunks[2]).verdicts  # no finish reason, no end: not repaired
    assert not verdict.execute


def test_fragments_out_of_order_are_not_unwrapped_into_a_cut_command() -> None:
    # Found by `make soak` (reorder fault): two argument fragments swapped made
    # 'o soak-a"}{"command": "ech'; rung 2 took the text before "{" for prose and rung 4
    # closed the rest, running `ech`. Text before the object that holds a quote or a
    # closing bracket is JSON, not prose: it is left alone, and the call is malformed.
    from railings.turn.repair import RepairPolicy, parse_arguments

    assert parse_arguments('o soak-a"}{"command": "ech', RepairPolicy.REPAIR_ALLOWED) is None
    assert parse_arguments('x"]{"a": 1}', RepairPolicy.REPAIR_ALLOWED) is None
    unwrapped = parse_arguments('Here\'s the call: {"a": 1}', RepairPolicy.REPAIR_ALLOWED)
    assert unwrapped is not None and unwrapped.value == {"a": 1}  # prose still unwraps


@bounded(150)
@given(data=st.data())
def test_http_chunks_read_by_the_bulk_reader_as_by_h11(fuzzer: Fuzzer, data: st.DataObject) -> None:
    fuzzer.http_chunks(data)
