"""The values a script holds: the ``$filler`` macro, and the checks of numbers and
strings each option is read with (a wrong one is a :class:`ConfigurationError` naming
where it is)."""

from __future__ import annotations

import math
from typing import Any

from railings.errors import ConfigurationError

__all__ = ["expand", "filler", "non_negative", "positive_int_or_none", "string"]

_PROSE = (
    "the quick brown fox jumps over the lazy dog while a careful agent checks every "
    "stream for its proof of termination before it trusts a single tool call"
)
_WORDS = tuple(_PROSE.split())


def filler(n: int) -> str:
    """``n`` characters of deterministic prose (the ``{"$filler": n}`` macro)."""
    if n <= 0:
        return ""
    out: list[str] = []
    size = 0
    i = 0
    while size < n:
        word = _WORDS[i % len(_WORDS)] + ("\n" if i % 13 == 12 else " ")
        out.append(word)
        size += len(word)
        i += 1
    return "".join(out)[:n]


def expand(value: Any, where: str) -> Any:
    """Replace every ``{"$filler": N}`` in ``value``."""
    if isinstance(value, dict):
        if set(value) == {"$filler"}:
            n = value["$filler"]
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise ConfigurationError(f"{where}: $filler needs a non-negative integer")
            return filler(n)
        return {k: expand(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def string(value: Any, where: str) -> str:
    """A string option, ``$filler`` expanded."""
    value = expand(value, where)
    if not isinstance(value, str):
        raise ConfigurationError(f'{where}: expected a string or {{"$filler": N}}')
    return value


def positive_int_or_none(value: Any, where: str) -> int | None:
    """A positive integer option, or None when absent."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigurationError(f"{where}: expected a positive integer")
    return value


def non_negative(value: Any, where: str) -> float | None:
    """A non-negative number option (seconds), or None when absent."""
    if value is None:
        return None
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)  # NaN or infinity: a wait that never ends
        or value < 0
    ):
        raise ConfigurationError(f"{where}: expected a non-negative number")
    return float(value)
