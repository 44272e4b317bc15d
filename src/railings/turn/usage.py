"""A turn's usage, settled: each count reported by the provider, estimated, or unknown.

Theory of operation. A stream cut before its usage report (Chat's last chunk, Anthropic's
``message_delta``, Bedrock's ``metadata``) was billed all the same: a turn that reported
nothing must not read as $0, and a guess must never pass for the provider's count. So
every count of a turn's :class:`~railings.turn.model.Usage` carries its source, settled
here, once, when the assembler builds the turn (:func:`settle`):

======  ===============================  ================================================
count   the provider reported it          it did not
======  ===============================  ================================================
output  REPORTED, as it came              ESTIMATED from the output text received, when
                                          the turn is not Empty and that text is not
                                          empty; else UNKNOWN
input   REPORTED, as it came              ESTIMATED from the request's text, when the shell
                                          passed its size and the turn is not Empty; else
                                          UNKNOWN
======  ===============================  ================================================

* A reported count is never overwritten, and never estimated over: the provider's word
  stands, whatever the estimate would say.
* The one exception is a count that is not the turn's: the opening report's output count
  (Anthropic's ``message_start``) counts the output before any was written
  (:mod:`railings.turn.billable`). It stands only when nothing with text followed it;
  after text, with no later report, the output is estimated.
* An Empty turn received nothing billable and is resent: its counts are UNKNOWN unless
  reported (nobody reported a 0, so none is written).
* The method is :data:`METHOD`, ``chars/4``: ceil(characters / 4), the common rule of
  thumb for English text and code. It is named in every place the estimate goes, so
  nobody mistakes it for a count. The output's characters are what the turn received:
  visible text, refusals, thinking, and each call's name and argument text (hidden
  reasoning billed as output is not in the stream, so the estimate can be low). The
  request's are :func:`request_chars` of the body it sent.

Pure: no I/O, no clock; the shells pass the request's size in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from railings.turn.model import Outcome, Usage, UsageSource
from railings.turn.parts import (
    Part,
    RefusalPart,
    ServerToolCall,
    TextPart,
    ThinkingPart,
    ToolCall,
)

__all__ = [
    "BINARY_KEYS",
    "METHOD",
    "combine",
    "describe",
    "estimate",
    "output_chars",
    "request_chars",
    "settle",
    "shown",
    "usage_fields",
]

METHOD = "chars/4"  # ceil(characters / 4): the module docstring

# Keys whose string values are payloads, not text the model reads as tokens: base64
# images, audio and files (Messages' ``source.data``, Chat's ``input_audio.data``, Gemini's
# ``inlineData.data``, Bedrock's ``source.bytes``, Ollama's ``images``, Responses'
# ``file_data``), and what goes back opaque (thinking signatures, encrypted reasoning).
# A ``data:`` URL (Chat's and Responses' ``image_url``) is a payload wherever it is.
BINARY_KEYS = frozenset(
    {"data", "bytes", "images", "file_data", "signature", "thoughtSignature", "encrypted_content"}
)


def estimate(chars: int) -> int:
    """The :data:`METHOD` estimate of ``chars`` characters: ceil(chars / 4)."""
    return math.ceil(chars / 4) if chars > 0 else 0


def output_chars(parts: Iterable[Part]) -> int:
    """The characters of output text a turn received: visible text, refusals, thinking,
    and each call's name and argument text (local and provider-run)."""
    total = 0
    for part in parts:
        if type(part) is TextPart or type(part) is RefusalPart or type(part) is ThinkingPart:
            total += len(part.text)
        elif type(part) is ToolCall:
            total += len(part.name) + len(part.raw_arguments)
        elif type(part) is ServerToolCall:
            total += len(part.name) + len(part.raw_input)
    return total


def request_chars(body: Any) -> int:
    """The characters of text a request body carries (parsed JSON): every string value,
    but the payloads (:data:`BINARY_KEYS`, ``data:`` URLs); keys and numbers are
    structure, not counted. Walked without recursion, so any depth JSON parses is read."""
    total = 0
    stack: list[Any] = [body]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if not value.startswith("data:"):
                total += len(value)
        elif isinstance(value, dict):
            stack.extend(v for k, v in value.items() if k not in BINARY_KEYS)
        elif isinstance(value, list):
            stack.extend(value)
    return total


def settle(
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    outcome: Outcome,
    parts: Iterable[Part],
    request_chars: int | None = None,
    opening_output: bool = False,
) -> Usage:
    """The turn's usage by the module table. ``input_tokens`` / ``output_tokens``: the
    counts as last reported (None: never); ``opening_output``: the output count came
    from the opening report only; ``request_chars``: the size of the request's text,
    when the shell passed it (:func:`request_chars`)."""
    empty = outcome is Outcome.EMPTY
    out_source = in_source = UsageSource.REPORTED
    estimated = False
    received = 0 if empty else output_chars(parts)
    if output_tokens is None or (opening_output and received):
        output_tokens, out_source = None, UsageSource.UNKNOWN
        if received:
            output_tokens, out_source, estimated = estimate(received), UsageSource.ESTIMATED, True
    if input_tokens is None:
        in_source = UsageSource.UNKNOWN
        if request_chars is not None and not empty:
            input_tokens, in_source = estimate(request_chars), UsageSource.ESTIMATED
            estimated = True
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        input_source=in_source,
        output_source=out_source,
        method=METHOD if estimated else None,
    )


def usage_fields(usage: Usage) -> dict[str, Any]:
    """The usage as JSON (the journal, the gateway's journal, ``replay --json``): both
    counts, each count's source, and the method of the estimated ones (else None)."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "input_source": usage.input_source.value,
        "output_source": usage.output_source.value,
        "method": usage.method,
    }


def shown(tokens: Any, source: Any = None, method: Any = None) -> str:
    """One count for a reader: ``123`` reported, ``~123 (estimated, chars/4)``, or
    ``unknown``. Reads the JSON form too, whatever a journal file holds: a count without a
    source (an entry written before sources were kept) is what the provider reported, and
    anything that is not a count is unknown."""
    if type(tokens) is not int or source == UsageSource.UNKNOWN:
        return "unknown"
    if source == UsageSource.ESTIMATED:
        how = method if isinstance(method, str) and method.isprintable() else "method unknown"
        return f"~{tokens} (estimated, {how})"
    return str(tokens)


def describe(fields: Mapping[str, Any]) -> str:
    """A usage's JSON form (:func:`usage_fields`) as one line: ``12 in, ~40 (estimated,
    chars/4) out``; what ``replay``, ``show`` and ``gateway-log`` print."""
    method = fields.get("method")
    return (
        f"{shown(fields.get('input_tokens'), fields.get('input_source'), method)} in, "
        f"{shown(fields.get('output_tokens'), fields.get('output_source'), method)} out"
    )


def combine(first: Usage, second: Usage) -> Usage:
    """The usage of two requests that made one answer (a Partial answer and its
    continuation): each count the sum of both, as sure as the less sure of the two; a
    count either left unknown is unknown (half a count is no count)."""

    def add(a: int | None, b: int | None) -> int | None:
        return None if a is None or b is None else a + b

    def weaker(a: UsageSource, b: UsageSource) -> UsageSource:
        return UsageSource.ESTIMATED if UsageSource.ESTIMATED in (a, b) else a

    inputs = add(first.input_tokens, second.input_tokens)
    outputs = add(first.output_tokens, second.output_tokens)
    return Usage(
        input_tokens=inputs,
        output_tokens=outputs,
        input_source=weaker(first.input_source, second.input_source),
        output_source=weaker(first.output_source, second.output_source),
        method=first.method or second.method,
    )
