"""What the gateway does for load: its process's collector, its pools, and the load bench."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from railings.gateway.serve import tune_gc
from railings.gateway.upstream import POOLS, Clients
from railings.transport.config import Timeouts

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_gc")
def test_tune_gc_freezes_what_is_alive_and_keeps_the_thresholds() -> None:
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    before = gc.get_threshold()
    tune_gc()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() > 1000  # the modules, this test run: out of every scan


@pytest.mark.usefixtures("restored_gc")
def test_tune_gc_takes_other_thresholds() -> None:
    tune_gc((500, 5, 50))
    assert gc.get_threshold() == (500, 5, 50)


def test_requests_take_the_pools_in_turn() -> None:
    clients = Clients(Timeouts())
    try:
        taken = [clients.next() for _ in range(2 * POOLS)]
        assert len({id(c) for c in taken}) == POOLS
        assert taken[:POOLS] == taken[POOLS:]
    finally:
        asyncio.run(clients.aclose())


def test_a_given_transport_is_the_one_pool() -> None:
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200))
    clients = Clients(Timeouts(), transport)
    try:
        assert len(clients.pools) == 1
        assert clients.next() is clients.next()
    finally:
        asyncio.run(clients.aclose())


def test_the_load_bench_pairs_each_stream_with_its_twin_and_loses_none() -> None:
    """A small run of bench/gateway.py (the one `make bench` runs): every stream through
    the gateway and every direct twin arrives whole, and the figures are all there."""
    small = ["--streams", "20", "--events", "8", "--interval", "0.05", "--ramp", "0.1"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gateway.py"), "--json", *small],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["failures_gateway"] == 0 and figures["failures_direct"] == 0
    assert figures["streams"] == 20
    for key in ("added_p50_ms", "added_p99_ms", "kib_per_open_stream", "gc_collections"):
        assert key in figures
    assert set(figures["cpu_share"]) == {"gateway", "upstream", "load generator"}
    assert set(figures["waited_for_a_core_ms"]) == set(figures["cpu_share"])
