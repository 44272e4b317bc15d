"""Opening one attempt's request, and cancelling a kept response: the client's HTTP.

:func:`open_stream` sends the turn's request (or, to resume, the request that streams a
kept response again) and returns the streaming response, or raises the typed error for
any answer that is not an event stream of the wire (one place for the client:
:mod:`~railings.transport.errors_map` maps what httpx2 raises). :func:`cancel_kept`
cancels a kept response nobody will read. Both requests go below the request URL's path
(:meth:`~railings.providers.base.Resumption.below`), never into its query string (Azure
OpenAI's ``?api-version=``), and never where a redirect points.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx2

from railings.errors import (
    ConfigurationError,
    MalformedStream,
    PoolTimeout,
    RailingsError,
    TotalTimeout,
)
from railings.providers import spec
from railings.providers.base import Resumption
from railings.redact import redact
from railings.transport.body import backstop
from railings.transport.config import ClientConfig
from railings.transport.errors_map import BOUNDARY, error_from_response, map_exception
from railings.transport.idle import set_read_timeout
from railings.transport.response import is_event_stream, read_bounded, within

__all__ = ["cancel_kept", "open_stream"]

# How long cancelling a kept response nobody will read may take.
_CANCEL_WAIT = 10.0


async def cancel_kept(http: httpx2.AsyncClient, config: ClientConfig, response_id: str) -> None:
    """Cancel the kept response ``response_id`` (best effort, bounded: the turn's outcome
    does not depend on it)."""
    resumption = spec(config.provider).resumption
    if resumption is None:
        return
    url = resumption.below(config.url, resumption.cancel_path(response_id))
    request = http.build_request("POST", url, headers=config.request_headers())
    with contextlib.suppress(*BOUNDARY, TimeoutError, RailingsError):
        deadline = asyncio.get_running_loop().time() + _CANCEL_WAIT
        response = await within(http.send(request), deadline)
        await response.aclose()


async def open_stream(
    http: httpx2.AsyncClient,
    cfg: ClientConfig,
    body: dict[str, Any],
    resume_path: str | None = None,
    *,
    own_pool: bool = True,
) -> tuple[httpx2.Response, float | None]:
    """Send ``body`` (``resume_path``: read a kept response again instead); return the
    streaming response and the attempt's deadline. Raises the typed error for anything
    but an event stream. ``own_pool``: the pool is the client's, so a pool timeout can
    name ``max_connections``."""
    total = cfg.timeouts.total
    deadline = asyncio.get_running_loop().time() + total if total else None
    headers = cfg.request_headers()
    if resume_path is None:
        request = http.build_request("POST", cfg.url, json=body, headers=headers)
    else:
        headers.pop("content-type", None)
        request = http.build_request("GET", Resumption.below(cfg.url, resume_path), headers=headers)
    try:
        response = await within(http.send(request, stream=True), deadline)
    except TimeoutError as exc:  # before BOUNDARY: TimeoutError is an OSError
        raise TotalTimeout(f"total timeout of {total:g} s passed before the response") from exc
    except BOUNDARY as exc:
        mapped = map_exception(exc)
        if isinstance(mapped, PoolTimeout) and own_pool:
            mapped = PoolTimeout(
                f"{mapped.message}: more turns in flight than max_connections="
                f"{cfg.max_connections} (pool timeout {cfg.timeouts.pool} s)",
                seconds=cfg.timeouts.pool,
                max_connections=cfg.max_connections,
            )
        raise mapped from exc
    status = response.status_code
    ctype = response.headers.get("content-type", "")
    wire = spec(cfg.provider)
    wanted = wire.content_types
    # A wire with a whole-body form (Gemini without ``alt=sse``: one JSON array) is
    # read by the reader too, its proof the same.
    readable = (*wanted, "application/json") if wire.whole_body is not None else wanted
    if is_event_stream(response, readable):
        set_read_timeout(request.extensions, backstop(cfg.timeouts))
        return response, deadline
    data = await read_bounded(response)
    if 300 <= status < 400:
        where = redact(response.headers.get("location", "nowhere"))
        raise ConfigurationError(
            f"HTTP {status}: the endpoint redirects to {where}; railings follows no "
            "redirect, so the key and the conversation stay with the origin configured: "
            "set the base URL to where the API is"
        )
    if status >= 300 or b'"error"' in data:
        raise error_from_response(
            status,
            response.headers,
            data,
            key_variable=cfg.key_variable,
            has_key=bool(cfg.api_key),
        )
    raise MalformedStream(
        f"expected a streamed answer ({' or '.join(wanted)}), got {ctype or 'no content type'}"
    )
