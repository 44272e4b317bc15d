"""The journal survives SIGKILL at random points, alone and with a second writer.

Each child process writes sessions of deltas of random sizes (10 bytes to 60 KB,
so a kill can land inside a large commit) and acknowledges every committed write
on stdout, flushed, only after :meth:`Journal.write` returned. The parent kills it
with SIGKILL after a random number of acknowledgements plus a random delay, then
reopens the journal and checks ``PRAGMA integrity_check``, that every
acknowledged delta is there with its exact text, that each session's deltas are
a gap-free prefix (nothing half-written, nothing out of order), and that every
acknowledged session end is recorded. The next round appends to the same file,
so each round also recovers the WAL the previous kill left behind.

The seed of each round is in the assertion messages: ``RAILINGS_CRASH_SEED=N``
replays a round.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from railings.journal import Journal

ROUNDS = 5

CHILD = r"""
import random, sys
from railings.journal import Journal

path, tag, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)
with Journal(path) as journal:
    while True:
        sid = journal.start_session(tag)
        print(f"S {sid}", flush=True)
        for seq in range(rng.randint(1, 40)):
            text = f"{tag}:{sid}:{seq}:" + "x" * rng.choice((10, 100, 4000, 60000))
            journal.write(sid, "delta", {"kind": "text", "text": text, "seq": seq}, turn=1)
            print(f"D {sid} {seq} {len(text)}", flush=True)
        journal.end_session(sid, "completed")
        print(f"E {sid}", flush=True)
"""


@dataclass
class Acks:
    """What one child acknowledged: sessions started, deltas (seq -> length), sessions ended."""

    started: list[str] = field(default_factory=list)
    deltas: dict[str, dict[int, int]] = field(default_factory=lambda: defaultdict(dict))
    ended: set[str] = field(default_factory=set)
    count: int = 0

    def take(self, line: str) -> None:
        parts = line.split()
        if not parts:
            return  # the last line may be cut by the kill: never acknowledged
        if parts[0] == "S" and len(parts) == 2:
            self.started.append(parts[1])
        elif parts[0] == "D" and len(parts) == 4:
            self.deltas[parts[1]][int(parts[2])] = int(parts[3])
        elif parts[0] == "E" and len(parts) == 2:
            self.ended.add(parts[1])
        else:
            return
        self.count += 1


def start(path: Path, tag: str, seed: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), tag, str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def run_until_killed(child: subprocess.Popen[bytes], acks_before_kill: int, delay: float) -> Acks:
    """Read acknowledgements until ``acks_before_kill``, wait ``delay``, SIGKILL, read the rest."""
    assert child.stdout is not None
    acks = Acks()
    buffer = b""
    deadline = time.monotonic() + 60
    while acks.count < acks_before_kill and time.monotonic() < deadline:
        ready, _, _ = select.select([child.stdout], [], [], 1.0)
        if not ready:
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            continue
        data = os.read(child.stdout.fileno(), 65536)
        if not data:
            break
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            acks.take(line.decode())
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    rest, _ = child.communicate(timeout=30)
    buffer += rest
    for line in buffer.split(b"\n")[:-1]:  # a line without its newline was never complete
        acks.take(line.decode())
    assert child.returncode == -signal.SIGKILL
    return acks


def verify(path: Path, acks: Acks, where: str) -> int:
    """Everything acknowledged is in the journal, intact; returns the deltas checked."""
    checked = 0
    with Journal(path) as journal:
        assert journal.integrity() == "ok", where
        sessions = {s.id: s for s in journal.sessions(limit=1_000_000)}
        for sid in acks.started:
            assert sid in sessions, f"{where}: acknowledged session {sid} is missing"
            deltas = [e for e in journal.entries(sid) if e.kind == "delta"]
            seqs = [e.data["seq"] for e in deltas]
            assert seqs == list(range(len(seqs))), f"{where}: session {sid} has a gap"
            for seq, length in acks.deltas.get(sid, {}).items():
                assert seq < len(deltas), f"{where}: acknowledged delta {sid}/{seq} is missing"
                text = deltas[seq].data["text"]
                assert len(text) == length, f"{where}: delta {sid}/{seq} is not intact"
                assert text.split(":")[1:3] == [sid, str(seq)], where
                checked += 1
            if sid in acks.ended:
                assert sessions[sid].status == "completed", f"{where}: end of {sid} is lost"
    return checked


def _seeds() -> list[int]:
    fixed = os.environ.get("RAILINGS_CRASH_SEED")
    if fixed:
        return [int(fixed)]
    return [random.SystemRandom().randrange(1 << 32) for _ in range(ROUNDS)]


def test_sigkill_at_random_points_loses_nothing_acknowledged(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    total = 0
    for seed in _seeds():
        rng = random.Random(seed)
        child = start(path, "solo", seed)
        acks = run_until_killed(child, rng.randint(1, 120), rng.uniform(0, 0.05))
        total += verify(path, acks, f"RAILINGS_CRASH_SEED={seed}")
    assert total > 0


def test_two_writers_killed_at_random_points_do_not_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    Journal(path).close()  # both children open an existing WAL journal
    for seed in _seeds():
        rng = random.Random(seed)
        children = [start(path, tag, seed + i) for i, tag in enumerate(("a", "b"))]
        plans = [(rng.randint(1, 80), rng.uniform(0, 0.05)) for _ in children]
        # Kill the first while the second keeps writing, then the second.
        acks = [run_until_killed(child, *plan) for child, plan in zip(children, plans, strict=True)]
        for tag, ack in zip(("a", "b"), acks, strict=True):
            verify(path, ack, f"writer {tag}, RAILINGS_CRASH_SEED={seed}")
    with Journal(path) as journal:
        titles = {s.title for s in journal.sessions(limit=1_000_000)}
    assert titles == {"a", "b"}


@pytest.mark.parametrize("durable", [False, True])
def test_a_journal_reopened_after_a_kill_takes_new_writes(tmp_path: Path, durable: bool) -> None:
    path = tmp_path / "journal.sqlite3"
    acks = run_until_killed(start(path, "first", 7), 20, 0.01)
    with Journal(path, durable=durable) as journal:  # recovers the WAL the kill left
        sid = journal.start_session("after")
        journal.write(sid, "delta", {"kind": "text", "text": "next", "seq": 0})
        journal.end_session(sid, "completed")
    verify(path, acks, "after reopening")
    with Journal(path) as journal:
        assert journal.entries(sid)[1].data["text"] == "next"
