"""The public accelerations switch: what it reads, and that every acceleration obeys it."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import railings
from railings import ConfigurationError, StreamReader, accelerations
from railings.turn.fastpath import FastStreamReader

BODY = (
    b'data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
    b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"b"}}]}\n\n'
    b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


@pytest.mark.parametrize(
    ("value", "on"),
    [
        *[(None, True), ("", True), ("1", True), ("yes", True), ("ON", True)],
        *[("0", False), ("false", False), (" off ", False), ("No", False)],
    ],
)
def test_the_environment_variable_spellings(value: str | None, on: bool) -> None:
    environ = {} if value is None else {accelerations.ENVIRONMENT: value}
    assert accelerations.from_environment(environ) is on


def test_a_misspelt_value_is_refused_not_ignored() -> None:
    with pytest.raises(ConfigurationError, match="RAILINGS_ACCELERATE='maybe'"):
        accelerations.from_environment({"RAILINGS_ACCELERATE": "maybe"})


@pytest.mark.parametrize(("value", "kind"), [("0", "StreamReader"), ("1", "FastStreamReader")])
def test_the_variable_is_read_when_railings_is_imported(value: str, kind: str) -> None:
    code = (
        "import railings; "
        "print(railings.accelerations.enabled(), type(railings.StreamReader()).__name__)"
    )
    env = {**os.environ, "RAILINGS_ACCELERATE": value}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == [str(value == "1"), kind]


def test_the_switch_chooses_the_reader_made_from_then_on() -> None:
    before = accelerations.enabled()
    with accelerations.override(False):
        assert not accelerations.enabled()
        plain = StreamReader("openai")
        with accelerations.override(True):
            fast = StreamReader("openai")
    assert accelerations.enabled() is before
    assert (type(plain), type(fast)) == (StreamReader, FastStreamReader)
    assert not plain.accelerated and fast.accelerated
    assert isinstance(fast, StreamReader)
    try:
        accelerations.set_enabled(False)
        assert type(railings.StreamReader()) is StreamReader
    finally:
        accelerations.set_enabled(before)


@pytest.mark.parametrize("on", [False, True])
def test_a_reader_asked_for_a_path_gets_it_whatever_the_switch(on: bool) -> None:
    with accelerations.override(on):
        assert type(StreamReader("openai", fast=False)) is StreamReader
        assert type(StreamReader("openai", fast=True)) is FastStreamReader
        assert type(FastStreamReader("openai")) is FastStreamReader


@pytest.mark.parametrize("fast", [False, True])
def test_both_readers_read_the_same_and_copies_keep_their_path(fast: bool) -> None:
    reader = StreamReader("openai", fast=fast)
    events = reader.feed(BODY[:100])
    for twin in (pickle.loads(pickle.dumps(reader)), copy.deepcopy(reader)):
        assert type(twin) is type(reader)
        with accelerations.override(not fast):  # a copy is made by the original's path
            assert type(pickle.loads(pickle.dumps(reader))) is type(reader)
    events += reader.feed(BODY[100:]) + reader.close()
    assert [getattr(e, "text", None) for e in events if type(e).__name__ == "TextDelta"] == [
        "a",
        "b",
    ]
    assert reader.turn().text == "ab"


def test_the_plain_reader_runs_no_code_of_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every method the fast layer adds or overrides, broken: the plain reader never calls one.
    for name, member in vars(FastStreamReader).items():
        if callable(member) and not name.startswith("__"):
            monkeypatch.setattr(FastStreamReader, name, _broken)
    reader = StreamReader("openai", fast=False)
    reader.feed(BODY)
    reader.close()
    assert reader.turn().text == "ab"


def _broken(*_: object, **__: object) -> object:
    raise AssertionError("the fast path ran")


def test_a_misspelt_switch_warns_and_leaves_the_accelerations_on() -> None:
    env = {**os.environ, "RAILINGS_ACCELERATE": "maybe"}
    code = "import railings; print(railings.accelerations.enabled())"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.split() == ["True"]
    assert "RuntimeWarning: RAILINGS_ACCELERATE='maybe'" in done.stderr


def test_the_command_refuses_a_misspelt_switch_in_one_line() -> None:
    script = Path(sys.executable).with_name("railings")
    env = {**os.environ, "RAILINGS_ACCELERATE": "maybe"}
    done = subprocess.run([str(script), "--help"], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "railings: RAILINGS_ACCELERATE='maybe': expected 0 or 1 (or false/true, no/yes, off/on)"
    ]
