"""Ollama /api/chat and /api/generate: the wire's package.

``spec.py`` is its :class:`~railings.providers.base.ProviderSpec` (paths, proof,
stop-reason table, error types), ``decoder.py`` reads its stream into normalized events,
``encoder.py`` writes a conversation as its request body. The registry
(:mod:`railings.providers`) lists the spec; the test kit's side of the wire is in
:mod:`railings.testing`.
"""

from __future__ import annotations

from railings.providers.ollama.decoder import OllamaDecoder
from railings.providers.ollama.spec import OLLAMA_ERROR_TYPES, SPEC, STOP_REASONS

__all__ = ["OLLAMA_ERROR_TYPES", "SPEC", "STOP_REASONS", "OllamaDecoder"]
