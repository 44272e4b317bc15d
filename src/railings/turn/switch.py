"""Whether railings' accelerations are on: the process's default, as the core reads it.

An acceleration is an optional layer beside a plain path that is the specification (the
reader's fast path, the client's HTTP/1.1 read path): :mod:`railings.accelerations` is the
public switch, and it alone sets this one (from ``RAILINGS_ACCELERATE``, once, when
railings is imported, and through its functions), since the sans-IO core reads no
environment. The core only reads it, when a :class:`~railings.turn.reader.StreamReader` is
made without saying which path it wants.
"""

from __future__ import annotations

__all__ = ["SWITCH", "Switch"]


class Switch:
    """One process-wide flag: ``on`` (the default) or off. No lock: a bool is assigned whole,
    and a reader reads it once, when it is made."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = True


SWITCH = Switch()
