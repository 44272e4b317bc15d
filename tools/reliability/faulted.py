"""Faults after content, on every wire: the verdict must not depend on how the bytes were split.

Every capture of ``tests/corpus`` (the six wires: Chat Completions, Messages and the
Responses API, Gemini in SSE, Bedrock's event-stream frames, Ollama's NDJSON lines) is
cut into its units by the test kit's splitters (:mod:`railings.testing.frames`, which
trust the bytes and share nothing with the decoders under test). One unit after the
first that carried content is then broken:

``utf8``      invalid UTF-8 in its JSON, as the fault proxy's ``corrupt:kind=utf8``
``json``      its JSON cut in half, as ``corrupt:kind=json``
``byte``      one ``0xFF`` byte anywhere in it (a field name, a framing line, a length)
``cut``       the body ends inside it
``crc``       an event-stream frame's message CRC that does not match (Bedrock only)
``prelude``   an event-stream frame's prelude CRC that does not match (Bedrock only)
``oversize``  a unit one byte over the reader's bound (``max_event_size``) before it

:func:`read` feeds the faulted body to a :class:`~railings.turn.reader.StreamReader`
split at given offsets and returns what a caller sees: the ``replay --json`` report
(outcome, termination, text, calls, verdicts, error) and the events, in order. The
property: the body fed whole, byte by byte, or in any pieces gives the same answer.
``tests/test_chunking_invariance.py`` runs it bounded; ``make fuzz`` runs the
``faults_after_content`` campaign (:func:`campaign`) at scale, over the corpus
:func:`~tools.reliability.corpus.find_corpus` finds (``RAILINGS_CORPUS``, else the
repository's).
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from railings.errors import EventTooLarge
from railings.replay import Replay, to_json
from railings.testing.eventstream import encode_message
from railings.testing.frames import FRAMES, LINES, SSE, Framing
from railings.turn.reader import StreamReader
from railings.turn.verdict import judge
from tools.reliability.corpus import find_corpus
from tools.reliability.inputs import split_points
from tools.reliability.properties import PropertyViolation

if TYPE_CHECKING:
    from tools.reliability.campaigns import Fuzzer

__all__ = [
    "FAULTS",
    "PROPERTY",
    "Faulted",
    "Reading",
    "Stream",
    "campaign",
    "every_byte",
    "inject",
    "load_streams",
    "read",
    "same",
]

PROPERTY = "chunking_invariance"
FAULTS = ("utf8", "json", "byte", "cut", "crc", "prelude", "oversize")
_FRAME_ONLY = frozenset({"crc", "prelude"})
# The manifests' provider column -> the reader's provider name.
_PROVIDERS = {
    "openai-chat": "openai",
    "anthropic-messages": "anthropic",
    "openai-responses": "openai-responses",
    "gemini": "gemini",
    "bedrock": "bedrock",
    "ollama": "ollama",
}
_FRAMINGS = {"bedrock": FRAMES, "ollama": LINES}


@dataclass(frozen=True, slots=True)
class Stream:
    """One capture cut into its units (``units`` + ``rest`` is the body, byte for byte);
    ``content`` is the index of the first unit after which the reader had content (-1:
    none did)."""

    name: str
    provider: str
    framing: Framing
    units: tuple[bytes, ...]
    rest: bytes
    content: int

    @property
    def body(self) -> bytes:
        """The capture as it was recorded."""
        return b"".join(self.units) + self.rest

    @property
    def kinds(self) -> tuple[str, ...]:
        """The faults that apply to this wire's framing."""
        return tuple(k for k in FAULTS if k not in _FRAME_ONLY or self.framing is FRAMES)

    @property
    def after_content(self) -> range:
        """The units a fault may break: those after the first content (the content unit
        itself when it is the last one; every unit when none carries content)."""
        first = self.content + 1
        return (
            range(first, len(self.units))
            if first < len(self.units)
            else range(max(0, self.content), len(self.units))
        )


def _units(framing: Framing, body: bytes) -> tuple[tuple[bytes, ...], bytes]:
    splitter = framing.splitter()
    units = splitter.feed(body)
    return tuple(units), splitter.close()


def _first_content(provider: str, units: Sequence[bytes]) -> int:
    reader = StreamReader(provider)
    for index, unit in enumerate(units):
        reader.feed(unit)
        if reader.content:
            return index
        if not reader.reads_on:
            break
    return -1


def _rows(corpus: Path) -> Iterable[tuple[str, str, Path]]:
    for manifest in sorted(corpus.glob("*/MANIFEST.tsv")):
        with manifest.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                provider = _PROVIDERS.get(row.get("provider", ""))
                if provider is not None:
                    name = f"{manifest.parent.name}/{row['file']}"
                    yield name, provider, manifest.parent / row["file"]


@cache
def load_streams(corpus: str | None = None) -> tuple[Stream, ...]:
    """Every capture of the corpus (every set with a ``MANIFEST.tsv``), cut into units."""
    streams = []
    for name, provider, path in _rows(find_corpus(corpus)):
        framing = _FRAMINGS.get(provider, SSE)
        units, rest = _units(framing, path.read_bytes())
        streams.append(
            Stream(name, provider, framing, units, rest, _first_content(provider, units))
        )
    return tuple(streams)


