"""The guard's byte rules: what may be kept unread, what counts as content, what may prove.

:class:`~.watch.StreamWatch` looks at most bytes only in C (``count``, ``find``,
``in``): these are its three rules over raw bytes, each cheap enough to run per
chunk or per look of the content clock.

* :func:`keep_for`: how much of a body may stay unread and still be within every
  bound of the turn;
* :func:`carries_data`: does a region hold a ``data:`` line that is not a ping
  (the content clock's count over kept bytes);
* :class:`ProofMarkers`: might a piece carry the provider's termination proof, by
  the spellings its spec (:class:`~railings.providers.base.Proof`) names. An SDK
  may stop reading at the proof and close the body (the openai SDK stops at
  ``[DONE]``), so the watch reads what it gathered before such a piece goes on.
"""

from __future__ import annotations

from railings.limits import TurnLimits
from railings.providers import spec

__all__ = ["MAX_KEEP", "ProofMarkers", "carries_data", "keep_for"]

MAX_KEEP = 4 * 2**20
_MIN_EVENT_BYTES = 8  # "data:{}" and the blank line that dispatches it
_DATA = b"data:"
_PINGS = (b'"type": "ping"', b'"type":"ping"')


def keep_for(limits: TurnLimits) -> int:
    """How many decoded bytes may be kept unread and still be within every bound."""
    b = limits.bounds(None)  # resolved limits: every bound is given, none is derived
    return min(MAX_KEEP, b.text, b.arguments, b.events * _MIN_EVENT_BYTES)


def carries_data(region: bytes, edge: bytes) -> bool:
    """Does ``region`` (the bytes since the last look; ``edge``: the 4 before them) hold a
    ``data:`` line that is not a ping? Byte counts, in C. A ping marker before the first
    ``data:`` of the region belongs to a line counted before."""
    if (edge[-4:] + region[:4]).count(_DATA):
        first, split = 0, 1  # a data: across the edge (5 bytes never fit in 4)
    else:
        first, split = region.find(_DATA), 0
        if first < 0:
            return False
    pings = region.count(_PINGS[0], first) + region.count(_PINGS[1], first)
    return split + region.count(_DATA, first) > pings


class ProofMarkers:
    """The spellings of one provider's proof (its data values, event names, types and
    fields: ``[DONE]``, ``message_stop``, ``response.completed`` ...), searched in each
    piece and across its edge with the pieces before (a marker split between two
    network pieces is still seen). Lenient on purpose: a marker in the text, or a
    field that is not yet terminal, only costs the watch an early read; a proof is
    never missed."""

    __slots__ = ("_markers", "_span", "_tail")

    def __init__(self, provider: str) -> None:
        proof = spec(provider).proof
        names = proof.data | proof.events | proof.types | proof.fields
        self._markers = tuple(sorted(name.encode() for name in names))
        self._span = max(map(len, self._markers), default=2) - 1
        self._tail = b""  # the last _span bytes seen

    def follow(self, pieces: list[bytes]) -> None:
        """``pieces`` passed without a search (kept, then read whole): only their end is
        kept, for the edge with the next piece."""
        end = b""
        for piece in reversed(pieces):
            end = piece + end
            if len(end) >= self._span:
                break
        self._tail = (self._tail + end)[-self._span :]

    def seen(self, piece: bytes) -> bool:
        """Might ``piece`` (after every piece given before) carry the proof?"""
        span = self._span
        tail = self._tail
        self._tail = piece[-span:] if len(piece) >= span else (tail + piece)[-span:]
        edge = tail + piece[:span]
        for marker in self._markers:  # noqa: SIM110 -- no generator frame per piece
            if marker in piece or marker in edge:
                return True
        return False
