"""The guard's gathering: when what gathered unread must be read before a piece goes on.

Past the first content the watch (:mod:`.watch`) lets pieces gather, up to
:data:`GATHER` bytes, and feeds its attempt once per batch: the reader reads a body the
same however it is split, and its cost per call is then paid per batch, not per network
piece. Nothing here judges a stream. The one question is when a batch must be read
before the piece in hand is handed over: an SDK may stop at the proof and close the
body (the openai SDK stops at ``[DONE]``), and it must not have the proof of a body
whose earlier bytes the reader refuses. :class:`ProofMarkers` answers it from the
provider spec's own spellings of the proof.
"""

from __future__ import annotations

from railings.providers import spec

__all__ = ["GATHER", "ProofMarkers"]

GATHER = 65536  # the most that gathers before it is read


class ProofMarkers:
    """The spellings of one provider's proof (its data values, event names, types and
    fields: ``[DONE]``, ``message_stop``, ``response.completed`` ...), searched in each
    piece and across its edge with the pieces before (a marker split between two
    network pieces is still seen). Lenient on purpose: a marker in the text, or a
    field that is not yet terminal, only costs the watch an early read; a proof is
    never missed, and the reader alone decides what it proves."""

    __slots__ = ("_markers", "_span", "_tail")

    def __init__(self, provider: str) -> None:
        proof = spec(provider).proof
        names = proof.data | proof.events | proof.types | proof.fields
        self._markers = tuple(sorted(name.encode() for name in names))
        self._span = max(map(len, self._markers), default=2) - 1
        self._tail = b""  # the last _span bytes seen

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
