"""One JSON entry point for the wire decoders, so a faster parser can be swapped in one place.

Parsing each event's data is the largest single cost of reading a stream (see
``docs/PERFORMANCE.md``), so :func:`load_object` takes a fast path and keeps
``json.loads`` as the judge of everything else:

* With the optional ``jiter`` installed (pydantic's parser; the official
  ``openai`` and ``anthropic`` SDKs depend on it), it parses first: faster than
  ``json.loads`` on event-sized objects. Not ``orjson``: it turns integers past 64
  bits into floats without an error, a silent difference.
* Without it, and for data of 16 KiB or more, the stdlib's own C scanner is called
  directly. Past a few KiB a document is mostly its strings (the Responses API's
  ``*.done`` and ``response.completed`` events repeat the whole text), and there the
  stdlib's scanner is the faster of the two (``bench/long_json.py``,
  ``docs/PERFORMANCE.md``). ``json.loads`` ends in that same call, after three
  Python-level wrappers and two regex matches for surrounding whitespace, which on
  an event-sized chunk cost enough to be worth skipping.

The fast path only ever *accepts*: whenever it fails or sees anything unusual
(leading or trailing whitespace or extra data for the scanner; a lone
surrogate, which UTF-8 cannot encode, or nesting past its limit for jiter),
the data goes through ``json.loads``, which gives the value or the error
exactly as before. jiter agrees with ``json.loads`` on what it accepts
(NaN and Infinity, big integers, duplicate keys, float rounding): the result
is ``json.loads``'s on every input, with or without the extra.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

from railings.errors import MalformedStream

__all__ = ["BACKEND", "as_count", "as_int", "load_object", "parse_bytes"]

_loads = json.loads


def _stdlib_fast() -> Callable[[str], Any]:
    # The C scanner that json.loads ends in (JSONDecoder sets it up in __init__).
    scan_once: Callable[[str, int], tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]

    def parse(data: str) -> Any:
        value, end = scan_once(data, 0)  # StopIteration when no value starts at 0
        if end != len(data):
            raise ValueError("trailing data")  # whitespace or extra data: json.loads decides
        return value

    return parse


def _jiter_fast(from_json: Callable[[bytes], Any]) -> Callable[[str], Any]:
    def parse(data: str) -> Any:
        return from_json(data.encode())  # UnicodeEncodeError (a ValueError) on a lone surrogate

    return parse


def _fast_parser() -> tuple[Callable[[str], Any], str]:
    try:
        jiter = importlib.import_module("jiter")
    except ImportError:  # the optional extra is not installed
        return _stdlib_fast(), "json"
    return _jiter_fast(jiter.from_json), "jiter"


_fast, BACKEND = _fast_parser()
_scan = _stdlib_fast()  # for long data, with or without jiter (the module docstring)
_LONG = 16 * 1024  # characters


def _bytes_parser() -> Callable[[bytes], Any]:
    if BACKEND == "jiter":
        from_json: Callable[[bytes], Any] = importlib.import_module("jiter").from_json
        return from_json

    def parse(raw: bytes) -> Any:
        return _fast(raw.decode())

    return parse


# The fast path given the UTF-8 bytes of the data (turn/fastpath.py): for bytes that are
# valid UTF-8 it is ``_fast(raw.decode())`` -- jiter is handed ``data.encode()``, the same
# bytes -- and it raises where that raises; the caller then goes through load_object.
# Bytes that are not UTF-8 it refuses (jiter checks every string it reads, and outside
# strings only ASCII is JSON; the stdlib's way decodes strictly): the reader's fast path
# relies on it (tests/test_fastpath.py holds it to that).
parse_bytes = _bytes_parser()


def _strict(data: str, where: str) -> Any:
    try:
        return _loads(data)
    except ValueError as exc:  # JSONDecodeError
        raise MalformedStream(
            f"{where}: data is not valid JSON ({exc.msg if hasattr(exc, 'msg') else exc})"
        ) from None
    except RecursionError:
        raise MalformedStream(f"{where}: data nests too deeply to parse") from None


def load_object(data: str, *, where: str) -> dict[str, Any]:
    """Parse one event's data as a JSON object, or raise :class:`MalformedStream`."""
    try:
        value = _fast(data) if len(data) < _LONG else _scan(data)
    except Exception:  # whatever the fast path refuses, json.loads judges
        value = _strict(data, where)
    if not isinstance(value, dict):
        raise MalformedStream(f"{where}: data is JSON but not an object")
    return value


def as_int(value: object) -> int | None:
    """A JSON integer field, or None (absent, null, a bool, a float, a string)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_count(value: object) -> int | None:
    """A count (tokens, an output limit) however a JSON body spells it: an integer, an
    integral float (``64.0``) or a string of ASCII digits (``"64"``: proto3 JSON writes an
    int64 as a string, and pydantic servers coerce one); None for anything else (absent,
    null, a bool, a fraction, a negative or signed number, other text)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float):
        return int(value) if value.is_integer() and value >= 0 else None
    if isinstance(value, str) and 0 < len(value) <= 20 and value.isascii() and value.isdigit():
        return int(value)
    return None
