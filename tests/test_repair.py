"""The repair ladder as an explicit policy: one test per rung, the divide, the edges.

Each rung's case is the model mistake the rung exists for. That the rung
reported is the one expected also proves the earlier rungs did not fix it:
the ladder stops at the first rung that yields an object. STRICT_ONLY must
return None for every one of them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from railings.turn.repair import Arguments, RepairPolicy, Rung, parse_arguments

ALLOWED = RepairPolicy.REPAIR_ALLOWED
STRICT = RepairPolicy.STRICT_ONLY
FRAGMENT = '{"command": "rm -rf /tmp/leg'  # cut off by the output limit


# -- one rung each ---------------------------------------------------------------------------

RUNG_CASES = [
    # 1 STRICT: a model that wrote valid JSON.
    pytest.param('{"path": "a.txt", "n": 2}', {"path": "a.txt", "n": 2}, Rung.STRICT, id="strict"),
    # 2 UNWRAP: the arguments answered as Markdown, in a fence.
    pytest.param(
        '```json\n{"path": "a.txt"}\n```', {"path": "a.txt"}, Rung.UNWRAP, id="unwrap-fence"
    ),
    # 2 UNWRAP: ... or introduced in prose.
    pytest.param(
        'Here are the arguments: {"path": "a.txt"} Let me know.',
        {"path": "a.txt"},
        Rung.UNWRAP,
        id="unwrap-prose",
    ),
    # 3 TRAILING_COMMAS: the JavaScript habit, in objects and arrays.
    pytest.param(
        '{"paths": ["a", "b",], "recursive": true,}',
        {"paths": ["a", "b"], "recursive": True},
        Rung.TRAILING_COMMAS,
        id="trailing-commas",
    ),
    # 3 on top of 2: a fenced object with a trailing comma.
    pytest.param(
        '```json\n{"path": "a.txt",}\n```',
        {"path": "a.txt"},
        Rung.TRAILING_COMMAS,
        id="fence+comma",
    ),
    # 4 CLOSE: a model that stopped early in a turn that still ended normally.
    pytest.param('{"paths": ["a", "b"', {"paths": ["a", "b"]}, Rung.CLOSE, id="close-array"),
    pytest.param('{"a": {"b": 1}, ', {"a": {"b": 1}}, Rung.CLOSE, id="close-dangling-comma"),
    pytest.param('{"a": "x\\', {"a": "x"}, Rung.CLOSE, id="close-lone-backslash"),
    # 5 PYTHON_LITERAL: a Python dict instead of JSON.
    pytest.param(
        "{'path': 'a.txt', 'force': True, 'mode': None}",
        {"path": "a.txt", "force": True, "mode": None},
        Rung.PYTHON_LITERAL,
        id="python-literal",
    ),
    # 5 keeps JSON keywords working when mixed with Python quotes.
    pytest.param(
        "{'force': true, 'mode': null}",
        {"force": True, "mode": None},
        Rung.PYTHON_LITERAL,
        id="py-json",
    ),
]


@pytest.mark.parametrize(("raw", "value", "rung"), RUNG_CASES)
def test_each_rung_fixes_its_mistake(raw: str, value: dict[str, Any], rung: Rung) -> None:
    assert parse_arguments(raw, ALLOWED) == Arguments(value, rung)


@pytest.mark.parametrize(("raw", "value", "rung"), RUNG_CASES)
def test_strict_only_repairs_nothing(raw: str, value: dict[str, Any], rung: Rung) -> None:
    expected = Arguments(value, Rung.STRICT) if rung is Rung.STRICT else None
    assert parse_arguments(raw, STRICT) == expected


def test_repaired_says_whether_a_rung_above_strict_was_needed() -> None:
    assert not Arguments({}, Rung.STRICT).repaired
    assert all(Arguments({}, rung).repaired for rung in Rung if rung is not Rung.STRICT)


# -- the divide ------------------------------------------------------------------------------


def test_the_divide_same_fragment_rescued_only_when_repair_is_allowed() -> None:
    assert parse_arguments(FRAGMENT, ALLOWED) == Arguments(
        {"command": "rm -rf /tmp/leg"}, Rung.CLOSE
    )
    assert parse_arguments(FRAGMENT, STRICT) is None


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=10),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
            max_leaves=8,
        ),
        min_size=1,
        max_size=4,
    ),
    st.data(),
)
def test_no_proper_prefix_of_an_object_passes_strict(value: dict[str, Any], data: Any) -> None:
    text = json.dumps(value)
    assert parse_arguments(text, STRICT) == Arguments(value, Rung.STRICT)
    cut = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    assert parse_arguments(text[:cut], STRICT) is None


# -- only objects ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw", ["", "   ", "[1, 2]", '"text"', "1", "null", "true", "[1, 2,]", "(1, 2)", "{1, 2}"]
)
@pytest.mark.parametrize("policy", [ALLOWED, STRICT])
def test_anything_but_an_object_yields_none(raw: str, policy: RepairPolicy) -> None:
    assert parse_arguments(raw, policy) is None


def test_nan_and_infinity_are_not_json() -> None:
    for raw in ('{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}'):
        assert parse_arguments(raw, STRICT) is None
        assert parse_arguments(raw, ALLOWED) is None


def test_the_python_rung_evaluates_literals_only() -> None:
    assert parse_arguments("{'a': __import__('os').getcwd()}", ALLOWED) is None
    assert parse_arguments("{'a': {1, 2}}", ALLOWED) is None  # a set is not JSON


# -- what the rungs must not do (regressions) -----------------------------------------------


def test_unwrap_never_cuts_inside_a_string() -> None:
    # Cutting at the last "}" used to drop the "y" the model wrote after the brace.
    assert parse_arguments('{"a": "x}y', ALLOWED) == Arguments({"a": "x}y"}, Rung.CLOSE)


def test_two_objects_are_ambiguity_not_wrapping() -> None:
    assert parse_arguments('{"command": "ls"}{"command": "rm -rf /"}', ALLOWED) is None
    assert parse_arguments('{"a": 1} and then {"b": 2}', ALLOWED) is None


def test_commas_and_brackets_inside_strings_are_text() -> None:
    assert parse_arguments('{"a": "x,}", "b": [1,],}', ALLOWED) == Arguments(
        {"a": "x,}", "b": [1]}, Rung.TRAILING_COMMAS
    )
    assert parse_arguments('{"a": "[{", "b": "', ALLOWED) == Arguments(
        {"a": "[{", "b": ""}, Rung.CLOSE
    )


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("{'a': 'x,}'}", {"a": "x,}"}),  # the comma rung used to eat this comma
        ("{'a': '{'}", {"a": "{"}),  # the close rung used to add a brace for it
        ("{'a': 'say \"hi\"'}", {"a": 'say "hi"'}),  # ... or a quote
        ("{'a': 'true or null'}", {"a": "true or null"}),  # keywords inside strings stay text
    ],
)
def test_python_strings_are_strings_on_every_rung(raw: str, value: dict[str, Any]) -> None:
    assert parse_arguments(raw, ALLOWED) == Arguments(value, Rung.PYTHON_LITERAL)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="{}[]\",:' \\abtrue0123\n`", max_size=40))
def test_the_ladder_never_raises_and_only_yields_objects(raw: str) -> None:
    for policy in (ALLOWED, STRICT):
        result = parse_arguments(raw, policy)
        assert result is None or isinstance(result.value, dict)


# -- linear on large inputs (no timing asserts: 1 MB must simply work) ------------------------

MB = 1_000_000


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param('{"a": "%s"}' % ("x" * MB), Rung.STRICT, id="strict"),
        pytest.param('```json\n{"a": "%s"}\n```' % ("x" * MB), Rung.UNWRAP, id="unwrap"),
        pytest.param('{"a": [%s]}' % ("1," * (MB // 2)), Rung.TRAILING_COMMAS, id="commas"),
        pytest.param('{"a": "%s' % ("x" * MB), Rung.CLOSE, id="close"),
        pytest.param("{'a': '%s'}" % ("x" * MB), Rung.PYTHON_LITERAL, id="python"),
        pytest.param("{" * MB, None, id="deep-braces"),
        pytest.param('"' * MB, None, id="quotes"),
        pytest.param('{"a": ' + "\\" * MB, None, id="backslashes"),
        # Adjacent Python string literals concatenate: rescued by rung 5, in linear time.
        pytest.param('{"a": ' + "\"'" * (MB // 2), Rung.PYTHON_LITERAL, id="mixed-quotes"),
    ],
)
def test_a_megabyte_of_arguments_works(raw: str, expected: Rung | None) -> None:
    result = parse_arguments(raw, ALLOWED)
    assert (None if result is None else result.rung) is expected
    strict = parse_arguments(raw, STRICT)
    assert (strict is not None) is (expected is Rung.STRICT)
