"""A pytest plugin for the SDKs' own suites: every client they build is guarded.

Loaded with ``-p railings_guard_everywhere`` (this folder on ``PYTHONPATH``). It
wraps ``__init__`` of the ``openai`` and ``anthropic`` base clients (sync and
async, so every client class: ``OpenAI``, ``AzureOpenAI``, ``Anthropic``,
``AnthropicBedrock`` ...) to call :func:`railings.guard.install` on the new
client as its last step: the httpx2 client it holds, built by the SDK or handed
in by the test, is guarded in place, transport and every mount.

``RAILINGS_SUITE_COUNTS`` names a folder where each test process writes how many
clients it guarded, how many streams the guard watched, and, per test, what the
guard said where it raised or attached a verdict (the evidence in the report).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
from typing import Any

import railings.guard
import railings.transport.guarded as guarded
import railings.transport.watch as watch
from railings.errors import ConfigurationError

COUNTS = {"clients": 0, "not_httpx2": 0, "streams": 0}
VERDICTS: dict[str, list[str]] = {}


def _said(message: str) -> None:
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
    said = VERDICTS.setdefault(test, [])
    if message not in said and len(said) < 5:
        said.append(message)


def _record(name: str) -> None:
    method = getattr(watch.StreamWatch, name)

    @functools.wraps(method)
    def recorded(self: Any, *args: Any) -> Any:
        result = method(self, *args)
        if result is not None:
            _said(getattr(result.__cause__, "message", None) or getattr(result, "message", ""))
        return result

    setattr(watch.StreamWatch, name, recorded)


for _name in ("refused", "take", "ended", "broke"):
    _record(_name)


def _guard_after(init: Any) -> Any:
    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        try:
            railings.guard.install(self)
        except ConfigurationError:  # a legacy httpx (not httpx2) client: nothing to wrap
            COUNTS["not_httpx2"] += 1
        else:
            COUNTS["clients"] += 1

    return __init__


def _count_streams(cls: Any) -> None:
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        COUNTS["streams"] += 1
        init(self, *args, **kwargs)

    cls.__init__ = __init__


for _sdk in ("openai", "anthropic"):
    try:
        _base = importlib.import_module(f"{_sdk}._base_client")
    except ImportError:
        continue
    for _name in ("SyncAPIClient", "AsyncAPIClient"):
        _cls = getattr(_base, _name)
        _cls.__init__ = _guard_after(_cls.__init__)

_count_streams(guarded.GuardStream)
_count_streams(guarded.AsyncGuardStream)


def pytest_sessionfinish(session: Any) -> None:
    folder = os.environ.get("RAILINGS_SUITE_COUNTS")
    if folder:
        with open(os.path.join(folder, f"{os.getpid()}.json"), "w") as out:
            json.dump({**COUNTS, "verdicts": VERDICTS}, out)
