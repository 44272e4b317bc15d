"""The public switch for railings' accelerations: every fast path, on (the default) or off.

An acceleration is an optional layer beside a plain path that is the specification; a
differential test holds the two equal, and CI runs the whole suite both ways
(``make test`` and ``make test-plain``). The accelerations:

* the reader's fast path and its block templates (:mod:`railings.turn.fastpath`,
  :mod:`railings.turn.template`): off, a :class:`~railings.turn.reader.StreamReader` reads
  every byte through its framer, decoder and assembler, nothing else;
* the client's default HTTP transport (:mod:`railings.transport.shards`): a pool split into
  shards whose HTTP/1.1 connections hand up every body chunk received in one step
  (:mod:`railings.transport.bulk`, :mod:`railings.transport.chunks`). Off, the client uses
  httpx2's own ``AsyncHTTPTransport``, one pool. The bulk read path also needs the exact
  httpx2, httpcore2 and h11 versions the suite verified
  (:data:`railings.transport.verified.VERIFIED`); on any other, the shards hold httpx2's
  own transports.

``RAILINGS_ACCELERATE=0`` (also ``false``, ``no``, ``off``) turns them off for the process;
it is read once, when railings is imported. A value that is none of the usual spellings
of yes and no leaves them on and warns (a ``RuntimeWarning`` naming the variable), as an
invalid setting in the environment should not stop every program that imports railings;
the ``railings`` command refuses it instead (one line, exit 2). In Python,
:func:`set_enabled` does the same
and :func:`override` does it for a ``with`` block (tests, benchmarks). A reader is told
per instance with ``StreamReader(..., fast=False)``; a client reads the switch when it
builds its transport. A reader or client made before a change keeps its path.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from railings.errors import ConfigurationError
from railings.turn.switch import SWITCH

__all__ = [
    "ENVIRONMENT",
    "enabled",
    "environment_error",
    "from_environment",
    "override",
    "set_enabled",
]

ENVIRONMENT = "RAILINGS_ACCELERATE"
_OFF = frozenset({"0", "false", "no", "off"})
_ON = frozenset({"", "1", "true", "yes", "on"})


def from_environment(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``RAILINGS_ACCELERATE`` leaves the accelerations on (unset: on); any value
    but the usual spellings of yes and no raises :class:`~railings.errors.ConfigurationError`,
    so a misspelt switch is not silently ignored."""
    value = environ.get(ENVIRONMENT, "").strip().lower()
    if value in _OFF:
        return False
    if value in _ON:
        return True
    raise ConfigurationError(
        f"{ENVIRONMENT}={environ[ENVIRONMENT]!r}: expected 0 or 1 (or false/true, no/yes, off/on)"
    )


def enabled() -> bool:
    """True while the accelerations are on for what is made from now on."""
    return SWITCH.on


def set_enabled(on: bool) -> None:
    """Turn every acceleration on or off for the readers and clients made from now on."""
    SWITCH.on = bool(on)


@contextmanager
def override(on: bool) -> Iterator[None]:
    """The accelerations on or off inside the ``with`` block, as they were after it. The
    switch is the process's: meant for tests and benchmarks, not for concurrent code that
    wants both."""
    before = SWITCH.on
    SWITCH.on = bool(on)
    try:
        yield
    finally:
        SWITCH.on = before


def environment_error(environ: Mapping[str, str] = os.environ) -> str | None:
    """What is wrong with ``RAILINGS_ACCELERATE``, or None when it is unset or valid."""
    try:
        from_environment(environ)
    except ConfigurationError as exc:
        return exc.message
    return None


def _at_import() -> bool:
    problem = environment_error()
    if problem is None:
        return from_environment()
    if not _the_command():  # the command says it itself, in one line (railings.cli.main)
        warnings.warn(f"{problem}; the accelerations stay on", RuntimeWarning, stacklevel=2)
    return True


def _the_command() -> bool:
    """Is this process the ``railings`` command (its script, or ``python -m railings``)?"""
    program = sys.argv[0] if sys.argv else ""
    name = os.path.basename(program)
    return name == "railings" or program.endswith(os.path.join("railings", "__main__.py"))


SWITCH.on = _at_import()  # once, at import (railings/__init__.py imports this module)
