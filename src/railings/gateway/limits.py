"""The gateway's bounds on what it holds for its clients and reads from its upstream.

Every byte the gateway keeps in memory is bounded, as nginx and Envoy bound theirs:

* ``max_request_body``: one request body (nginx ``client_max_body_size``). Past it,
  or announced past it by ``content-length``: **413**.
* ``body_timeout``: the longest wait between two pieces of a request body (nginx
  ``client_body_timeout``). A client that stalls mid-body gets **408** and the
  connection is closed, so a stalled body is never held longer than this.
* ``min_body_rate``: the slowest a request body may arrive, in bytes per second,
  measured over each ``body_timeout`` (Apache mod_reqtimeout's ``MinRate``, per window
  so that a fast start buys no slow end). A body that trickles slower gets **408**
  too: a client that sends a byte now and then, just inside ``body_timeout``, cannot
  keep its bytes counted against ``max_buffered`` for as long as it likes.
* ``max_buffered``: request bytes held at once by the whole process, all clients
  together (a body is held until its call ends: a resend sends it again). A body
  that would pass it gets **503** with ``retry-after``: the process is full, not the
  request wrong, as Envoy's overload manager answers when a resource runs out.
* ``max_answer``: one non-streamed answer, counted decoded (a gzip answer of a few
  hundred kilobytes can inflate to gigabytes). Past it: **502**, never half a body.

:class:`Budget` is ``max_buffered``'s counter, one per app.
"""

from __future__ import annotations

from dataclasses import dataclass

from railings.errors import ConfigurationError

__all__ = ["Budget", "Limits", "describe"]

MiB = 2**20


@dataclass(frozen=True, slots=True)
class Limits:
    """The gateway's bounds (see the module docstring): bytes, seconds for
    ``body_timeout`` and bytes per second for ``min_body_rate``."""

    max_request_body: int = 64 * MiB
    body_timeout: float = 30.0
    min_body_rate: int = 500
    max_buffered: int = 256 * MiB
    max_answer: int = 32 * MiB

    def __post_init__(self) -> None:
        for name in ("max_request_body", "max_buffered", "max_answer"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be at least 1 byte")
        if self.min_body_rate < 0:
            raise ConfigurationError(f"min_body_rate must be 0 or more, not {self.min_body_rate}")
        if not self.body_timeout > 0:
            raise ConfigurationError(f"body_timeout must be positive, not {self.body_timeout!r}")


class Budget:
    """The request bytes the process holds, against ``cap`` (single-threaded: the
    event loop's)."""

    __slots__ = ("cap", "held")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.held = 0

    def take(self, size: int) -> bool:
        """Hold ``size`` more bytes; False (nothing taken) when that would pass the cap."""
        if self.held + size > self.cap:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        """Release ``size`` bytes taken before."""
        self.held -= size


def describe(size: int) -> str:
    """``size`` bytes for a message: in MiB when whole, else in bytes."""
    return f"{size // MiB} MiB" if size % MiB == 0 else f"{size} bytes"
