"""Running the gateway app on uvicorn: in the foreground (the CLI) or in a thread (tests).
Needs the ``gateway`` extra, which brings uvloop and httptools where they build
(CPython on Linux and macOS): uvicorn then runs on them, and does without them elsewhere.

The listening socket is bound first, so ``port=0`` gets a free port that is known
(and already accepting connections into the backlog) before the server starts.

The process the CLI runs is the gateway's own, so :func:`serve` also tunes its
garbage collector (:func:`tune_gc`): with a thousand streams open the heap holds
a few hundred thousand objects, most of them the suspended reads of the streams,
and each collection pauses every stream at once.
"""

from __future__ import annotations

import gc
import ipaddress
import logging
import socket
import threading
import time
from typing import Any

from railings._extras import require

__all__ = ["ServingThread", "bind", "is_loopback", "serve", "tune_gc", "url_of"]

_START_TIMEOUT = 30.0


def tune_gc(threshold: tuple[int, int, int] | None = None) -> None:
    """Set up the garbage collector of a process that serves the gateway (and nothing else).

    Everything alive now (the modules, the app, the server) is collected once and then
    frozen (:func:`gc.freeze`): it is never scanned again, so a full collection scans
    only what the open streams hold. ``threshold``, when given, is passed on to
    :func:`gc.set_threshold`; the default keeps CPython's (700, 10, 10), the best of
    those tried on uvloop (lower ones collected more often for more pause time in all:
    docs/GATEWAY.md). A process that embeds the app among other work can call this at
    its own startup, or not at all: it changes what each collection scans, never what
    it frees.
    """
    gc.collect()
    gc.freeze()
    if threshold is not None:
        gc.set_threshold(*threshold)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and every loopback address, never for a wildcard (``0.0.0.0``,
    ``::``) or another name: the rule behind the warning of every command that listens."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str = "127.0.0.1", port: int = 0, *, backlog: int = 2048) -> socket.socket:
    """A listening socket on ``host:port`` (``port=0``: a free one). Raises OSError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    """The base URL a listening socket serves, ``http://HOST:PORT``."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class _QuietAbort(logging.Filter):
    """uvicorn logs any exception an app raises with its traceback; an upstream that broke
    off a relayed body is an expected event, told in one line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        from railings.gateway.asgi import UpstreamBroke

        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, UpstreamBroke):
            record.msg = "upstream broke off a body: %s"
            record.args, record.exc_info = (error,), None
        return True


def _server(app: Any, **options: Any) -> Any:
    require("gateway", "uvicorn")
    import uvicorn

    logging.getLogger("uvicorn.error").addFilter(_QuietAbort())

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,  # a query string may carry a key: the gateway logs its own lines
        lifespan="on",
        timeout_graceful_shutdown=5,
        **options,
    )
    return uvicorn.Server(config)


def serve(app: Any, sock: socket.socket, *, gc_tuning: bool = True) -> None:
    """Serve ``app`` on ``sock`` until interrupted (SIGINT / SIGTERM); with ``gc_tuning``,
    the process's collector is tuned (:func:`tune_gc`) once the server is loaded."""
    server = _server(app)
    server.config.load()
    if gc_tuning:
        tune_gc()
    server.run(sockets=[sock])


class ServingThread:
    """``with ServingThread(app) as url:`` serves ``app`` on 127.0.0.1 in a thread;
    ``options`` go to ``uvicorn.Config`` (``loop="asyncio"``, say)."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
        self._sock = bind(host, port)
        self.url = url_of(self._sock)
        self._server = _server(app, **options)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def __enter__(self) -> str:
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the gateway did not start")
            time.sleep(0.01)
        return self.url

    def __exit__(self, *exc_info: object) -> None:
        self._server.should_exit = True
        self._thread.join(_START_TIMEOUT)
        self._sock.close()
