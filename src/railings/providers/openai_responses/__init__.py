"""OpenAI Responses: the wire's package.

``spec.py`` is its :class:`~railings.providers.base.ProviderSpec` (paths, proof,
stop-reason table, error types), ``decoder.py`` (with ``items.py``, its output items,
and ``lifecycle.py``, its terminal events) reads its stream into normalized events,
``shapes.py`` holds the item shapes the encoder and the decoder share, ``encoder.py``
writes a conversation as its request body. The registry (:mod:`railings.providers`)
lists the spec; the test kit's side of the wire is in :mod:`railings.testing`.
"""

from __future__ import annotations

from railings.providers.openai_responses.decoder import OpenAIResponsesDecoder
from railings.providers.openai_responses.spec import COMPLETED_STATUS, SPEC, STOP_REASONS

__all__ = ["COMPLETED_STATUS", "SPEC", "STOP_REASONS", "OpenAIResponsesDecoder"]
