"""Anthropic Messages: the wire's package, laid out as every wire's is
(:mod:`railings.providers`)."""

from __future__ import annotations

from railings.providers.anthropic.decoder import AnthropicDecoder
from railings.providers.anthropic.spec import (
    ANTHROPIC_ERROR_TYPES,
    ANTHROPIC_VERSION,
    SPEC,
    STOP_REASONS,
)

__all__ = ["ANTHROPIC_ERROR_TYPES", "ANTHROPIC_VERSION", "SPEC", "STOP_REASONS", "AnthropicDecoder"]
