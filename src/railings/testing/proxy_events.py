"""What a fault does to an event stream: the fault proxy's event pump.

:func:`pump_events` cuts the upstream's body into SSE blocks
(:class:`~railings.testing.blocks.EventSplitter`, byte-exact) and applies the
fault to them one by one -- cut, drop the proof, go silent, swap, repeat, reset,
inject the provider's error event, corrupt -- writing through :class:`Out`, the
client side of the body. A fault that ends the response raises :class:`Stop`,
which says how it ends (``clean``, ``abrupt`` or ``reset``).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from railings.providers import ProviderSpec
from railings.testing import faults as F
from railings.testing.faults import Fault
from railings.testing.frames import Framing, Splitter
from railings.testing.http import LAST_CHUNK, HTTPFault, abort_with_reset, encode_chunk
from railings.testing.ids import Ids
from railings.testing.wires import KitWire
from railings.wire.blocks import lines

if TYPE_CHECKING:
    from railings.testing.proxy import ProxyRecord

__all__ = ["Out", "Stop", "pump_events"]

_HIGH_WATER = 64 * 1024  # asyncio's: past it, ``later`` waits for the client to read


class Stop(Exception):
    """The fault ends the response here, the way ``end`` says."""

    def __init__(self, end: str, action: str) -> None:
        self.end, self.action = end, action


class Out:
    """The client side of the response body, chunked or raw.

    ``send`` queues, ``flush`` writes what is queued with one ``write`` and one
    ``drain``. ``later`` writes it once the pump waits for the upstream: the pieces
    of every upstream read that had already arrived leave in one system call (none
    waits for bytes still on their way), and the pump waits for the client only
    when the socket's buffer is full. In chunked mode each ``send`` is its own HTTP
    chunk, so a fault's events keep one chunk each, and each upstream chunk passes
    as one. ``record.bytes_out`` counts what was handed to the socket.
    """

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        record: ProxyRecord,
        *,
        chunked: bool,
        limit: int | None,
        limit_end: str,
        drip: F.Drip | None,
    ) -> None:
        self.writer, self.record, self.chunked = writer, record, chunked
        self.limit, self.limit_end, self.drip = limit, limit_end, drip
        self._pending: list[bytes] = []
        self._queued = 0  # body bytes sent or queued, for the byte limit
        self._soon: asyncio.Handle | None = None  # the write ``later`` scheduled

    def send(self, data: bytes, *, event: bool = False) -> None:
        """Queue ``data`` (one SSE block when ``event``); past the byte limit, raise
        :class:`Stop` after the bytes that fit."""
        if self.limit is not None and self._queued + len(data) >= self.limit:
            self._queue(data[: self.limit - self._queued])
            verb = "reset" if self.limit_end == "reset" else "cut"
            raise Stop(self.limit_end, f"{verb} after {self.limit} body bytes")
        self._queue(data)
        if event:
            self.record.events_out += 1

    def send_events(self, blocks: list[bytes]) -> None:
        """Queue whole events, as ``send(block, event=True)`` for each would."""
        if self.limit is not None:
            for block in blocks:
                self.send(block, event=True)
            return
        self._pending += blocks
        self._queued += sum(map(len, blocks))
        self.record.events_out += len(blocks)

    def _queue(self, data: bytes) -> None:
        if data:
            self._pending.append(data)
            self._queued += len(data)

    async def flush(self) -> None:
        """Write what is queued: one write and one drain (or byte by byte, dripping)."""
        if self.drip:
            pending, self._pending = self._pending, []
            await self._drip(b"".join(pending), self.drip)
            return
        if self._pending:
            self._write()
            await self.writer.drain()

    async def later(self) -> None:
        """Write what is queued once this task waits (see the class docstring); flush now
        while the client reads slower than the upstream sends, or when dripping."""
        if self.drip or self.writer.transport.get_write_buffer_size() > _HIGH_WATER:
            await self.flush()
        elif self._pending and self._soon is None:
            self._soon = asyncio.get_running_loop().call_soon(self._write)

    def _write(self) -> None:
        self._soon = None
        pending, self._pending = self._pending, []
        if not pending or self.writer.transport.is_closing():
            return
        if self.chunked:
            self.writer.write(b"".join([encode_chunk(data) for data in pending]))
        else:
            self.writer.write(b"".join(pending))
        self.record.bytes_out += sum(map(len, pending))

    async def _drip(self, data: bytes, drip: F.Drip) -> None:
        for start in range(0, len(data), drip.size):
            piece = data[start : start + drip.size]
            self.writer.write(encode_chunk(piece) if self.chunked else piece)
            await self.writer.drain()
            self.record.bytes_out += len(piece)
            if drip.delay:
                await asyncio.sleep(drip.delay)

    async def finish(self, end: str) -> None:
        """End the body the way ``end`` says: ``clean`` (the chunked terminator),
        ``abrupt`` (FIN without it) or ``reset`` (TCP RST)."""
        await self.flush()
        self.record.done = True  # before the last bytes: a client that saw the end sees it
        if end == "reset":
            abort_with_reset(self.writer)
            return
        if end == "clean" and self.chunked:
            self.writer.write(LAST_CHUNK)
            await self.writer.drain()
        self.writer.transport.close()  # "abrupt": FIN without the chunked terminator


async def pump_events(
    body: AsyncIterator[bytes],
    out: Out,
    fault: Fault,
    record: ProxyRecord,
    wire: KitWire,
    ids: Ids,
    framing: Framing,
) -> None:
    """Send the upstream's event stream ``body``, cut into events by ``framing``, through
    ``out`` with ``fault`` applied (``wire`` tells its proof and its error events,
    ``ids`` names an injected error); raises :class:`Stop` where the fault ends it."""
    splitter = framing.splitter()
    if isinstance(fault, F.Passthrough):
        # Nothing to act on: each upstream piece goes on as it came, in one chunk,
        # the upstream's framing kept; the splitter only counts the events.
        async for data in body:
            record.bytes_in += len(data)
            events = len(splitter.feed(data))
            record.events_in += events
            out.send(data)
            record.events_out += events
            await out.later()
        return
    stream = _Seen()
    await _before_first(out, fault, wire, stream, ids)
    try:
        await _act(body, splitter, out, fault, record, wire, stream, ids, framing)
    except (ConnectionError, HTTPFault):
        await _send_rest(out, splitter, stream)  # the upstream broke: what it sent goes on
        raise
    await _send_rest(out, splitter, stream)


async def _act(
    body: AsyncIterator[bytes],
    splitter: Splitter,
    out: Out,
    fault: Fault,
    record: ProxyRecord,
    wire: KitWire,
    stream: _Seen,
    ids: Ids,
    framing: Framing,
) -> None:
    quiet = _quiet_until(fault)
    async for data in body:
        record.bytes_in += len(data)
        blocks = splitter.feed(data)
        if blocks and record.events_in + len(blocks) < quiet:
            # Every one of these events comes before the fault's: each passes as it came.
            record.events_in += len(blocks)
            stream.saw(blocks[0])
            stream.saw(blocks[-1])
            out.send_events(blocks)
            await out.later()
            continue
        for block in blocks:
            record.events_in += 1
            n = record.events_in
            stream.saw(block)
            if _edit(block, n, out, fault, wire, framing):
                continue
            match fault:
                case F.Truncate(events=int() as limit, end=end) if n >= limit:
                    out.send(block, event=True)
                    raise Stop(end, f"cut after {limit} events ({end} end)")
                case F.Idle(events=after, seconds=seconds) if n == after:
                    out.send(block, event=True)
                    await out.flush()
                    record.action = f"silent for {seconds:g}s after {after} events"
                    await asyncio.sleep(seconds)
                case F.Reorder(event=at) if n == at:
                    stream.held = block
                case F.Reorder(event=at) if n == at + 1 and stream.held is not None:
                    out.send(block, event=True)
                    out.send(stream.held, event=True)
                    stream.held = None
                    record.action = f"swapped events {at} and {at + 1}"
                case F.Duplicate(event=at, count=count) if n == at:
                    for _ in range(count + 1):
                        out.send(block, event=True)
                    record.action = f"sent event {at} {count + 1} times"
                case F.Reset(events=int() as limit) if n >= limit:
                    out.send(block, event=True)
                    raise Stop("reset", f"reset after {limit} events")
                case F.CloseAfterTerminator() if wire.is_proof(block):
                    out.send(block, event=True)
                    raise Stop(
                        "abrupt",
                        f"closed without the chunked terminator after the terminator (event {n})",
                    )
                case F.ErrorEvent(events=after) as error if n == after:
                    out.send(block, event=True)
                    _inject_error(out, error, wire, stream, ids)
                case _:
                    out.send(block, event=True)
        await out.later()


def _quiet_until(fault: Fault) -> float:
    """The first event number ``fault`` may act on (or look at): every event before it
    passes unchanged. The proof-watching faults look at every event."""
    match fault:
        case F.Truncate(events=int() as n) | F.Reset(events=int() as n):
            return n
        case F.Idle(events=n) | F.ErrorEvent(events=n):
            return n
        case F.Reorder(event=n) | F.Duplicate(event=n) | F.CutMidEvent(event=n):
            return n
        case F.Corrupt(event=n):
            return n
        case F.Truncate() | F.Reset() | F.Drip():
            return math.inf  # a byte limit (``Out`` keeps it, event by event), or pacing
        case _:
            return 1  # DropTerminator, CloseAfterTerminator: every event is looked at


def _edit(block: bytes, n: int, out: Out, fault: Fault, wire: KitWire, framing: Framing) -> bool:
    """The faults that change or drop event ``n`` itself (``wire`` tells the proof,
    ``framing`` how to break an event); True when one did (raises :class:`Stop` when
    it ends the response)."""
    record = out.record
    match fault:
        case F.DropTerminator(rest="keep") if wire.is_proof(block):
            record.action = f"dropped the terminator alone (event {n})"
        case F.DropTerminator(end=end) if wire.is_proof(block):
            raise Stop(end, f"dropped the terminator (event {n}, {end} end)")
        case F.CutMidEvent(event=at, end=end) if n == at:
            out.send(block[: len(block) // 2])
            raise Stop(end, f"cut event {at} in its middle ({end} end)")
        case F.Corrupt(event=at, kind=kind) if n == at and kind in framing.kinds:
            out.send(framing.corrupt(block, kind), event=True)
            record.action = f"corrupted event {at} ({kind})"
        case F.Corrupt(event=at, kind=kind) if n == at:
            out.send(block, event=True)
            record.action = f"passed event {at} intact (no {kind} in {framing.events})"
        case _:
            return False
    return True


async def _before_first(out: Out, fault: Fault, wire: KitWire, stream: _Seen, ids: Ids) -> None:
    """Faults set to act after zero events act before the first one."""
    match fault:
        case F.Truncate(events=0, end=end):
            raise Stop(end, f"cut before the first event ({end} end)")
        case F.Reset(events=0):
            raise Stop("reset", "reset before the first event")
        case F.Idle(events=0, seconds=seconds):
            out.record.action = f"silent for {seconds:g}s before the first event"
            await asyncio.sleep(seconds)
        case F.ErrorEvent(events=0) as error:
            _inject_error(out, error, wire, stream, ids)


def _inject_error(out: Out, fault: F.ErrorEvent, wire: KitWire, stream: _Seen, ids: Ids) -> None:
    created = stream.created() if wire.spec.numbered else {}
    sequence = stream.next_sequence(wire.spec) if wire.spec.numbered else 0
    event, what = wire.error_event(fault.type, ids, created, sequence)
    out.send(event, event=True)
    raise Stop(fault.end, f"injected {what} after {out.record.events_in} events ({fault.end} end)")


async def _send_rest(out: Out, splitter: Splitter, stream: _Seen) -> None:
    """The end of the upstream's body: the event ``reorder`` still holds, then an
    unterminated last block, as it came."""
    if stream.held is not None:
        out.send(stream.held, event=True)
        stream.held = None
    out.send(splitter.close())
    await out.flush()


class _Seen:
    """What an injected Responses event must agree with: the stream's own response
    (its ``response.created``) and the next ``sequence_number``. Keeps two blocks,
    and the one ``reorder`` holds back."""

    __slots__ = ("first", "held", "last")

    def __init__(self) -> None:
        self.first: bytes | None = None
        self.last: bytes | None = None
        self.held: bytes | None = None

    def saw(self, block: bytes) -> None:
        if self.first is None:
            self.first = block
        self.last = block

    def next_sequence(self, spec: ProviderSpec) -> int:
        numbers = spec.sequence_numbers(self.last) if self.last is not None else []
        return numbers[0] + 1 if numbers else 0

    def created(self) -> dict[str, Any]:
        for line in lines(self.first or b""):
            if line.startswith(b"data:"):
                try:
                    obj = json.loads(line[5:])
                except ValueError:
                    break
                return obj if isinstance(obj, dict) else {}
        return {}
