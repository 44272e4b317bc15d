"""OpenAI Chat Completions: the wire's package.

``spec.py`` is its :class:`~railings.providers.base.ProviderSpec` (paths, proof,
stop-reason table, error types), ``decoder.py`` (with ``calls.py``, its tool-call
assembly, and ``fields.py``, its field tables) reads its stream into normalized events,
``encoder.py`` writes a conversation as its request body. The registry
(:mod:`railings.providers`) lists the spec; the test kit's side of the wire is in
:mod:`railings.testing`.
"""

from __future__ import annotations

from railings.providers.openai_chat.decoder import OpenAIChatDecoder
from railings.providers.openai_chat.spec import OPENAI_ERROR_TYPES, SPEC, STOP_REASONS

__all__ = ["OPENAI_ERROR_TYPES", "SPEC", "STOP_REASONS", "OpenAIChatDecoder"]
