"""OpenAI Chat Completions: the wire's package (:mod:`railings.providers`), its decoder
with ``calls.py`` (its tool-call assembly) and ``fields.py`` (its field tables)."""

from __future__ import annotations

from railings.providers.openai_chat.decoder import OpenAIChatDecoder
from railings.providers.openai_chat.spec import OPENAI_ERROR_TYPES, SPEC, STOP_REASONS

__all__ = ["OPENAI_ERROR_TYPES", "SPEC", "STOP_REASONS", "OpenAIChatDecoder"]
