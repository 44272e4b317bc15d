"""Google Gemini (and Vertex AI): the wire's package (:mod:`railings.providers`), its
decoder with ``args.py`` (its partial arguments) and ``fields.py`` (its field tables)."""

from __future__ import annotations

from railings.providers.gemini.decoder import GeminiDecoder
from railings.providers.gemini.spec import (
    GEMINI_ERROR_STATUSES,
    SPEC,
    STOP_REASONS,
    VERTEX_REQUEST_PATH,
)

__all__ = ["GEMINI_ERROR_STATUSES", "SPEC", "STOP_REASONS", "VERTEX_REQUEST_PATH", "GeminiDecoder"]
