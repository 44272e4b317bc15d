"""The fuzz campaigns: one method each, taking a hypothesis ``DataObject``.

:class:`Fuzzer` holds what they share: the captures, the verdict of each whole
capture, the argument texts the output limit cut in them (ground truth no
mutation can hide), a :class:`~tools.reliability.properties.Tally` and a
:class:`~tools.reliability.properties.ShellSpy`. ``make fuzz`` runs them
(:mod:`tools.reliability.fuzz`); ``tests/test_fuzz.py`` wraps each in
``@given(st.data())`` with a few hundred examples.

``every_offset`` forks the reader at each block boundary (a pickled copy of
its state) and feeds only the rest of the block for each offset inside it:
equal to feeding the whole prefix *because* of split invariance, which
``random_splits`` checks and which is cross-checked here against a fresh
reader at sampled offsets.
"""

from __future__ import annotations

import contextlib
import itertools
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import httpx2
from hypothesis import strategies as st

from railings.agent.loop import Agent
from railings.dispatch import ToolRegistry
from railings.errors import EventTooLarge, RailingsError
from railings.replay import Replay, replay, to_json
from railings.transport import AsyncProviderClient, ClientConfig, RetryPolicy
from railings.turn.reader import PROVIDERS, StreamReader
from railings.turn.verdict import RejectReason, judge
from tools.reliability.chunked import framed, outcome
from tools.reliability.corpus import Capture, is_proof_block, split_blocks
from tools.reliability.faulted import campaign as faults_after_content
from tools.reliability.inputs import HOSTILE_FRAGMENTS, mutate, mutations, split_points
from tools.reliability.properties import (
    PropertyViolation,
    ShellSpy,
    Tally,
    check_no_truncated_execution,
    check_not_clean,
    check_proof_present,
    feed,
)

__all__ = ["CAMPAIGNS", "WEIGHTS", "Fuzzer"]

# -- the campaigns ---------------------------------------------------------------------------


