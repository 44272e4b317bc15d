"""The httpx2, httpcore2 and h11 versions whose private names railings was verified on.

:mod:`.bulk` replaces a private method of httpcore2's HTTP/1.1 connection, reached through
private attributes of httpx2's and httpcore2's streams, and :mod:`.chunks` replaces h11's
private chunked reader and re-implements its chunk-footer check. No public API covers
either, and a release may change them without notice. So they are used only on the exact
versions of :data:`VERIFIED`, the ones ``tests/test_transport_read_path.py``,
``tests/test_transport_chunks.py`` and the ``http_chunks`` fuzz campaign were run on,
checked once, at import (:data:`MATCHES`). On any other version the client's default
transport holds httpx2's own ``AsyncHTTPTransport`` (:func:`.shards.pooled`), and
:func:`.bulk.install` leaves every connection as httpcore2 made it. To verify a new
release: run the suite with it installed, then update the table.

Every other place that touches a private name of these libraries asks :func:`matches`
for the versions its own tests ran on: the guard's HTTP/1.1 read adapter
(:mod:`.guarded`), :func:`railings.guard.install` (a built client's transports) and the
gateway's ``--network asyncio`` pool (:mod:`railings.gateway.upstream`).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping

__all__ = ["MATCHES", "VERIFIED", "installed", "matches"]

VERIFIED = {"httpx2": "2.16.2", "httpcore2": "2.16.2", "h11": "0.16.0"}


def installed(name: str) -> str | None:
    """The installed version of the distribution ``name``, None if it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def matches(versions: Mapping[str, str] = VERIFIED) -> bool:
    """True when every distribution of ``versions`` (by default :data:`VERIFIED`) is
    installed at its version."""
    return all(installed(name) == version for name, version in versions.items())


MATCHES = matches()
"""Whether the bulk read path may be used in this process: :func:`matches`, at import."""
