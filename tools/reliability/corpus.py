"""The real captures of ``tests/corpus``, cut into SSE blocks, with their proofs located.

The fuzz campaigns need two facts about each capture that must not come from
the decoder under test: where its SSE blocks begin and end, and where its
termination proof ends. Both are read here with a few lines of byte parsing
(the captures use LF line ends; CR and CRLF are accepted too), so that the
property "a capture cut before its proof is never clean" compares the
decoder against an independent reading of the same bytes.

The corpus is found, in this order: an explicit path (``--corpus``), the
``RAILINGS_CORPUS`` environment variable, then the repository's own
``tests/corpus``. Its ``real/`` set comes first; every other set beside it with
a ``MANIFEST.tsv`` (the Responses API streams) joins it, its names carrying the
set's name (``responses/...``).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from railings.errors import ConfigurationError
from railings.providers import SPECS
from railings.testing.faults import EventSplitter
from railings.wire.blocks import lines

__all__ = [
    "ENV_VAR",
    "PROOF_MARKERS",
    "Capture",
    "find_corpus",
    "is_proof_block",
    "load_captures",
    "split_blocks",
]

ENV_VAR = "RAILINGS_CORPUS"
# Byte strings without which no stream can be clean: the proofs of every provider spec
# (data values, event names, the data's "type" values), each once.
PROOF_MARKERS = tuple(
    dict.fromkeys(
        marker.encode()
        for spec in SPECS
        for marker in (*sorted(spec.proof.data), *sorted(spec.proof.events | spec.proof.types))
    )
)

_PROVIDERS = {
    "openai-chat": "openai",
    "anthropic-messages": "anthropic",
    "openai-responses": "openai-responses",
}
_TYPED_PROOFS = frozenset(n for spec in SPECS for n in spec.proof.events | spec.proof.types)


REPOSITORY_CORPUS = Path(__file__).resolve().parents[2] / "tests" / "corpus"


def find_corpus(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The corpus directory (the one holding ``real/MANIFEST.tsv``)."""
    if explicit:
        if (Path(explicit) / "real" / "MANIFEST.tsv").is_file():
            return Path(explicit)
        raise ConfigurationError(f"no corpus at {explicit}: expected real/MANIFEST.tsv there")
    candidate = Path(os.environ.get(ENV_VAR) or REPOSITORY_CORPUS)
    if (candidate / "real" / "MANIFEST.tsv").is_file():
        return candidate
    raise ConfigurationError(
        f"no corpus at {candidate}: expected real/MANIFEST.tsv there;"
        f" pass --corpus or set {ENV_VAR}"
    )


@dataclass(frozen=True, slots=True)
class Capture:
    """One real response body. ``blocks`` + ``tail`` is the body, byte for byte.

    ``proof_end`` is the length of the shortest prefix holding the whole proof
    block (its blank line included), or None when the capture has no proof.
    """

    name: str
    provider: str
    body: bytes
    blocks: tuple[bytes, ...]
    tail: bytes
    proof_end: int | None
    tool_calls: int

    @property
    def block_ends(self) -> list[int]:
        """The offset just past each block."""
        ends, at = [], 0
        for block in self.blocks:
            at += len(block)
            ends.append(at)
        return ends


def split_blocks(body: bytes) -> tuple[list[bytes], bytes]:
    """SSE blocks (each up to and including its blank line) and the unterminated rest.

    The fault proxy's byte-exact splitter: WHATWG line ends, a CR at the very end
    waiting for a possible LF, blank lines before a block belonging to it.
    """
    splitter = EventSplitter()
    blocks = splitter.feed(body)
    return blocks, splitter.close()


def _fields(block: bytes) -> tuple[str, str]:
    """The ``event`` name and the joined ``data`` of one block (WHATWG field rules)."""
    event = b""
    data: list[bytes] = []
    for line in lines(block):
        if line[:1] == b":":
            continue
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"event":
            event = value
        elif name == b"data":
            data.append(value)
    return event.decode("utf-8", "replace"), b"\n".join(data).decode("utf-8", "replace")


def is_proof_block(block: bytes) -> bool:
    """True for a block that carries a termination proof of any supported wire format."""
    event, data = _fields(block)
    if data == "[DONE]":
        return True
    if not any(marker.decode() in data or marker.decode() == event for marker in PROOF_MARKERS):
        return False
    try:
        obj = json.loads(data)
    except ValueError:
        return False
    kind = obj.get("type") if isinstance(obj, dict) else None
    if not isinstance(kind, str):
        kind = event
    return kind in _TYPED_PROOFS


def proof_end(blocks: Sequence[bytes]) -> int | None:
    at = 0
    for block in blocks:
        at += len(block)
        if is_proof_block(block):
            return at
    return None


def _count(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return 0


def other_sets(corpus: Path) -> list[Path]:
    """The capture sets beside ``real/`` (each a folder with its ``MANIFEST.tsv``)."""
    return [m.parent for m in sorted(corpus.glob("*/MANIFEST.tsv")) if m.parent.name != "real"]


def _read_set(directory: Path, prefix: str) -> list[Capture]:
    with (directory / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    captures = []
    for row in rows:
        if row.get("provider") not in _PROVIDERS:
            continue  # not an SSE format the reader reads (gemini, bedrock, ollama, vectors)
        body = (directory / row["file"]).read_bytes()
        blocks, tail = split_blocks(body)
        captures.append(
            Capture(
                name=prefix + row["file"],
                provider=_PROVIDERS[row["provider"]],
                body=body,
                blocks=tuple(blocks),
                tail=tail,
                proof_end=proof_end(blocks),
                tool_calls=_count(row.get("tool_calls", "0")),
            )
        )
    return captures


@cache
def _load(corpus: Path, own: tuple[Path, ...]) -> tuple[Capture, ...]:
    captures = _read_set(corpus / "real", "")
    for directory in own:
        captures += _read_set(directory, directory.name + "/")
    return tuple(captures)


def load_captures(
    corpus: str | os.PathLike[str] | None = None, *, names: Iterable[str] | None = None
) -> tuple[Capture, ...]:
    """Every capture of the corpus manifest, then the repository's own (or only ``names``)."""
    root = find_corpus(corpus).resolve()
    found = _load(root, tuple(other_sets(root)))
    if names is None:
        return found
    wanted = set(names)
    return tuple(c for c in found if c.name in wanted)
