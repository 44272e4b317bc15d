"""Shared helpers for the Gemini, Bedrock and Ollama wire tests: the corpus manifests,
decoding a body whole or split, every cut, and a turn from the events."""

from __future__ import annotations

import contextlib
import copy
import csv
import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from hypothesis import strategies as st

from railings.errors import MalformedStream, RailingsError
from railings.events import (
    ProviderErrorEvent,
    StopReason,
    StreamEvent,
    TerminationProof,
    ToolCallStart,
    UsageUpdate,
)
from railings.turn.assembler import TurnAssembler
from railings.turn.model import Turn

CORPUS = Path(__file__).resolve().parent / "corpus"
# The files beside the captures: their provenance, and what railings is expected to make
# of them.
NOT_CAPTURES = ("MANIFEST.tsv", "README.md", "NEXT_REQUEST.tsv", "REPLAY.tsv")


class ByteStream(Protocol):
    def feed(self, chunk: bytes) -> list[StreamEvent]: ...
    def close(self) -> list[StreamEvent]: ...


def manifest(folder: str) -> list[dict[str, str]]:
    with (CORPUS / folder / "MANIFEST.tsv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def body_of(folder: str, row: dict[str, str]) -> bytes:
    body = (CORPUS / folder / row["file"]).read_bytes()
    assert len(body) == int(row["bytes"])
    assert hashlib.sha256(body).hexdigest() == row["sha256"]
    return body


def decode(make: Callable[[], ByteStream], chunks: Iterable[bytes]) -> list[StreamEvent]:
    stream = make()
    out = [event for chunk in chunks for event in stream.feed(chunk)]
    return out + stream.close()


def byte_by_byte(body: bytes) -> list[bytes]:
    return [body[i : i + 1] for i in range(len(body))]


def proofs_at_every_cut(
    make: Callable[[], ByteStream], body: bytes, *, step: int = 256
) -> list[int]:
    """The cut offsets (0 .. len - 1) at which the prefix, fed and then closed as a whole
    stream, yielded a termination proof. A checkpoint (a copy of one decoder fed so far)
    is kept every ``step`` bytes; each cut closes a copy of its checkpoint fed the rest
    of its prefix, so the sweep costs ``len * step``, not ``len ** 2``."""
    main = make()
    checkpoints: list[tuple[object, bool]] = []
    proven = False
    for start in range(0, len(body), step):
        checkpoints.append((copy.deepcopy(main), proven))
        proven = proven or _proof(main.feed(body[start : start + step]))
    bad: list[int] = []
    for cut in range(len(body)):
        saved, seen = checkpoints[cut // step]
        stream = copy.deepcopy(saved)
        assert isinstance(stream, type(main))
        events = stream.feed(body[cut // step * step : cut])
        # A frame or line cut short raises at close: an abrupt end, never a proof.
        with contextlib.suppress(MalformedStream):
            events += stream.close()
        if seen or _proof(events):
            bad.append(cut)
    return bad


def _proof(events: list[StreamEvent]) -> bool:
    return any(isinstance(e, TerminationProof) for e in events)


def facts(events: list[StreamEvent]) -> dict[str, object]:
    """The manifest's facts, as the events state them."""
    proofs = [e.marker for e in events if isinstance(e, TerminationProof)]
    stops = [e.wire for e in events if isinstance(e, StopReason)]
    outputs = [
        e.output_tokens
        for e in events
        if isinstance(e, UsageUpdate) and e.output_tokens is not None
    ]
    names = [e.name for e in events if isinstance(e, ToolCallStart)]
    errors = [e.provider_type or "" for e in events if isinstance(e, ProviderErrorEvent)]
    return {
        "terminator": proofs[-1] if proofs else "none",
        "final_stop_reason": stops[-1] if stops else "none",
        "tool_calls": str(len(names)),
        "tool_call_names": ";".join(names) or "-",
        "output_tokens": str(outputs[-1]) if outputs else "none",
        "errors": ";".join(errors) or "-",
    }


def expected_facts(row: dict[str, str]) -> dict[str, object]:
    return {key: row[key] for key in facts([])}


def turn_of(provider: str, events: list[StreamEvent], *, max_tokens: int | None = None) -> Turn:
    """The turn the events make, read the way the reader applies them (up to the proof)."""
    assembler = TurnAssembler(provider, max_tokens=max_tokens)
    assembler.received()
    for event in events:
        assembler.apply(event)
    assembler.eof()
    return assembler.turn()


def assert_every_file_listed_once(folder: str) -> None:
    """Provenance: each capture on disk has exactly one manifest row, with its source."""
    rows = manifest(folder)
    listed = [row["file"] for row in rows]
    assert len(listed) == len(set(listed))
    on_disk = sorted(p.name for p in (CORPUS / folder).iterdir() if p.name not in NOT_CAPTURES)
    assert sorted(listed) == on_disk
    for row in rows:
        body_of(folder, row)
        assert row["source_repo"] and row["source_path"] and len(row["source_commit"]) == 40


class _ByteStream(Protocol):
    def feed(self, chunk: bytes) -> object: ...
    def close(self) -> object: ...


def read_damaged(
    data: st.DataObject, folder: str, rows: list[dict[str, str]], stream: _ByteStream
) -> None:
    """One capture of ``folder`` with 1-4 bytes overwritten, read by ``stream``: only
    railings' own errors (malformed, too large) may escape."""
    body = bytearray(body_of(folder, data.draw(st.sampled_from(rows))))
    for _ in range(data.draw(st.integers(1, 4))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    with contextlib.suppress(RailingsError):
        stream.feed(bytes(body))
        stream.close()
