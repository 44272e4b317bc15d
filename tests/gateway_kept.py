"""Shared pieces of the gateway's tests of kept responses: a background Responses script,
a tap that has the scripted server cut each stream after a named event, a gateway runner
and readers of what the client and the journal got."""

from __future__ import annotations

import contextlib
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2

from railings.gateway import Gateway, app
from railings.gateway.serve import ServingThread
from railings.journal import Journal
from railings.testing import ScriptedServer
from railings.testing.raw import RawResponse, raw_request
from tests.gateway_kit import KEY, NO_WAITS

SCRIPT: dict[str, Any] = {
    "seed": 7,
    "chunk_size": 6,
    "turns": [
        {
            "thinking": "Two steps.",
            "text": "Resumed answers come back whole.",
            "tool_calls": [{"name": "lookup", "arguments": {"q": "background"}}],
        }
    ],
}
PATH = "/v1/responses"
AUTH = {"authorization": f"Bearer {KEY}"}
BACKGROUND = {"model": "m", "input": "Hi", "stream": True, "background": True}
RESUMES = "railings_gateway_resumes_total"


class CutTap(httpx2.AsyncBaseTransport):
    """httpx2's own transport; each stream request it carries takes the next of ``cuts``
    as ``x-railings-cut-after`` (the scripted server ends the stream after that event),
    and every request is kept."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.cuts: deque[int] = deque()
        self.requests: list[httpx2.Request] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if self.cuts and not request.url.path.endswith("/cancel"):
            request.headers["x-railings-cut-after"] = str(self.cuts.popleft())
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def seen(self) -> list[str]:
        """Each request as ``METHOD path?query``, and forget them."""
        out = [f"{r.method} {r.url.raw_path.decode()}" for r in self.requests]
        self.requests.clear()
        return out


@contextlib.contextmanager
def gateway(upstream: str, tmp: Path, **options: Any) -> Iterator[tuple[str, Gateway, CutTap]]:
    tap = CutTap()
    gw = app(upstream, transport=tap, retry=NO_WAITS, journal=tmp / "journal.sqlite3", **options)
    with ServingThread(gw) as url:
        yield url, gw, tap


def rows(tmp: Path) -> list[dict[str, Any]]:
    with Journal(tmp / "journal.sqlite3") as journal:
        (session,) = journal.sessions()
        return [e.data for e in journal.entries(session.id) if e.kind == "gateway_turn"]


def response_id(resp: RawResponse) -> str:
    found = re.search(rb'"id":"(resp_[^"]+)"', resp.body)
    assert found is not None, resp.body[:200]
    return found.group(1).decode()


def whole(server: ScriptedServer, rid: str) -> bytes:
    """The kept response's whole stream, as the server sends it again from event 0."""
    got = raw_request(server.url, f"{PATH}/{rid}?stream=true", method="GET", headers=AUTH)
    assert got.status == 200 and got.complete
    return got.body


def eventually(check: Callable[[], bool], wait: float = 10.0) -> bool:
    """``check()`` once it holds, or its last answer after ``wait`` seconds (a guard
    against a hang, not a measure: what follows the client's answer runs after it)."""
    deadline = time.monotonic() + wait
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)
    return check()
