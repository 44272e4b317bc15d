"""The idle gap as a socket read timeout: zero cost per chunk, and any byte counts.

httpx2 hands the request's ``timeout`` extension down to httpcore2, which reads
the ``read`` entry when it starts waiting for the response headers, and again
when it starts reading the body (HTTP/1.1), or on every read (HTTP/2). So the
same request first waits ``first_byte`` for its headers; once they are in,
:func:`arm_idle` lowers ``read`` to the idle gap for the body. A read timeout
while streaming then means exactly "no byte for ``idle`` seconds": comment
keep-alives, pings and half an event all count, because the timer is the
socket's. Nothing runs per chunk, which is why the guard can afford it.

Lowering it mid-body, as the guard does at the first content, reaches an HTTP/1.1
body only through the guard's read adapter (:func:`.guarded.follow_read_timeout`),
used on the httpx2 / httpcore2 versions the suite verified; elsewhere the guard
leaves the request's read timeout as it is.
"""

from __future__ import annotations

from typing import Any

__all__ = ["arm_idle", "set_read_timeout"]


def arm_idle(extensions: dict[str, Any], idle: float | None) -> float | None:
    """Set the read timeout of a request whose headers arrived to ``idle`` seconds.

    Only ever lowers it: a caller's shorter read timeout stays in force. Returns
    the gap now in force while the body streams (None: no limit). The dict is
    changed in place, because httpcore2 holds the same object.
    """
    timeouts = extensions.get("timeout")
    if not isinstance(timeouts, dict):
        return None
    current = timeouts.get("read")
    if idle is None or (current is not None and current <= idle):
        return current if isinstance(current, (int, float)) else None
    timeouts["read"] = idle
    return idle


def set_read_timeout(extensions: dict[str, Any], seconds: float | None) -> None:
    """Set the read timeout of a request in flight (the same in-place change)."""
    timeouts = extensions.get("timeout")
    if isinstance(timeouts, dict):
        timeouts["read"] = seconds
