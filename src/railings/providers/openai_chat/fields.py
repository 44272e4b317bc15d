"""The fields of a Chat Completions chunk the decoder knows, level by level.

A chunk, its choice, a tool call and its function each have a table of the fields
:mod:`railings.providers.openai_chat.decoder` knows: the ones it reads, and the ones it reads
past on purpose, with who sends them. Any other field becomes an :class:`Unknown`
event (``openai:<level>:<field>``), counted in the turn. The delta's own keys are
the decoder's handler table (``_DELTA`` there); the handlers of its text-valued keys
(content, reasoning, refusal) are here, and two values read whole: ``delta.content``
given as a list of parts, and an error object.
"""

from __future__ import annotations

from typing import Any

from railings.events import (
    BilledOutput,
    ProviderErrorEvent,
    RefusalDelta,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    Unknown,
)

__all__ = [
    "CALL_FIELDS",
    "CHOICE_FIELDS",
    "CHUNK_FIELDS",
    "FUNCTION_FIELDS",
    "content",
    "content_parts",
    "error_event",
    "read_past",
    "reasoning",
    "reasoning_details",
    "refusal",
    "unknown_fields",
]

# The check: a stream repeats one chunk shape thousands of times, and looking every key of
# every chunk up in its table is a visible part of the decoder's work per chunk
# (docs/PERFORMANCE.md, "Why the code is as it is"). So the fields of a chunk (a choice,
# a tool call, its function) are checked when they are not, in the same order, those of
# the last one checked at that level: comparing two short lists of the same keys costs a
# fraction of a lookup per key, and a chunk that repeats the last shape has nothing new.
CHUNK_FIELDS = frozenset(
    {
        "id",
        "object",
        "created",
        "model",
        "choices",
        "usage",
        "error",
        "system_fingerprint",
        "service_tier",
        "obfuscation",  # OpenAI: random padding against length side channels
        "prompt_filter_results",  # Azure
        "provider",  # OpenRouter
        "citations",  # Perplexity
        "x_groq",  # Groq
        "moderation",  # Mistral
        "prompt_text",  # vLLM-based servers (Crusoe)
        "prompt_token_ids",
        "sla_metrics",  # Snowflake
    }
)
CHOICE_FIELDS = frozenset(
    {
        "index",
        "delta",
        "finish_reason",
        "logprobs",
        "content_filter_results",  # Azure
        "native_finish_reason",  # OpenRouter: the upstream's own spelling
        "stop_reason",  # vLLM: the stop token or string that matched
        "token_ids",  # vLLM
    }
)
CALL_FIELDS = frozenset({"index", "id", "type", "function"})
FUNCTION_FIELDS = frozenset({"name", "arguments"})


def unknown_fields(
    level: str, obj: dict[str, Any], known: frozenset[str], out: list[StreamEvent]
) -> None:
    """An :class:`Unknown` event for each field of ``obj`` (at ``level``) not in ``known``."""
    out.extend(Unknown(name=f"openai:{level}:{key}") for key in obj if key not in known)


# The handlers of the delta's text-valued keys (the decoder's ``_DELTA`` table; the decoder
# itself, their first argument, is not needed). A null value never reaches them.


def content(_: object, value: object, out: list[StreamEvent]) -> None:
    """``delta.content``: text, or a list of parts."""
    if isinstance(value, str):
        if value:
            out.append(TextDelta(text=value))
    elif isinstance(value, list):
        content_parts(value, out)
    else:
        out.append(Unknown(name="openai:delta:content"))


def reasoning(_: object, value: object, out: list[StreamEvent]) -> None:
    """``delta.reasoning_content`` or ``delta.reasoning``: reasoning text."""
    if isinstance(value, str):
        if value:
            out.append(ThinkingDelta(text=value))
    else:
        out.append(Unknown(name="openai:delta:reasoning"))


def refusal(_: object, value: object, out: list[StreamEvent]) -> None:
    """``delta.refusal``: the model's refusal text."""
    if isinstance(value, str):
        if value:
            out.append(RefusalDelta(text=value))
    else:
        out.append(Unknown(name="openai:delta:refusal"))


def read_past(_: object, value: object, out: list[StreamEvent]) -> None:
    """A delta key that carries nothing for the turn."""


# The fields of a ``reasoning_details`` entry that hold reasoning: text, a summary, the
# encrypted reasoning (``reasoning.encrypted``'s ``data``) or its signature.
_REASONING_FIELDS = ("text", "summary", "data", "signature")


def reasoning_details(_: object, value: object, out: list[StreamEvent]) -> None:
    """OpenRouter's ``delta.reasoning_details``: the reasoning of ``reasoning`` in
    structured form, which the turn does not keep, but also encrypted reasoning that comes
    nowhere else. An entry holding any of it is billed output (:class:`BilledOutput`, so a
    cut after it is Partial); an empty one is nothing."""
    if not isinstance(value, list):
        out.append(Unknown(name="openai:delta:reasoning_details"))
        return
    for entry in value:
        if isinstance(entry, dict) and any(entry.get(k) for k in _REASONING_FIELDS):
            out.append(BilledOutput(name="openai:delta:reasoning_details"))
            return


def content_parts(parts: list[Any], out: list[StreamEvent]) -> None:
    """``delta.content`` given as a list of parts (Mistral Magistral)."""
    for part in parts:
        if not isinstance(part, dict):
            out.append(Unknown(name="openai:content"))
            continue
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if isinstance(text, str) and text:
                out.append(TextDelta(text=text))
        elif kind == "thinking":
            inner = part.get("thinking")
            if isinstance(inner, str):
                if inner:
                    out.append(ThinkingDelta(text=inner))
            elif isinstance(inner, list):
                for sub in inner:
                    if isinstance(sub, dict) and isinstance(sub.get("text"), str) and sub["text"]:
                        out.append(ThinkingDelta(text=sub["text"]))
        else:
            out.append(Unknown(name=f"openai:content:{kind}"))


def error_event(obj: dict[str, Any]) -> ProviderErrorEvent:
    """An OpenAI-style error object (``{"error": {...}}``) as a normalized event."""
    error = obj.get("error", obj)
    if not isinstance(error, dict):
        return ProviderErrorEvent(message=str(error), provider_type=None)
    kind = error.get("code") if isinstance(error.get("code"), str) else None
    kind = kind or (error.get("type") if isinstance(error.get("type"), str) else None)
    status = error.get("status_code", error.get("code"))
    return ProviderErrorEvent(
        message=str(error.get("message") or "provider error"),
        provider_type=kind,
        status=status if isinstance(status, int) else None,
    )
