"""One line read on the main thread, with readline, that SIGINT and SIGTERM interrupt.

CPython's readline waits in ``select()`` and looks at signals only when one
interrupts that wait: a signal that arrives just before (the prompt drawn, the wait
not begun) or while a key is handled is noted, and its Python handler runs only when
the next signal interrupts the wait. A person who presses Ctrl-C once would see
nothing happen. So while a line is read, the signals are also written to a pipe of
our own (``signal.set_wakeup_fd``), and a thread sends each one again to the main
thread every ``REPEAT`` seconds until the read has ended: one of them finds readline
waiting, and the first one's handler runs. The handlers raise once, whichever
arrives first; the repeats after that do nothing.

A signal that came just before the read's handlers were in place ran the caller's
handler instead; ``interrupted`` lets the caller say so. The loop's own wakeup
descriptor and handlers are put back when the read ends; a signal read here does
not reach the loop (a caller hands SIGTERM on itself).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from collections.abc import Callable
from types import FrameType

__all__ = ["REPEAT", "Stop", "read_here"]

REPEAT = 0.05  # seconds between repeats of a signal while readline has not seen it
STOPS = (signal.SIGINT, signal.SIGTERM)


class Stop(Exception):
    """SIGTERM arrived while the line was read."""


def _repeat(read_end: int, done: threading.Event, main: int) -> None:
    """Send each signal noted on ``read_end`` to ``main`` until ``done``."""
    seen: set[int] = set()
    while not done.is_set():
        if seen:
            for signum in seen:
                signal.pthread_kill(main, signum)
            if done.wait(REPEAT):
                return
        ready, _, _ = select.select([read_end], [], [], None if not seen else 0)
        if ready:
            seen.update(b for b in os.read(read_end, 64) if b in STOPS)


def read_here(prompt: str, *, interrupted: Callable[[], bool] = lambda: False) -> str:
    """``input(prompt)`` on the main thread: SIGINT raises ``KeyboardInterrupt``,
    SIGTERM :class:`Stop`, even when readline would have waited on. ``interrupted()``
    is asked once this read's handlers are in place: a SIGINT the caller's own
    handler took just before (the question drawn, the read not begun) ends the
    read as one that arrives during it does."""
    raised = False

    def interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if raised:
            return  # a repeat of the signal already raised
        raised = True
        raise KeyboardInterrupt if signum == signal.SIGINT else Stop

    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # set_wakeup_fd's condition
    done = threading.Event()
    repeater = threading.Thread(
        target=_repeat,
        args=(read_end, done, threading.main_thread().ident),
        name="railings-signals",
        daemon=True,
    )
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    previous = {signum: signal.signal(signum, interrupt) for signum in STOPS}
    try:
        repeater.start()  # a signal that came before these handlers is handled by now
        if interrupted():
            raise KeyboardInterrupt
        return input(prompt)
    finally:
        done.set()
        with contextlib.suppress(BlockingIOError):
            os.write(write_end, b"\0")  # wakes the repeater's select
        repeater.join()  # no repeat is sent after this, and each one sent was handled
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(read_end)
        os.close(write_end)
