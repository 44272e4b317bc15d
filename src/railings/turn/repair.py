"""The repair ladder, as an explicit policy.

``parse_arguments(raw, policy)`` is the only place tool-call arguments are
parsed. Under :attr:`RepairPolicy.STRICT_ONLY` it is a strict JSON parse and
nothing else: a fragment cut off by the output limit stays a failure, because
closing it would finish the model's half-sentence on its behalf
(``{"command": "rm -rf /tmp/leg`` is not ``rm -rf /tmp/leg``). Under
:attr:`RepairPolicy.REPAIR_ALLOWED` -- for turns the model finished writing and
merely fumbled -- it climbs five rungs, each one fixing one known model
mistake, each applied to the text the previous rungs left, and stops at the
first that yields a JSON object:

1. ``STRICT``: the text is already a JSON object.
2. ``UNWRAP``: a Markdown code fence or prose around one object
   (models that answer ````json {...} ```` or "Here are the arguments: {...}").
   Only the first object is kept, and only when no second one follows it: two
   objects in one call is ambiguity, not wrapping.
3. ``TRAILING_COMMAS``: ``{"a": 1,}`` -- the JavaScript habit.
4. ``CLOSE``: unterminated strings, arrays and objects are closed -- a model
   that stopped writing early in a turn that still ended normally.
5. ``PYTHON_LITERAL``: ``{'a': True, 'b': None}`` -- a Python dict instead of
   JSON, read with :func:`ast.literal_eval` (literals only; nothing runs).

Rungs 2-4 scan the text once, aware of strings, and treat both ``"`` and
``'`` as quotes, so that a brace or a comma inside a string -- a JSON string or
a Python one for rung 5 -- is never taken for structure or dropped. (Outside
a string, ``'`` cannot occur in JSON, so JSON text reads the same either way.)

Strict means strict: ``NaN`` and ``Infinity``, which :func:`json.loads` accepts
by default, are not JSON and fail every rung; nor is a number such as ``1e999``
that overflows to infinity.

The result says which rung succeeded, so callers can report ``repaired``.
All rungs are linear in the input size.
"""

from __future__ import annotations

import ast
import enum
import json
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Arguments", "RepairPolicy", "Rung", "parse_arguments"]


class RepairPolicy(enum.Enum):
    """Whether a call's arguments may climb the repair ladder (a turn the model finished
    writing) or get a strict parse only (a call the output limit may have cut)."""

    REPAIR_ALLOWED = "repair_allowed"
    STRICT_ONLY = "strict_only"


class Rung(enum.Enum):
    """The rungs of the repair ladder, in the order they are tried (module docstring)."""

    STRICT = 1
    UNWRAP = 2
    TRAILING_COMMAS = 3
    CLOSE = 4
    PYTHON_LITERAL = 5


@dataclass(frozen=True, slots=True)
class Arguments:
    """Parsed arguments and the rung that produced them."""

    value: dict[str, Any]
    rung: Rung

    @property
    def repaired(self) -> bool:
        """True when a rung above ``STRICT`` produced the arguments."""
        return self.rung is not Rung.STRICT


def parse_arguments(raw: str, policy: RepairPolicy) -> Arguments | None:
    """Parse a call's raw argument string under ``policy``; None if no JSON object results."""
    value = _strict(raw)
    if value is not None:
        return Arguments(value, Rung.STRICT)
    if policy is RepairPolicy.STRICT_ONLY:
        return None
    text = raw
    for rung, step in _LADDER:
        text = step(text)
        value = _literal(text) if rung is Rung.PYTHON_LITERAL else _strict(text)
        if value is not None:
            return Arguments(value, rung)
    return None


def _strict(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _reject_constant(name: str) -> Any:
    # RFC 8259 has no NaN or Infinity; json.loads would accept them by default.
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    # ``1e999`` is JSON grammar, but it overflows to infinity, which no JSON encoder can
    # write back (RFC 8259 section 6 leaves the range to the implementation): not JSON here.
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text[:20]} overflows a float")
    return value


