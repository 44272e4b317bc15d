"""The JSON fast paths agree with json.loads: the stdlib scanner path and the optional jiter."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jiter
import pytest

from railings.errors import MalformedStream
from railings.wire import _json

BACKENDS: dict[str, Callable[[str], Any]] = {
    "stdlib": _json._stdlib_fast(),
    "jiter": _json._jiter_fast(jiter.from_json),
}

CASES = [
    '{"a": 1}',
    ' {"a": 1}',
    '{"a": 1} ',
    '{"a": 1}{"b": 2}',
    '{"a": NaN, "b": Infinity, "c": -Infinity}',
    '{"a": 1e400}',
    '{"a": 123456789012345678901234567890}',
    '{"a": "\\ud800"}',
    '\ufeff{"a": 1}',
    '{"a": 1, "a": 2}',
    '{"a": 0.1}',
    '{"a": "caf\\u00e9 \u00e9"}',
    "[1, 2]",
    "null",
    "",
    "{",
    '{"a": tru}',
    "[" * 5000 + "]" * 5000,
]


def _judge(parse: Callable[[str], Any], data: str) -> tuple[str, Any]:
    """What load_object would give with this fast path: a value, or MalformedStream."""
    try:
        value = parse(data)
    except Exception:
        try:
            value = json.loads(data)
        except (ValueError, RecursionError):
            return ("error", None)
    if not isinstance(value, dict):
        return ("error", None)
    return ("value", json.dumps(value, sort_keys=True))


def _reference(data: str) -> tuple[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return ("error", None)
    if not isinstance(value, dict):
        return ("error", None)
    return ("value", json.dumps(value, sort_keys=True))


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("data", CASES, ids=[repr(c[:24]) for c in CASES])
def test_fast_path_agrees_with_json_loads(backend: str, data: str) -> None:
    assert _judge(BACKENDS[backend], data) == _reference(data)


def test_load_object_raises_typed_errors() -> None:
    for data in ("", "{", "[1]", "null"):
        with pytest.raises(MalformedStream):
            _json.load_object(data, where="test")
    assert _json.load_object('{"a": 1}', where="test") == {"a": 1}


@pytest.mark.parametrize("data", CASES, ids=[repr(c[:24]) for c in CASES])
def test_load_object_on_long_data_agrees_with_json_loads(data: str) -> None:
    """Past 16 KiB load_object takes the stdlib's scanner even with jiter installed."""
    padded = data.replace('{"a"', '{"pad": "%s", "a"' % ("x" * _json._LONG), 1)
    assert len(padded) >= _json._LONG or padded == data
    try:
        got: tuple[str, Any] = (
            "value",
            json.dumps(_json.load_object(padded, where="t"), sort_keys=True),
        )
    except MalformedStream:
        got = ("error", None)
    assert got == _reference(padded)
