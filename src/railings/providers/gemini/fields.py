"""The fields of a Gemini ``GenerateContentResponse`` the decoder knows.

Its stop-reason spellings (``finishReason`` -> railings' normalized reason, and the
inverse the scripted server uses), and the fields it reads past on purpose; anything
else is counted as :class:`~railings.events.Unknown` by :mod:`railings.providers.gemini.decoder`.
"""

from __future__ import annotations

from typing import Final

from railings.stops import Stop

__all__ = [
    "CANDIDATE_READ",
    "CANDIDATE_READ_PAST",
    "DONE",
    "FINISH_REASON",
    "PART_METADATA",
    "PROMPT_BLOCKED",
    "READ_PAST",
    "STOP_REASONS",
    "TOP_READ",
    "UNSPECIFIED",
]

FINISH_REASON: Final = "finishReason"
PROMPT_BLOCKED: Final = "promptFeedback.blockReason"
UNSPECIFIED: Final = "FINISH_REASON_UNSPECIFIED"

# finishReason (and promptFeedback.blockReason) -> railings' stop reason; ``other``
# where it has no normalized meaning (the spec's table is the rest).
STOP_REASONS: Final[dict[str, str]] = {
    "STOP": Stop.END_TURN,
    "MAX_TOKENS": Stop.MAX_TOKENS,
    "SAFETY": Stop.CONTENT_FILTER,
    "RECITATION": Stop.CONTENT_FILTER,
    "LANGUAGE": Stop.CONTENT_FILTER,
    "BLOCKLIST": Stop.CONTENT_FILTER,
    "PROHIBITED_CONTENT": Stop.CONTENT_FILTER,
    "SPII": Stop.CONTENT_FILTER,
    "IMAGE_SAFETY": Stop.CONTENT_FILTER,
    "IMAGE_PROHIBITED_CONTENT": Stop.CONTENT_FILTER,
    "IMAGE_RECITATION": Stop.CONTENT_FILTER,
    "JAILBREAK": Stop.CONTENT_FILTER,
    "MALFORMED_FUNCTION_CALL": Stop.MALFORMED_TOOL_USE,
    "UNEXPECTED_TOOL_CALL": Stop.MALFORMED_TOOL_USE,
    "TOO_MANY_TOOL_CALLS": Stop.MALFORMED_TOOL_USE,
    "OTHER": "other",
    "IMAGE_OTHER": "other",
    "NO_IMAGE": "other",
}

DONE: Final = "[DONE]"
# Fields read past on purpose: identity and timing, and metadata that is no content of
# the turn (safety ratings, citations, grounding and URL-context sources, log
# probabilities). Any other field is counted as Unknown.
READ_PAST: Final = frozenset(
    {"createTime", "modelVersion", "responseId", "modelStatus", "sdkHttpResponse"}
)
CANDIDATE_READ_PAST: Final = frozenset(
    {
        "index",
        "safetyRatings",
        "citationMetadata",
        "groundingMetadata",
        "urlContextMetadata",
        "avgLogprobs",
        "logprobsResult",
        "finishMessage",
        "tokenCount",
    }
)
TOP_READ: Final = frozenset({"candidates", "usageMetadata", "promptFeedback", "error"})
CANDIDATE_READ: Final = frozenset({"content", FINISH_REASON})
# Keys a part may carry beside its one kind key.
PART_METADATA: Final = frozenset(
    {"thought", "thoughtSignature", "partMetadata", "videoMetadata", "mediaResolution"}
)
