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

import json
from typing import Any

__all__ = ["CUT_CODE", "INTERRUPTED_CODE", "error_body", "error_event"]

INTERRUPTED_CODE = "stream_interrupted"
CUT_CODE = "tool_call_cut_by_output_limit"
# The Anthropic error types closest to each reason (their SDKs map them to classes).
_ANTHROPIC_TYPES = {INTERRUPTED_CODE: "api_error", CUT_CODE: "api_error"}


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _object(provider: str, code: str, message: str, sequence_number: int | None) -> dict[str, Any]:
    if provider == "anthropic":
        return {"type": "error", "error": {"type": _ANTHROPIC_TYPES[code], "message": message}}
    if provider == "openai-responses":
        obj: dict[str, Any] = {"type": "error", "code": code, "message": message, "param": None}
        if sequence_number is not None:
            obj["sequence_number"] = sequence_number
        obj["error"] = {"type": "server_error", "code": code, "message": message, "param": None}
        return obj
    return {"error": {"message": message, "type": "server_error", "param": None, "code": code}}


def error_event(
    provider: str, code: str, message: str, *, sequence_number: int | None = None
) -> bytes:
    """One whole SSE event carrying the error (``code``: :data:`INTERRUPTED_CODE` or
    :data:`CUT_CODE`), ended by its blank line."""
    data = _dumps(_object(provider, code, message, sequence_number))
    if provider == "openai":
        return f"data: {data}\n\n".encode()
    return f"event: error\ndata: {data}\n\n".encode()


def error_body(provider: str, code: str, message: str) -> bytes:
    """The JSON error body of a non-streamed answer, in the provider's shape."""
    if provider == "anthropic":
        return _dumps(_object(provider, code, message, None)).encode()
    return _dumps(
        {"error": {"message": message, "type": "server_error", "param": None, "code": code}}
    ).encode()
