"""The guard's fast verdict: a body whose last event is its provider's canonical proof.

:func:`proven_by_tail` looks only at the end of a body (and, for the Responses
API, walks back over its one terminal event and counts the ``sequence_number``
fields), by the rule of the provider's spec (:mod:`railings.providers`): True only
where the core reader would find the turn COMPLETE; False means "ask the reader"
(:func:`read_turn`), never "interrupted". A test proves the two never disagree.
"""

from __future__ import annotations

from railings.errors import EventTooLarge
from railings.providers import spec
from railings.turn.model import Turn
from railings.turn.reader import StreamReader

__all__ = ["proven_by_tail", "read_turn"]


def proven_by_tail(provider: str, body: bytes) -> bool:
    """True when ``body`` ends with its provider's canonical proof and holds no error.

    Only ever True where the core reader finds the turn COMPLETE; False means
    "ask the reader", never "interrupted". The rule is the provider's own
    (``ProviderSpec.proof.proven_by_tail``).
    """
    return spec(provider).proof.proven_by_tail(body)


def read_turn(provider: str, body: bytes, max_tokens: int | None = None) -> Turn:
    """The core's verdict on a whole body that ended (EOF or a broken connection)."""
    reader = StreamReader(provider, max_tokens=max_tokens)
    try:  # noqa: SIM105 -- the reader has ended the turn abruptly; its turn says why
        reader.feed(body)
    except EventTooLarge:
        pass
    reader.close()
    return reader.turn()