@dataclass(frozen=True, slots=True)
class Faulted:
    """A capture with one fault: the body, the reader's bound, and what reproduces it."""

    body: bytes
    max_event_size: int
    what: str


def _oversized(framing: Framing, limit: int) -> bytes:
    """A unit one byte (or character) over ``limit``, of the framing's own shape."""
    if framing is FRAMES:
        return encode_message({":message-type": "event"}, b"x" * limit)
    if framing is LINES:
        return b'{"pad":"' + b"x" * limit + b'"}\n'
    return b": " + b"x" * limit + b"\n\n"


def inject(stream: Stream, kind: str, unit: int, offset: int = 0) -> Faulted:
    """``stream`` with fault ``kind`` in unit ``unit`` (``offset``: where in it, for
    ``byte`` and ``cut``, taken modulo its length)."""
    units = list(stream.units)
    target = units[unit]
    at = offset % (len(target) + 1)
    limit = max(map(len, units), default=0) + len(stream.rest) + 64
    what = f"{stream.name}: {kind} in unit {unit} of {len(units)}"
    if kind == "byte":
        units[unit] = target[:at] + b"\xff" + target[at:]
        what += f" at byte {at}"
    elif kind == "cut":
        at = min(at, len(target) - 1)
        what += f", cut after {at} of its {len(target)} bytes"
        return Faulted(b"".join(units[:unit]) + target[:at], limit, what)
    elif kind == "oversize":
        units.insert(unit, _oversized(stream.framing, limit))
        what += f" (bound {limit})"
    else:
        units[unit] = stream.framing.corrupt(target, kind)
    return Faulted(b"".join(units) + stream.rest, limit, what)


@dataclass(frozen=True, slots=True)
class Reading:
    """What a caller of the reader saw: the report and the events, in order (the events
    of a call that raised :class:`EventTooLarge` are not returned: they are in the turn,
    not in the list)."""

    report: dict[str, Any]
    events: tuple[Any, ...]
    raised: bool


def read(body: bytes, provider: str, cuts: Iterable[int], *, max_event_size: int) -> Reading:
    """``body`` fed to a fresh reader in pieces cut at ``cuts`` (until the turn reads no
    more, as ``replay`` does), then closed."""
    points = [0, *sorted({c for c in cuts if 0 < c < len(body)}), len(body)]
    reader = StreamReader(provider, max_event_size=max_event_size)
    events: list[Any] = []
    raised = False
    try:
        for start, end in itertools.pairwise(points):
            events += reader.feed(body[start:end])
            if not reader.reads_on:
                break
    except EventTooLarge:
        raised = True
    events += reader.close()  # never raises: EOF ends the turn, whatever it found
    turn = reader.turn()
    return Reading(to_json(Replay(turn, judge(turn))), tuple(events), raised)


def every_byte(body: bytes) -> range:
    """The cuts that feed ``body`` one byte at a time."""
    return range(1, len(body))


def same(whole: Reading, split: Reading) -> str | None:
    """Why ``split`` differs from ``whole``, or None when it does not."""
    if split.report != whole.report:
        diff = {
            k: (whole.report[k], split.report[k])
            for k in whole.report
            if whole.report[k] != split.report.get(k)
        }
        return f"the report differs (whole, split): {diff!r:.600}"
    if split.raised != whole.raised:
        return f"EventTooLarge raised {'whole' if whole.raised else 'split'} only"
    if not split.raised and split.events != whole.events:
        n = next(
            (i for i, (a, b) in enumerate(zip(whole.events, split.events, strict=False)) if a != b),
            min(len(whole.events), len(split.events)),
        )
        return (
            f"the events differ from event {n} (whole {len(whole.events)}, split "
            f"{len(split.events)}): {whole.events[n : n + 2]!r:.300} / "
            f"{split.events[n : n + 2]!r:.300}"
        )
    return None


def campaign(fuzzer: Fuzzer, data: st.DataObject) -> None:
    """One capture of any wire, one fault after its first content, fed whole and then
    byte by byte or in random pieces: the same report and the same events."""
    stream = data.draw(st.sampled_from(load_streams()), label="capture")
    kind = data.draw(st.sampled_from(stream.kinds), label="fault")
    unit = data.draw(st.sampled_from(stream.after_content), label="unit")
    offset = data.draw(st.integers(0, 1 << 16), label="offset")
    provider = data.draw(st.sampled_from((stream.provider, "auto")), label="provider")
    faulted = inject(stream, kind, unit, offset)
    body = faulted.body
    if data.draw(st.integers(0, 3), label="byte by byte") == 0:
        cuts: Sequence[int] = every_byte(body)
        how = "byte by byte"
    else:
        cuts = data.draw(split_points(len(body)), label="cuts")
        how = f"split at {sorted(set(cuts))}"
    whole = read(body, provider, (), max_event_size=faulted.max_event_size)
    split = read(body, provider, cuts, max_event_size=faulted.max_event_size)
    fuzzer.tally.checked[PROPERTY] += 1
    why = same(whole, split)
    if why is not None:
        raise PropertyViolation(PROPERTY, why, f"{faulted.what}, provider={provider}, {how}")