_QUOTES = "\"'"
_CLOSER = {"{": "}", "[": "]"}


class _Strings:
    """Where a scan stands among strings (module docstring: ``"`` and ``'`` both quote, a
    backslash escapes): the one string rule of rungs 2-4."""

    quote = ""  # the quote of the string the scan is in, "" outside strings
    escaped = False  # the last character was a backslash inside a string

    def outside(self, ch: str) -> bool:
        """Step past ``ch``; True when it is structure: outside a string, or the quote
        that opens one."""
        if not self.quote:
            if ch in _QUOTES:
                self.quote = ch
            return True
        if self.escaped:
            self.escaped = False
        elif ch == "\\":
            self.escaped = True
        elif ch == self.quote:
            self.quote = ""
        return False


def _unwrap(text: str) -> str:
    """Rung 2: keep the first object, from its ``{`` to the bracket that closes it.

    A fence or prose around it is dropped. An object that never closes is kept
    to the end of the text (rung 4 may close it): cutting it at the last ``}``
    would cut inside a string, dropping what the model wrote after that brace.
    When another ``{`` follows the object, or a ``"``, ``}`` or ``]`` comes
    before it (the text before is then JSON, not prose), the text is left as it is.
    """
    start = text.find("{")
    if start < 0:
        return text
    if any(ch in '"}]' for ch in text[:start]):
        # A quote or a closing bracket before the object: that is the middle of some JSON
        # (``o soak-a"}{"command": "ech``, fragments out of order), not prose around it.
        return text
    depth = 0
    strings = _Strings()
    for position in range(start, len(text)):
        ch = text[position]
        if not strings.outside(ch):
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                if "{" in text[position + 1 :]:
                    return text
                return text[start : position + 1]
    return text[start:]


def _drop_trailing_commas(text: str) -> str:
    """Rung 3: remove a comma that is followed (after whitespace) by ``}`` or ``]``."""
    out: list[str] = []
    strings = _Strings()
    pending: list[str] = []  # a comma and the whitespace after it, held back
    for ch in text:
        if not strings.outside(ch):
            out.append(ch)
            continue
        if pending:
            if ch in " \t\r\n":
                pending.append(ch)
                continue
            if ch in "}]":
                out.extend(pending[1:])  # keep the whitespace, drop the comma
            else:
                out.extend(pending)
            pending = []
        if ch == ",":
            pending = [ch]
            continue
        out.append(ch)
    out.extend(pending)
    return "".join(out)


def _close(text: str) -> str:
    """Rung 4: close an open string, drop a dangling comma, close open brackets."""
    stack: list[str] = []
    strings = _Strings()
    for ch in text:
        if not strings.outside(ch):
            continue
        if ch in _CLOSER:
            stack.append(_CLOSER[ch])
        elif ch in "}]" and stack and stack[-1] == ch:
            stack.pop()
    tail = text
    if strings.quote:
        if strings.escaped:
            tail = tail[:-1]  # a lone backslash cannot end a string
        tail += strings.quote
    else:
        tail = tail.rstrip()
        if tail.endswith(","):
            tail = tail[:-1]
    return tail + "".join(reversed(stack))


_PY_TOKENS = re.compile(r""""(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\b(true|false|null)\b""")
_PY_SPELLING = {"true": "True", "false": "False", "null": "None"}


def _python(text: str) -> str:
    """Rung 5 reads the text as a Python literal; JSON keywords outside strings are mapped."""
    return _PY_TOKENS.sub(lambda m: _PY_SPELLING[m[1]] if m[1] else m[0], text)


def _literal(text: str) -> dict[str, Any] | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    try:  # only JSON-representable values count as arguments
        return _strict(json.dumps(value))
    except (TypeError, ValueError, RecursionError):
        return None


_LADDER = (
    (Rung.UNWRAP, _unwrap),
    (Rung.TRAILING_COMMAS, _drop_trailing_commas),
    (Rung.CLOSE, _close),
    (Rung.PYTHON_LITERAL, _python),
)
