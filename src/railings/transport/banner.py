"""The retry banner: what a status bar shows while a transparent retry waits.

One process-level observer by default (:data:`BANNER`), on purpose: the
terminal has one status line, and whoever draws it subscribes here instead of
threading a callback through every layer. A client publishes to the banner of
its context (:mod:`.context`), which is :data:`BANNER` unless it names another.
Work flagged ``background`` (a sub-agent, a prefetch) never publishes, so its
retries cannot light up the foreground bar.

The state says which attempt comes next (*n of N*), the whole seconds left
before it starts (a countdown, republished every second) and why. When the
wait ends, the banner is cleared (``None``).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["BANNER", "BannerState", "RetryBanner", "countdown"]


@dataclass(frozen=True, slots=True)
class BannerState:
    """Attempt ``attempt`` of ``attempts`` starts in ``seconds`` s, because of ``reason``.

    ``resume_at`` is the :func:`time.monotonic` instant it starts, for a view
    that redraws faster than once a second. ``resuming``: what follows reads a kept
    response again (nothing is sent twice), not a retry of the request.
    """

    attempt: int
    attempts: int
    seconds: int
    reason: str
    resume_at: float
    resuming: bool = False

    @property
    def doing(self) -> str:
        """What the countdown leads to, as a status line says it."""
        return "resuming" if self.resuming else "retrying"

    def __str__(self) -> str:
        verb = "resume" if self.resuming else "retry"
        return f"{verb} {self.attempt}/{self.attempts} in {self.seconds} s: {self.reason}"


Listener = Callable[["BannerState | None"], None]


class RetryBanner:
    """The process-level banner. ``state`` is what to show now (None: nothing)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._state: BannerState | None = None
        self._owner: object | None = None

    @property
    def state(self) -> BannerState | None:
        """What the banner shows now; None while no retry waits."""
        return self._state

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` on every change; returns the function that unsubscribes."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def publish(self, state: BannerState, owner: object) -> None:
        """Show ``state`` on behalf of ``owner`` (the wait that will :meth:`clear` it) and tell
        every listener; a later publish by another owner takes the banner over."""
        with self._lock:
            self._state, self._owner = state, owner
            listeners = list(self._listeners)
        for listener in listeners:
            listener(state)

    def clear(self, owner: object) -> None:
        """Clear the banner, unless another retry has taken it over since."""
        with self._lock:
            if self._owner is not owner:
                return
            self._state, self._owner = None, None
            listeners = list(self._listeners)
        for listener in listeners:
            listener(None)


BANNER = RetryBanner()


async def countdown(
    seconds: float,
    *,
    attempt: int,
    attempts: int,
    reason: str,
    background: bool,
    banner: RetryBanner = BANNER,
    resuming: bool = False,
) -> None:
    """Sleep ``seconds``, publishing the countdown once per whole second (foreground only);
    ``resuming``: a kept response is read again after it (:class:`BannerState`)."""
    if background:
        if seconds > 0:
            await asyncio.sleep(seconds)
        return
    owner = object()
    resume_at = time.monotonic() + seconds
    try:
        while True:
            left = resume_at - time.monotonic()
            banner.publish(
                BannerState(
                    attempt, attempts, max(0, math.ceil(left)), reason, resume_at, resuming
                ),
                owner,
            )
            if left <= 0:
                break
            # Wake on the next whole-second boundary of the countdown.
            await asyncio.sleep(left - math.floor(left - 1e-9) if left > 1 else left)
    finally:
        banner.clear(owner)
