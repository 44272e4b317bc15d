"""OpenAI Responses: the wire's package (:mod:`railings.providers`), its decoder with
``items.py`` (its output items) and ``lifecycle.py`` (its terminal events), and
``shapes.py``, the item shapes the encoder and the decoder share."""

from __future__ import annotations

from railings.providers.openai_responses.decoder import OpenAIResponsesDecoder
from railings.providers.openai_responses.spec import COMPLETED_STATUS, SPEC, STOP_REASONS

__all__ = ["COMPLETED_STATUS", "SPEC", "STOP_REASONS", "OpenAIResponsesDecoder"]
