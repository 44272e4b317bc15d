"""What a client keeps beyond one turn, in one object the application owns.

Below the transport nothing holds process state: the attempt machine, the
decoders and the turn get everything they need as arguments. The few things
that must outlive a turn sit in a :class:`ClientContext`, handed to the client:

* ``fallback``: the sticky HTTP/2 -> HTTP/1.1 flag (:mod:`.fallback`);
* ``banner``: the retry banner that transparent retries publish to (:mod:`.banner`);
* ``zero_waits``: the testing switch, which zeroes every retry wait.

A client built without one uses :data:`DEFAULT_CONTEXT`, the documented
process-wide default: its banner is :data:`~.banner.BANNER` (the terminal has one
status line), its flag :data:`~.fallback.FALLBACK` (one protocol crash, and the
process stays on HTTP/1.1), and :func:`set_testing` / :func:`no_waits` flip its
switch. An application that wants clients kept apart (a server with one client
per tenant, a test that must not see another's fallback) gives each its own
``ClientContext()``: a fresh flag, the switch off, and the process's banner
unless it names another.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from railings.transport.banner import BANNER, RetryBanner
from railings.transport.fallback import FALLBACK, Http2Fallback

__all__ = ["DEFAULT_CONTEXT", "ClientContext", "no_waits", "set_testing"]


class ClientContext:
    """The state clients share beyond one turn; see the module docstring."""

    __slots__ = ("banner", "fallback", "zero_waits")

    def __init__(
        self,
        *,
        fallback: Http2Fallback | None = None,
        banner: RetryBanner | None = None,
        zero_waits: bool = False,
    ) -> None:
        self.fallback = Http2Fallback() if fallback is None else fallback
        self.banner = BANNER if banner is None else banner
        self.zero_waits = zero_waits

    @contextmanager
    def no_waits(self) -> Iterator[None]:
        """``with context.no_waits():`` zeroes the retry waits of its clients inside the block."""
        before = self.zero_waits
        self.zero_waits = True
        try:
            yield
        finally:
            self.zero_waits = before


DEFAULT_CONTEXT = ClientContext(fallback=FALLBACK, banner=BANNER)


def set_testing(on: bool) -> None:
    """Zero every retry wait of the clients on :data:`DEFAULT_CONTEXT` (for test suites)."""
    DEFAULT_CONTEXT.zero_waits = on


@contextmanager
def no_waits() -> Iterator[None]:
    """``with no_waits():`` zeroes retry waits on :data:`DEFAULT_CONTEXT` inside the block."""
    with DEFAULT_CONTEXT.no_waits():
        yield
