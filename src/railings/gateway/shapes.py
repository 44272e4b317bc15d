"""Errors in each provider's own wire shape, so every client already knows how to fail.

The gateway never invents a protocol: when a stream cannot be passed on as the
provider's proven answer, the client gets the error event its SDK already raises
on, and for a non-streamed answer the error body it already reads.

* OpenAI Chat Completions: ``data: {"error": {"message", "type", "param", "code"}}``
  (the openai SDKs raise ``APIError`` on a chunk holding ``error``);
* Anthropic Messages: ``event: error`` with ``{"type": "error", "error": {"type",
  "message"}}`` (the anthropic SDKs raise on it);
* OpenAI Responses: ``event: error`` with ``{"type": "error", "code", "message",
  "param", "sequence_number"}`` (the next number of the stream), the documented
  ``ResponseErrorEvent``, plus the same fields as an ``error`` object: the openai
  SDKs raise ``APIError`` only for an event whose data holds ``error``, and read
  the flat fields into their event model otherwise (both parse this one).
"""

from __future__ import annotations

from railings.errors import ConfigurationError
from railings.providers import ErrorShapes, spec

__all__ = ["CUT_CODE", "INTERRUPTED_CODE", "error_body", "error_event", "judged"]

INTERRUPTED_CODE = "stream_interrupted"
CUT_CODE = "tool_call_cut_by_output_limit"


def judged(provider: str) -> bool:
    """True when the gateway judges this wire (it can answer in the wire's own shape)."""
    return spec(provider).error_shapes is not None


def _shapes(provider: str) -> ErrorShapes:
    shapes = spec(provider).error_shapes
    if shapes is None:
        raise ConfigurationError(f"the gateway does not judge {provider} streams")
    return shapes


def error_event(
    provider: str, code: str, message: str, *, sequence_number: int | None = None
) -> bytes:
    """One whole SSE event carrying the error (``code``: :data:`INTERRUPTED_CODE` or
    :data:`CUT_CODE`), ended by its blank line."""
    return _shapes(provider).event(code, message, sequence_number)


def error_body(provider: str, code: str, message: str) -> bytes:
    """The JSON error body of a non-streamed answer, in the provider's shape."""
    return _shapes(provider).body(code, message)
