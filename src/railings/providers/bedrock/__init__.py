"""Amazon Bedrock ConverseStream: the wire's package, laid out as every wire's is
(:mod:`railings.providers`)."""

from __future__ import annotations

from railings.providers.bedrock.decoder import BedrockDecoder
from railings.providers.bedrock.spec import BEDROCK_ERROR_TYPES, SPEC, STOP_REASONS

__all__ = ["BEDROCK_ERROR_TYPES", "SPEC", "STOP_REASONS", "BedrockDecoder"]
