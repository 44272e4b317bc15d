"""Ollama /api/chat and /api/generate: the wire's package, laid out as every wire's is
(:mod:`railings.providers`)."""

from __future__ import annotations

from railings.providers.ollama.decoder import OllamaDecoder
from railings.providers.ollama.spec import OLLAMA_ERROR_TYPES, SPEC, STOP_REASONS

__all__ = ["OLLAMA_ERROR_TYPES", "SPEC", "STOP_REASONS", "OllamaDecoder"]