class Fuzzer:
    """The campaigns, sharing the captures, their whole-body verdicts, a tally and a spy.

    Each campaign is a method taking a hypothesis ``DataObject``: the tests wrap
    them in ``@given(st.data())`` with a few hundred examples, ``main`` runs
    them for as long as it is told.
    """

    def __init__(self, captures: Sequence[Capture], spy: ShellSpy) -> None:
        if not captures:
            raise ValueError("no captures to fuzz")
        self.captures = tuple(captures)
        self.spy = spy
        self.tally = Tally()
        self.expected = {c.name: to_json(replay(c.body)) for c in self.captures}
        # Ground truth the mutations cannot hide: the argument texts the output limit cut
        # in the original captures. No mutation may make one of them (or a piece of one)
        # executable, whatever stop reason survives.
        self.cut_arguments = {
            c.name: tuple(
                v.call.raw_arguments
                for v in replay(c.body).verdicts
                if v.reason is RejectReason.TRUNCATED and v.call.raw_arguments
            )
            for c in self.captures
        }
        self._agent_client: AsyncProviderClient | None = None
        self._serving: list[bytes] = []

    def _capture(self, data: st.DataObject) -> Capture:
        return data.draw(st.sampled_from(self.captures), label="capture")

    def _judge(self, body: bytes, cuts: Sequence[int], reproduce: str, **options: Any) -> None:
        """Feed, then every property that applies to an arbitrary body."""
        result = feed(body, cuts, tally=self.tally, reproduce=reproduce, **options)
        if result is None:
            return
        check_proof_present(result, body, reproduce, self.tally)
        check_no_truncated_execution(result, reproduce, self.tally)
        self.spy.check(result, reproduce, self.tally)

    # -- arbitrary input

    def random_bytes(self, data: st.DataObject) -> None:
        body = data.draw(st.binary(max_size=4096), label="body")
        provider = data.draw(st.sampled_from(("auto", *PROVIDERS)), label="provider")
        max_tokens = data.draw(st.sampled_from((None, 1, 16)), label="max_tokens")
        cuts = data.draw(split_points(len(body)), label="cuts")
        self._judge(
            body,
            cuts,
            f"random bytes {body!r} provider={provider}",
            provider=provider,
            max_tokens=max_tokens,
        )

    def protocol_noise(self, data: st.DataObject) -> None:
        real = st.sampled_from(self.captures).flatmap(
            lambda c: st.sampled_from(c.blocks) if c.blocks else st.just(c.tail)
        )
        parts = data.draw(
            st.lists(st.one_of(real, st.sampled_from(HOSTILE_FRAGMENTS)), max_size=40),
            label="parts",
        )
        body = b"".join(parts)
        provider = data.draw(st.sampled_from(("auto", "openai", "anthropic")), label="provider")
        cuts = data.draw(split_points(len(body)), label="cuts")
        self._judge(
            body,
            cuts,
            f"noise {parts!r} provider={provider}",
            provider=provider,
            max_tokens=data.draw(st.sampled_from((None, 3)), label="max_tokens"),
        )

    # -- real captures

    def random_splits(self, data: st.DataObject) -> None:
        capture = self._capture(data)
        cuts = data.draw(split_points(len(capture.body)), label="cuts")
        reproduce = f"{capture.name} split at {sorted(set(cuts))}"
        result = feed(capture.body, cuts, tally=self.tally, reproduce=reproduce)
        self.tally.checked["split_invariance"] += 1
        if result is None or to_json(result) != self.expected[capture.name]:
            raise PropertyViolation("split_invariance", "a split changed the verdict", reproduce)
        check_no_truncated_execution(result, reproduce, self.tally)
        self.spy.check(result, reproduce, self.tally)

    def truncations(self, data: st.DataObject) -> None:
        capture = self._capture(data)
        end = capture.proof_end if capture.proof_end is not None else len(capture.body) + 1
        cut = data.draw(st.integers(0, end - 1), label="cut")
        body = capture.body[:cut]
        cuts = data.draw(split_points(len(body)), label="cuts")
        reproduce = f"{capture.name}[:{cut}] split at {sorted(set(cuts))}"
        result = feed(body, cuts, tally=self.tally, reproduce=reproduce)
        if result is not None:
            check_not_clean(result, f"when cut at byte {cut} of {end - 1}", reproduce, self.tally)
            self.spy.check(result, reproduce, self.tally)

    def mutations(self, data: st.DataObject) -> None:
        capture = self._capture(data)
        edits = data.draw(mutations, label="mutations")
        blocks = mutate(capture.blocks, edits)
        body = b"".join(blocks)
        if data.draw(st.booleans(), label="then cut"):
            body = body[: data.draw(st.integers(0, len(body)), label="cut")]
        cuts = data.draw(split_points(len(body)), label="cuts")
        reproduce = (
            f"{capture.name} mutated by {', '.join(map(str, edits))}, {len(body)} bytes kept, "
            f"split at {sorted(set(cuts))}"
        )
        result = feed(body, cuts, tally=self.tally, reproduce=reproduce)
        if result is None:
            return
        fed_blocks, _ = split_blocks(body)
        if not any(is_proof_block(b) for b in fed_blocks):
            check_not_clean(result, "with no proof block left", reproduce, self.tally)
        else:
            check_proof_present(result, body, reproduce, self.tally)
        check_no_truncated_execution(result, reproduce, self.tally)
        self._check_cut_calls(capture, result, reproduce)
        self.spy.check(result, reproduce, self.tally)

    def _check_cut_calls(self, capture: Capture, result: Replay, reproduce: str) -> None:
        """No executed call's arguments are (a prefix of) arguments the limit cut."""
        for verdict in result.verdicts:
            raw = verdict.call.raw_arguments
            if not verdict.execute or not raw.strip():
                continue
            for cut in self.cut_arguments[capture.name]:
                if cut.startswith(raw):
                    raise PropertyViolation(
                        "no_truncated_execution",
                        f"call {verdict.call.name!r} cut by the output limit executes "
                        f"({verdict.rung.name if verdict.rung else '?'} rung): {raw[-80:]!r}",
                        reproduce,
                    )

    # -- the HTTP/1.1 framing under the stream

    def http_chunks(self, data: st.DataObject) -> None:
        """A capture framed as a chunked HTTP body in chunks of random sizes, with
        malformed framing now and then, maybe cut, read by h11's chunked reader and by
        railings' bulk one (transport/chunks.py): the two must see the same."""
        capture = self._capture(data)
        body, payloads, at = capture.body, [], 0
        sizes = data.draw(st.lists(st.integers(1, 700), min_size=1, max_size=30), label="sizes")
        for size in itertools.cycle(sizes):
            if at >= len(body):
                break
            payloads.append(body[at : at + size])
            at += size
        wire = data.draw(framed(payloads), label="framing")
        if data.draw(st.booleans(), label="cut"):
            wire = wire[: data.draw(st.integers(0, len(wire)), label="cut at")]
        eof = data.draw(st.booleans(), label="then closed")
        points = data.draw(split_points(len(wire)), label="cuts")
        pieces = [wire[a:b] for a, b in _pairs(points, wire)]
        reproduce = (
            f"{capture.name} in chunks of {sizes} framed as {wire!r:.400}... ({len(wire)} "
            f"bytes), split at {sorted(set(points))}{', then closed' if eof else ''}"
        )
        self.tally.checked["chunks_as_h11"] += 1
        try:
            plain, _ = outcome(pieces, bulk=False, eof=eof)
            bulk, _ = outcome(pieces, bulk=True, eof=eof)
        except Exception as exc:
            raise PropertyViolation(
                "chunks_as_h11", f"{type(exc).__name__} escaped h11: {exc!r}", reproduce
            ) from exc
        if bulk != plain:
            seen = f"h11 read {plain!r:.300}, the bulk reader {bulk!r:.300}"
            raise PropertyViolation("chunks_as_h11", seen, reproduce)

    # -- end to end: transport, agent, dispatcher, spied shell

    def agent_e2e(self, data: st.DataObject) -> None:
        capture = self._capture(data)
        blocks = list(capture.blocks)
        if data.draw(st.booleans(), label="mutate"):
            blocks = mutate(blocks, data.draw(mutations, label="mutations"))
        body = b"".join(blocks)
        end = capture.proof_end if capture.proof_end is not None else len(body) + 1
        if data.draw(st.booleans(), label="cut before the proof"):
            body = body[: data.draw(st.integers(0, min(end, len(body) + 1) - 1), label="cut")]
        points = data.draw(split_points(len(body)), label="cuts")
        pieces = [body[a:b] for a, b in _pairs(points, body)]
        reproduce = f"agent over {capture.name} ({len(body)} bytes served in {len(pieces)} pieces)"
        self.tally.checked["typed_errors_only"] += 1
        self.tally.checked["shell_never_reached"] += 1
        before = len(self.spy.commands)
        try:
            result = self.spy.run(self._agent_run(capture, pieces))
        except RailingsError:
            result = None
        except Exception as exc:
            raise PropertyViolation(
                "typed_errors_only", f"{type(exc).__name__} escaped the agent: {exc!r}", reproduce
            ) from exc
        spawned = self.spy.commands[before:]
        self.tally.shell_runs += len(spawned)
        turn = None if result is None else result.last
        if spawned and (turn is None or not turn.complete):
            raise PropertyViolation(
                "shell_never_reached",
                f"{len(spawned)} call(s) of an unfinished turn reached the shell",
                reproduce,
            )
        if turn is not None:
            self._check_cut_calls(capture, Replay(turn, judge(turn)), reproduce)
            allowed = sum(1 for v in judge(turn) if v.execute)
            if len(spawned) > allowed:
                raise PropertyViolation(
                    "shell_never_reached",
                    f"{len(spawned)} shell runs for {allowed} executable call(s)",
                    reproduce,
                )

    async def _agent_run(self, capture: Capture, pieces: list[bytes]) -> Any:
        async def body() -> Any:
            for piece in pieces:
                yield piece

        def respond(request: httpx2.Request) -> httpx2.Response:
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=body()
            )

        provider = "anthropic" if capture.provider == "anthropic" else "openai"
        config = ClientConfig(
            provider=provider,  # type: ignore[arg-type]
            model="fuzz",
            base_url="http://fuzz.invalid",
            api_key="sk-fuzz-not-a-key",
            http2=False,
            retry=RetryPolicy(attempts=1),
        )
        registry = ToolRegistry()
        for call in replay(capture.body).turn.tool_calls:
            adaptor = self.spy.adaptor(call.name)
            if adaptor is not None and call.name not in registry:
                registry.add(adaptor)
        async with AsyncProviderClient(config, transport=httpx2.MockTransport(respond)) as client:
            agent = Agent(client, registry, max_turns=1, approve=None)
            return await agent.arun("fuzz")

    # -- exhaustive

    def every_offset(self, capture: Capture, *, samples: int = 48) -> int:
        """Cut ``capture`` at every byte offset; returns how many offsets were checked."""
        body, n = capture.body, len(capture.body)
        proof = capture.proof_end
        full = self.expected[capture.name]
        stride = max(1, n // samples)
        reader = StreamReader()
        start = 0
        checked = 0
        ends = capture.block_ends + ([n] if capture.tail else [])
        for end in ends:
            try:
                snapshot: bytes | None = pickle.dumps(reader, pickle.HIGHEST_PROTOCOL)
            except (pickle.PicklingError, TypeError, AttributeError):
                snapshot = None
            for cut in range(start, end):
                self._offset(capture, cut, start, snapshot, proof, full, cut % stride == 0)
                checked += 1
            with contextlib.suppress(EventTooLarge):
                reader.feed(body[start:end])
            start = end
        self._offset(capture, n, n, None, proof, full, True)
        return checked + 1

    def _offset(
        self,
        capture: Capture,
        cut: int,
        start: int,
        snapshot: bytes | None,
        proof: int | None,
        full: dict[str, Any],
        cross_check: bool,
    ) -> None:
        body = capture.body
        reproduce = f"{capture.name}[:{cut}]"
        if snapshot is None:
            result = feed(body[:cut], tally=self.tally, reproduce=reproduce)
        else:
            self.tally.checked["typed_errors_only"] += 1
            try:
                reader: StreamReader = pickle.loads(snapshot)
                with contextlib.suppress(EventTooLarge):
                    reader.feed(body[start:cut])
                reader.close()
                turn = reader.turn()
                result = Replay(turn, judge(turn))
            except RailingsError:
                result = None
            except Exception as exc:
                raise PropertyViolation(
                    "typed_errors_only", f"{type(exc).__name__} escaped: {exc!r}", reproduce
                ) from exc
            if cross_check:
                fresh = feed(body[:cut], tally=self.tally, reproduce=reproduce)
                self.tally.checked["split_invariance"] += 1
                same = (fresh is None and result is None) or (
                    fresh is not None and result is not None and to_json(fresh) == to_json(result)
                )
                if not same:
                    raise PropertyViolation(
                        "split_invariance",
                        "the forked reader disagrees with a fresh one",
                        reproduce,
                    )
        if result is None:
            return
        if proof is None or cut < proof:
            check_not_clean(
                result, f"when cut at byte {cut}, before its proof", reproduce, self.tally
            )
        else:
            self.tally.checked["never_clean_without_proof"] += 1
            if to_json(result) != full:
                raise PropertyViolation(
                    "never_clean_without_proof",
                    "bytes after the proof changed the verdict",
                    reproduce,
                )
            check_no_truncated_execution(result, reproduce, self.tally)
        self.spy.check(result, reproduce, self.tally)


def _pairs(cuts: Sequence[int], body: bytes) -> list[tuple[int, int]]:
    points = [0, *sorted({c for c in cuts if 0 < c < len(body)}), len(body)]
    return [(a, b) for a, b in itertools.pairwise(points) if b > a] or [(0, 0)]


CAMPAIGNS: dict[str, Callable[[Fuzzer, st.DataObject], None]] = {
    "random_bytes": Fuzzer.random_bytes,
    "protocol_noise": Fuzzer.protocol_noise,
    "random_splits": Fuzzer.random_splits,
    "truncations": Fuzzer.truncations,
    "mutations": Fuzzer.mutations,
    "agent_e2e": Fuzzer.agent_e2e,
    "http_chunks": Fuzzer.http_chunks,
    "faults_after_content": faults_after_content,  # every wire: tools/reliability/faulted.py
}
# Relative cost: agent_e2e runs a whole agent per example.
WEIGHTS = {"agent_e2e": 0.25}
