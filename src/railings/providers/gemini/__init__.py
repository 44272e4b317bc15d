"""Google Gemini (and Vertex AI): the wire's package.

``spec.py`` is its :class:`~railings.providers.base.ProviderSpec` (paths, proof,
stop-reason table, error types), ``decoder.py`` (with ``args.py``, its partial
arguments, and ``fields.py``, its field tables) reads its stream into normalized events,
``encoder.py`` writes a conversation as its request body. The registry
(:mod:`railings.providers`) lists the spec; the test kit's side of the wire is in
:mod:`railings.testing`.
"""

from __future__ import annotations

from railings.providers.gemini.decoder import GeminiDecoder
from railings.providers.gemini.spec import (
    GEMINI_ERROR_STATUSES,
    SPEC,
    STOP_REASONS,
    VERTEX_REQUEST_PATH,
)

__all__ = ["GEMINI_ERROR_STATUSES", "SPEC", "STOP_REASONS", "VERTEX_REQUEST_PATH", "GeminiDecoder"]
