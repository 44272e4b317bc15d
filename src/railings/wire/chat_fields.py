"""The fields of a Chat Completions chunk the decoder knows, level by level.

A chunk, its choice, a tool call and its function each have a table of the fields
:mod:`railings.wire.openai_chat` knows: the ones it reads, and the ones it reads
past on purpose, with who sends them. Any other field becomes an :class:`Unknown`
event (``openai:<level>:<field>``), counted in the turn. The delta's own keys are
the decoder's handler table (``_DELTA`` there).
"""

from __future__ import annotations

from typing import Any

from railings.events import StreamEvent, Unknown

__all__ = ["CALL_FIELDS", "CHOICE_FIELDS", "CHUNK_FIELDS", "FUNCTION_FIELDS", "unknown_fields"]

# The check: a stream repeats one chunk shape thousands of times, and looking every key of
# every chunk up in its table cost a tenth of the decoder's instructions per chunk
# (bench/instructions.py, W1). So the fields of a chunk (a choice, a tool call, its
# function) are checked when they are not, in the same order, those of the last one
# checked at that level: comparing two short tuples of the same keys costs a fraction of a
# lookup per key, and a chunk that repeats the last shape has nothing new.
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
