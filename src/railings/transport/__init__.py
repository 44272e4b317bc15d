"""Streaming HTTP to OpenAI-compatible (Chat Completions, Responses), Anthropic, Gemini,
Bedrock ConverseStream and Ollama endpoints: the only network code.

::

    from railings.messages import System, User
    from railings.transport import AsyncProviderClient, ClientConfig

    config = ClientConfig(provider="anthropic", model="claude-sonnet-4-5", max_tokens=2048)
    async with AsyncProviderClient(config) as client:
        stream = client.stream_turn([System("Be brief."), User("Hi")])
        async for event in stream:
            ...                                   # railings.events, live
        turn = stream.turn                        # proven COMPLETE, or PARTIAL + interrupted

Layers: :mod:`.config` (endpoint, key, timeouts), :mod:`.errors_map` (every
foreign exception and HTTP status -> railings errors), :mod:`.retry` (policy,
full jitter), :mod:`.banner` (the retry banner), :mod:`.fallback` (HTTP/2 ->
HTTP/1.1), :mod:`.context` (what outlives a turn: the fallback flag, the banner,
the testing switch), :mod:`.idle` (the idle gap as a read timeout), :mod:`.gaps`
(the connection and content clocks), :mod:`.machine` (the sans-IO attempt
machine: finish, retry, replay, raise), :mod:`.body` (the reads of one attempt's
body), :mod:`.client` (drives the machine), :mod:`.stream` (``TurnStream``),
:mod:`.sync` (the blocking facade), :mod:`.sigv4` (Bedrock's SigV4 by botocore's
signer, the ``bedrock`` extra). The guard's layers: :mod:`.coding` (content codings
as httpx2 undoes them), :mod:`.watch` (one watched stream, bounded), :mod:`.guarded`
(its sync and async byte streams).
"""

from __future__ import annotations

from railings.transport.banner import BANNER, BannerState, RetryBanner
from railings.transport.client import AsyncProviderClient
from railings.transport.config import DEFAULT_BASE_URLS, ClientConfig, Timeouts
from railings.transport.context import DEFAULT_CONTEXT, ClientContext
from railings.transport.errors_map import error_from_response, parse_retry_after
from railings.transport.fallback import FALLBACK, Http2Fallback, http2_failure
from railings.transport.retry import DEFAULT_ON, RetryPolicy, backoff, no_waits, set_testing
from railings.transport.stream import RetryRecord, TurnStream
from railings.transport.sync import ProviderClient, SyncTurnStream

__all__ = [
    "BANNER",
    "DEFAULT_BASE_URLS",
    "DEFAULT_CONTEXT",
    "DEFAULT_ON",
    "FALLBACK",
    "AsyncProviderClient",
    "BannerState",
    "ClientConfig",
    "ClientContext",
    "Http2Fallback",
    "ProviderClient",
    "RetryBanner",
    "RetryPolicy",
    "RetryRecord",
    "SyncTurnStream",
    "Timeouts",
    "TurnStream",
    "backoff",
    "error_from_response",
    "http2_failure",
    "no_waits",
    "parse_retry_after",
    "set_testing",
]
