"""Running the grid: one scripted server and one fault proxy per cell, many cells at once.

Each cell gets its own :class:`~railings.testing.ScriptedServer` and
:class:`~railings.testing.FaultProxy`, both on 127.0.0.1 and a free port, in
the runner's event loop. Own servers keep cells apart: a ``times=1`` fault
counts the requests of its cell only, and the proxy's log of a cell is that
cell's attempts, counted on the wire whatever the client says.
``jobs`` cells run at once (an :class:`asyncio.Semaphore`).

Against a real endpoint (``upstream``) there is no scripted server: the proxy
forwards to the endpoint, and the answer is whatever the endpoint says. The
proxy keeps a copy of each upstream body as it passes (:class:`TeeProxy`), and
that copy, decoded by the core reader, is the reference the client's result is
compared with; the streams of a kept response read again are spliced into one by
their event numbers, each event once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from railings import providers
from railings.matrix.cells import Cell, Expect, Shape, Size, payload
from railings.matrix.judge import (
    Judgement,
    ProxyFacts,
    Reference,
    Status,
    judge_railings,
    judge_sdk,
)
from railings.matrix.observation import EMBEDDED_KEY, Client, Observation, Target
from railings.testing import FaultProxy, ScriptedServer
from railings.testing.http import ResponseHead
from railings.turn.reader import StreamReader
from railings.turn.resume import Splice
from railings.wire.blocks import EventSplitter

__all__ = [
    "DEFAULT_IDLE",
    "DEFAULT_JOBS",
    "CellResult",
    "MatrixResult",
    "TeeProxy",
    "Upstream",
    "count",
    "run_matrix",
]

DEFAULT_JOBS = 16
DEFAULT_IDLE = 15.0  # the idle gap of every cell but the idle fault's own
CELL_TIMEOUT = 90.0  # a client that hangs fails its cell instead of the run
EMBEDDED_MODEL = "railings-matrix"


@dataclass(frozen=True, slots=True)
class Upstream:
    """A real endpoint: ``url`` is its origin (the OpenAI ``/v1`` is added for OpenAI),
    ``model`` the model to ask, the key from the provider's usual environment variable."""

    url: str
    model: str

    # A real model's stream length is unknown: the middle of the content is a guess
    # (Anthropic sends three events before the first delta).
    shape_mid: int = 6

    async def unreachable(self, timeout: float = 10.0) -> str | None:
        """Why a TCP connection to the endpoint fails, or None when it opens: asked once,
        before any cell runs, so that a wrong URL is one line, not a failed cell each."""
        parts = urlsplit(self.url)
        default = 443 if parts.scheme == "https" else 80
        try:
            async with asyncio.timeout(timeout):
                _, writer = await asyncio.open_connection(parts.hostname, parts.port or default)
        except TimeoutError:
            return f"no connection within {timeout:g} s"
        except OSError as exc:
            return exc.strerror or str(exc)
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return None

    def request(self, size: Size, tool: bool) -> tuple[str, int]:
        """The prompt and ``max_tokens`` that ask for about ``size`` characters."""
        words = max(20, size.chars // 6)
        if not tool:
            return (
                f"Write about {words} words of plain prose about how wooden ships are "
                "built. No lists, no headings, no preamble."
            ), size.chars // 4 + 64
        return (
            f"Use the shell tool twice in one turn, and write no text. First call it with "
            f"the command `ls -la`. Then call it with one command that writes notes.txt "
            f"with a heredoc holding about {words} words of prose about ships."
        ), max(32, size.chars // 8)


class TeeProxy(FaultProxy):
    """A :class:`FaultProxy` that keeps a copy of each upstream body it reads."""

    def __init__(self, upstream: str, fault: str | None = None) -> None:
        super().__init__(upstream, fault)
        self.bodies: list[list[bytes]] = []

    async def _respond(
        self, head: ResponseHead, body: AsyncIterator[bytes], *args: Any, **kwargs: Any
    ) -> None:
        kept: list[bytes] = []
        self.bodies.append(kept)

        async def tee() -> AsyncIterator[bytes]:
            async for data in body:
                kept.append(data)
                yield data

        await super()._respond(head, tee(), *args, **kwargs)


@dataclass(slots=True)
class CellResult:
    """One client on one cell: the fault spec, what the client did, the judgement, what the
    proxy saw and the cell's wall time in seconds."""

    cell: Cell
    client: str
    kind: str  # "railings" | "sdk"
    spec: str
    observation: Observation
    judgement: Judgement
    proxy: ProxyFacts
    seconds: float

    @property
    def status(self) -> Status:
        """The judgement's status."""
        return self.judgement.status

    @property
    def counts(self) -> bool:
        """Does this cell decide the exit code? Only railings cells do."""
        return self.kind == "railings"

    @property
    def lost(self) -> bool:
        """Did the client throw away an answer that was due whole (a failed cell of a
        clean, retried or proven-then-broken stream)?"""
        due = (Expect.FULL, Expect.RETRIED, Expect.COUNTEREXAMPLE)
        return self.status is Status.FAIL and self.cell.fault.expect in due

    def to_json(self) -> dict[str, Any]:
        """The cell for ``--json``: its names, the spec, the judgement, the proxy's actions and
        the observation."""
        return {
            "client": self.client,
            "kind": self.kind,
            "fault": self.cell.fault.name,
            "expect": self.cell.fault.expect.value,
            "size": self.cell.size.name,
            "provider": self.cell.provider.name,
            "tool": self.cell.tool,
            "spec": self.spec,
            **self.judgement.to_json(),
            "requests": self.proxy.requests,
            "proxy": list(self.proxy.actions),
            "seconds": round(self.seconds, 3),
            "observation": self.observation.to_json(),
        }


@dataclass(slots=True)
class MatrixResult:
    """A whole run: every cell's result in grid order, its wall time, and the upstream origin
    (None: the embedded server)."""

    results: list[CellResult] = field(default_factory=list)
    seconds: float = 0.0
    upstream: str | None = None

    @property
    def failed(self) -> list[CellResult]:
        """The railings cells that failed: these make the exit code 1."""
        return [r for r in self.results if r.counts and r.status is Status.FAIL]

    @property
    def exit_code(self) -> int:
        """1 when a railings cell failed, else 0; the SDK cells never change it."""
        return 1 if self.failed else 0


def _pairs(cells: Sequence[Cell], clients: Sequence[Client]) -> list[tuple[Cell, Client]]:
    return [
        (cell, client)
        for client in clients
        for cell in cells
        if cell.provider.name in client.providers
    ]


def count(cells: Sequence[Cell], clients: Sequence[Client]) -> int:
    """How many (cell, client) runs the grid holds (a client skips providers it cannot speak)."""
    return len(_pairs(cells, clients))


async def run_matrix(
    cells: Sequence[Cell],
    clients: Sequence[Client],
    *,
    upstream: Upstream | None = None,
    jobs: int = DEFAULT_JOBS,
    on_result: Callable[[CellResult], None] | None = None,
) -> MatrixResult:
    """Run every cell with every client that speaks its provider; results in grid order."""
    if upstream is None:
        for cell in cells:  # build the payloads (a 1 MB filler) before any stream is timed
            payload(cell.size, cell.tool)
    gate = asyncio.Semaphore(max(1, jobs))
    started = time.perf_counter()

    async def one(cell: Cell, client: Client) -> CellResult:
        async with gate:
            result = await _run_cell(cell, client, upstream)
        if on_result is not None:
            on_result(result)
        return result

    results = await asyncio.gather(*(one(c, k) for c, k in _pairs(cells, clients)))
    return MatrixResult(
        list(results), time.perf_counter() - started, upstream.url if upstream else None
    )


async def _run_cell(cell: Cell, client: Client, upstream: Upstream | None) -> CellResult:
    if client.resumes:  # held to the resume column of the expectation table
        cell = replace(cell, fault=cell.fault.when_resumed())
    idle = cell.fault.idle or DEFAULT_IDLE
    if upstream is None:
        load = payload(cell.size, cell.tool)
        shape = load.shape(cell.provider)
        spec = cell.spec(shape)
        async with ScriptedServer(load.script) as server, FaultProxy(server.url, spec) as proxy:
            target = Target(
                cell.provider,
                proxy.url,
                EMBEDDED_MODEL,
                EMBEDDED_KEY,
                load.max_tokens,
                "Go.",
                cell.tool,
                idle,
            )
            observation, seconds = await _observe(client, target)
            observation.generations = server.generations
            facts = _facts(proxy)
        reference: Reference | None = Reference.from_plan(
            load.plan, whole_calls=cell.provider.whole_calls
        )
    else:
        prompt, max_tokens = upstream.request(cell.size, cell.tool)
        shape = Shape(upstream.shape_mid, cell.size.drip)
        spec = cell.spec(shape)
        async with TeeProxy(upstream.url, spec) as tee:
            target = Target(
                cell.provider, tee.url, upstream.model, None, max_tokens, prompt, cell.tool, idle
            )
            observation, seconds = await _observe(client, target)
            facts = _facts(tee)
            reference = _reference(cell.provider.name, tee.bodies, max_tokens)
    if client.kind == "railings":
        judgement = judge_railings(
            cell, observation, reference, facts, known_shape=upstream is None, shape=shape
        )
    else:
        judgement = judge_sdk(cell, observation, reference, facts)
    return CellResult(cell, client.name, client.kind, spec, observation, judgement, facts, seconds)


async def _observe(client: Client, target: Target) -> tuple[Observation, float]:
    started = time.perf_counter()
    try:
        async with asyncio.timeout(CELL_TIMEOUT):
            observation = await client.run(target)
    except TimeoutError:
        observation = Observation(
            returned=False,
            raised="TimeoutError",
            message=f"the cell took longer than {CELL_TIMEOUT:g} s",
        )
    return observation, time.perf_counter() - started


def _facts(proxy: FaultProxy) -> ProxyFacts:
    log = proxy.log
    return ProxyFacts(len(log), tuple(r.action for r in log))


def _reference(provider: str, bodies: list[list[bytes]], max_tokens: int) -> Reference | None:
    """The last upstream body the proxy read, decoded: what the endpoint really said."""
    if not bodies or not bodies[-1]:
        return None
    reader = StreamReader(provider, max_tokens=max_tokens)
    # An exception here means the reader ended the turn itself; its turn says how.
    with contextlib.suppress(Exception):
        reader.feed(_said(provider, bodies))
    reader.close()
    return Reference.from_turn(reader.turn())


def _said(provider: str, bodies: list[list[bytes]]) -> bytes:
    """The last stream the endpoint began, whole: a body whose first event is numbered past
    0 streams a kept response again (a resume), so its new events follow the whole events
    of the body before it, each event once (what an unbroken stream would have sent)."""
    wire = providers.spec(provider)
    said = b""
    for body in bodies:
        data = b"".join(body)
        first = next((n for b in EventSplitter().feed(data) if (n := wire.sequence_numbers(b))), [])
        if not said or not first or first[0] == 0:
            said = data  # a stream from its start: the first, or a resend
            continue
        blocks = EventSplitter().feed(said)  # what was read whole before the break
        after = max((n for b in blocks for n in wire.sequence_numbers(b)), default=-1)
        splice = Splice(provider, after)
        said = b"".join(blocks) + splice.feed(data) + splice.close()
    return said
