"""Where a continuation meets the text before it: the repeat it may begin with, removed.

A model asked for the rest of a cut answer often writes some of it again: the whole
answer from the start (asked by user message, it tends to start over), its last
sentence, or the whitespace a prefill left out. A prefill's seam is that whitespace
alone (:mod:`railings.continuation.plan`): a model carrying a prefill on writes only the
rest, and a rest that begins like the text's end ("ha ha" then " ha ha!") is new text.
:func:`overlap` says how many characters at the start of the continuation repeat the
end of the partial text: the longest end of the partial text that the continuation
begins with, taken only where it begins at a boundary of the partial text
(:func:`_boundary`). Without that rule a continuation that goes on with the letter the
partial text ended in would lose it ("bo" continued with "ok" is "book", not "bok").

Bounded work: the longest such overlap is found by one Knuth-Morris-Pratt pass over at
most the shorter of the two texts (linear time and memory in it), then the shorter
candidates are walked along the failure links, each checked in constant time. Both
texts are bounded already: a turn's text is bounded by ``max_tokens``
(:class:`railings.limits.TurnLimits`).

:class:`Seam` does the same while the continuation streams, so that what a caller shows
is the joined text: the continuation's text is held while it could still be part of a
repeat -- while it occurs in the partial text -- and released, the repeat removed, as
soon as it cannot. The held text is never longer than the partial text plus the last
delta. ``Seam(p)`` fed any split of ``c`` releases ``c[overlap(p, c):]``.

Its work is linear too. A delta is compared where the held text was found; only when it
no longer matches there is the partial text searched again, from that place on (an
occurrence of the longer text is one of the shorter's), so the searches move through
the partial text once. Each such search also reads the held text: those reads are
budgeted at four times the partial text plus 4 KiB, and a seam that spends its budget
(a continuation that keeps matching repetitive text in ever new places) decides with
what it holds.
"""

from __future__ import annotations

import unicodedata

__all__ = ["Seam", "overlap"]


def overlap(partial: str, continuation: str) -> int:
    """How many characters at the start of ``continuation`` repeat the end of ``partial``:
    the length of the longest end of ``partial`` that ``continuation`` begins with and
    that begins at a boundary of ``partial``; 0 when there is none."""
    size = min(len(partial), len(continuation))
    if size == 0:
        return 0
    head = continuation[:size]
    failure = _failure(head)
    matched = 0  # the longest start of ``head`` that ends where the partial text is read to
    for char in partial[len(partial) - size :]:
        while matched and head[matched] != char:
            matched = failure[matched - 1]
        if head[matched] == char:
            matched += 1  # reaches ``size`` only at the last character
    while matched:
        if _boundary(partial, len(partial) - matched):
            return matched
        matched = failure[matched - 1]
    return 0


def _failure(text: str) -> list[int]:
    """Knuth-Morris-Pratt's failure function: for each ``i``, the length of the longest
    proper start of ``text[: i + 1]`` that is also its end."""
    out = [0] * len(text)
    length = 0
    for i in range(1, len(text)):
        while length and text[i] != text[length]:
            length = out[length - 1]
        if text[i] == text[length]:
            length += 1
        out[i] = length
    return out


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _boundary(text: str, at: int) -> bool:
    """May a repeat begin at ``text[at]``? At the start, next to whitespace, where a word
    begins or ends, or between two different punctuation marks; never inside a word, a
    run of one mark (``====``) or before a combining mark."""
    if at == 0:
        return True
    before, first = text[at - 1], text[at]
    if unicodedata.combining(first):
        return False
    if before.isspace() or first.isspace() or _word(before) != _word(first):
        return True
    return not _word(first) and before != first


class Seam:
    """A streamed continuation's text, its repeat of ``partial`` removed (module docstring).

    :meth:`feed` each piece of text in order and show what it returns; :meth:`settle`
    when something other than text begins (what is held is decided and returned);
    :meth:`close` at the end. ``cut`` is the number of characters removed, None until
    it is decided.
    """

    def __init__(self, partial: str) -> None:
        self._partial = partial
        self._held: list[str] = []
        self._size = 0
        self._at = 0  # where the held text first occurs in the partial text
        self._budget = 4 * len(partial) + 4096  # characters of held text searched for
        self.cut: int | None = None

    @property
    def holding(self) -> bool:
        """True while text is held, undecided."""
        return self.cut is None and self._size > 0

    def feed(self, text: str) -> str:
        """The text to pass on now ("" while it is held)."""
        if self.cut is not None:
            return text
        if not text:
            return ""
        end = self._at + self._size
        self._held.append(text)
        self._size += len(text)
        if self._partial.startswith(text, end):
            return ""  # still the text at ``_at``: a repeat may go on
        self._budget -= self._size
        if self._budget < 0:
            return self._decide()
        held = "".join(self._held)
        self._held = [held]
        # Every occurrence of the longer text is one of the shorter's, none before _at.
        at = self._partial.find(held, self._at + 1)
        if at >= 0:
            self._at = at
            return ""
        return self._decide()

    def settle(self) -> str:
        """Decide with what is held, when any is (another part began), and return it."""
        return self._decide() if self.holding else ""

    def close(self) -> str:
        """The text ended: decide, and return what is still held."""
        return self._decide() if self.cut is None else ""

    def _decide(self) -> str:
        held = "".join(self._held)
        self._held, self._size = [], 0
        self.cut = overlap(self._partial, held)
        return held[self.cut :]
