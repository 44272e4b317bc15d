"""Content codings on a judged stream: judged decoded, forwarded as what it is. Sans-IO.

The gateway asks the upstream for ``accept-encoding: identity`` on the model paths,
but an upstream (or a proxy before it) may compress anyway. Judged as they came,
gzip bytes hold no proof: a whole answer would be called Empty and resent, paid
again each time, and the client would get a body it cannot read. So a judged
stream's ``Content-Encoding`` is undone first, by the guard's bounded decoder
(:class:`~railings.transport.coding.BodyDecoder`: gzip and deflate, in pieces of at
most 1 MiB, however much a piece inflates), and the judge reads the decoded bytes.
What the client gets is those decoded bytes, with ``content-encoding`` (and any
length) removed from the response head: labelled as what it is.

A gzip body may be several members one after another (RFC 1952 §2.2; a server that
compresses each flush on its own sends one per event). The gateway reads every
member, as gzip -d, urllib3 and Go's ``compress/gzip`` do (``members="all"``), and
bytes after a member that are not one are a body that does not decode: never
dropped unjudged, since a proof could hide behind them. The guard, whose SDK reads
only what httpx2 decodes, stops after the first member as httpx2 does.

Which codings (RFC 9110 §8.4): the header's values are split at commas, stripped and
lowercased; ``identity`` is no coding; ``x-gzip`` is ``gzip`` (§8.4.1.3); more than
five codings are refused, as httpx2 refuses them. Any other coding (``br``,
``zstd``, ``compress``, a name nobody registered) is :class:`Unreadable`: the
stream cannot be judged, and, since the upstream may already have generated an
answer inside it, it is not resent either (the caller answers once, with the
provider's error). Unlike the guard, which mirrors what httpx2 decodes for the SDK
above it, the gateway's clients are anything, so no coding passes through undecoded.
"""

from __future__ import annotations

from collections.abc import Sequence

from railings.transport.coding import MAX_CODINGS, READABLE, BodyDecoder, Unreadable

__all__ = ["UNREADABLE_CODE", "Unreadable", "applied", "stream_decoder", "unreadable_message"]

# The error's code when a judged stream's body cannot be decoded.
UNREADABLE_CODE = "content_encoding_unreadable"

_ALIASES = {"x-gzip": "gzip"}
_SHOWN = 40  # characters of an upstream's coding name quoted back in an error


def applied(values: Sequence[str]) -> list[str]:
    """The codings ``Content-Encoding`` header ``values`` say were applied, in order.
    Raises :class:`Unreadable` for one railings cannot undo, or more than five."""
    found: list[str] = []
    for value in values:
        for item in value.split(","):
            coding = item.strip().lower()
            if not coding or coding == "identity":
                continue
            coding = _ALIASES.get(coding, coding)
            if coding not in READABLE:
                shown = coding[:_SHOWN].encode("ascii", "backslashreplace").decode()
                raise Unreadable(f"content-encoding {shown!r}")
            found.append(coding)
    if len(found) > MAX_CODINGS:
        raise Unreadable(f"more than {MAX_CODINGS} content codings")
    return found


def stream_decoder(values: Sequence[str]) -> BodyDecoder | None:
    """The decoder for a stream with these ``Content-Encoding`` values, or None when the
    body is not coded. Raises :class:`Unreadable` as :func:`applied` does."""
    codings = applied(values)
    return BodyDecoder(codings, members="all") if codings else None


def unreadable_message(reason: object) -> str:
    """What the client is told about a stream in a coding railings cannot read."""
    return (
        f"the upstream answered in {reason}, which the gateway cannot decode, so the "
        "stream cannot be judged; it is not resent, since the upstream may already have "
        "generated an answer"
    )
