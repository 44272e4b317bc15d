"""The output limit: what a request asked for, and when a turn's billed output reached it.

Theory of operation. Providers stop generating exactly at the requested limit, so
billed output that reaches it is hard evidence that the output limit cut the turn,
whatever stop reason the wire claims (vLLM reports ``tool_calls`` for turns its
``max_tokens`` cut). The verdict (:mod:`railings.turn.verdict`) and the stop-reason
derivation (:mod:`railings.turn.stop_reason`) read the evidence through
:func:`reached_limit`; the shells pass the limit in: ``replay --max-tokens``, the
client (the limit of the body it sent, :func:`requested_limit`), ``inspect(...,
max_tokens=)``, the integrations and the gateway (the limit of the client's request).

Every wire spells the limit its own way; :func:`requested_limit` reads each spelling
from a request body, whichever wire it is for:

=============================================  ==============================
field                                          wire
=============================================  ==============================
``max_tokens``                                 Chat Completions, Messages
``max_completion_tokens``                      Chat Completions (reasoning models)
``max_output_tokens``                          Responses
``generationConfig.maxOutputTokens``           Gemini (``generation_config.max_output_tokens``
                                               in the SDKs' snake case)
``inferenceConfig.maxTokens``                  Bedrock ConverseStream
``options.num_predict``                        Ollama (-1 and -2: no limit)
=============================================  ==============================

The Gemini API parses proto JSON, which accepts either name at each level, so
``generationConfig.max_output_tokens`` and ``generation_config.maxOutputTokens`` are
read too. A value is read as :func:`~railings.wire._json.as_count` reads a count: an
integer, an integral float (``64.0``) or a string of digits (``"64"``: proto3 JSON's
spelling of an integer, which pydantic servers such as vLLM coerce as well); a boolean
never. A body that carries several (``max_tokens`` beside ``max_completion_tokens``) is
bounded by the tightest. A value that is not a positive count is no limit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from railings.wire._json import as_count

__all__ = ["MAX_PARSED_BODY", "limit_in_body", "reached_limit", "requested_limit"]

# The largest request body :func:`limit_in_body` parses (a larger one: no limit known).
MAX_PARSED_BODY = 8 * 2**20

# (path into the body) for every spelling of the output limit (module table).
_SPELLINGS: tuple[tuple[str, ...], ...] = (
    ("max_tokens",),
    ("max_completion_tokens",),
    ("max_output_tokens",),
    ("generationConfig", "maxOutputTokens"),
    ("generationConfig", "max_output_tokens"),
    ("generation_config", "maxOutputTokens"),
    ("generation_config", "max_output_tokens"),
    ("inferenceConfig", "maxTokens"),
    ("options", "num_predict"),
)


def requested_limit(body: Mapping[str, Any]) -> int | None:
    """The output limit a request body asks for, in any wire's spelling (module table);
    None when it sets none."""
    found: list[int] = []
    for path in _SPELLINGS:
        value: Any = body
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        count = as_count(value)
        if count is not None and count > 0:
            found.append(count)
    return min(found) if found else None


def limit_in_body(data: bytes) -> int | None:
    """The output limit of a request body as sent (JSON bytes), in any wire's spelling;
    None when it sets none, is not a JSON object, or is larger than
    :data:`MAX_PARSED_BODY`. What a proxy in front of a provider (the guard, the gateway)
    passes to the reader, so that the verdict knows the limit the request asked for."""
    if not data or len(data) > MAX_PARSED_BODY:
        return None
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return requested_limit(body) if isinstance(body, dict) else None


def reached_limit(output_tokens: int | None, max_tokens: int | None) -> bool:
    """True when the billed output reached the requested limit: the output limit cut
    the turn (the module docstring). Without either number there is no evidence."""
    return (
        max_tokens is not None
        and max_tokens > 0
        and output_tokens is not None
        and output_tokens >= max_tokens
    )
