"""The transport's error words, pinned: each must land in the retryable network category.

Keep in sync: these are the exact strings railings' transport and guard raise.
If one drifts, an interruption another library re-wraps as text stops being
retried automatically and becomes a hard failure.
"""

from __future__ import annotations

import httpx2

from railings.classify import (
    IDLE_MESSAGE,
    INTERRUPTED_MESSAGE,
    NON_RETRYABLE_PROVIDER_TYPES,
    classify_text,
)
from railings.errors import TransportError
from railings.transport.errors_map import map_stream_exception


def test_messages_are_pinned_verbatim() -> None:
    assert INTERRUPTED_MESSAGE == "stream ended without the provider's termination proof"
    assert IDLE_MESSAGE == "stream went idle: no data for {seconds:g} s while streaming"


def test_every_interruption_the_transport_raises_is_retryable_network_text() -> None:
    raised = [
        map_stream_exception(httpx2.ReadTimeout(""), empty=True, idle_seconds=30.0),
        map_stream_exception(httpx2.ReadError("reset"), empty=True, idle_seconds=None),
        map_stream_exception(
            httpx2.RemoteProtocolError("peer closed"), empty=True, idle_seconds=None
        ),
    ]
    texts = [str(e) for e in raised] + [INTERRUPTED_MESSAGE, IDLE_MESSAGE.format(seconds=2.5)]
    for text in texts:
        assert classify_text(text) is TransportError, text
        assert classify_text(f"APIConnectionError: {text.upper()}") is TransportError


def test_quota_is_not_retryable() -> None:
    assert "insufficient_quota" in NON_RETRYABLE_PROVIDER_TYPES
