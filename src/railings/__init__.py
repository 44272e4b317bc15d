"""railings: streaming LLM turns you can trust.

A turn is finished only when the provider's own proof of termination arrived;
a tool call whose arguments were cut off by the output limit is never repaired
and never executed.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

# The accelerations switch, set from RAILINGS_ACCELERATE here, once, before any reader is made.
from railings import accelerations, errors

# The process's secret registry, installed for railings.redact (so for every error made).
from railings import secrets as _secrets  # noqa: F401

# The error tree, every name of it (railings.errors draws it).
from railings.errors import *  # noqa: F403
from railings.replay import Replay, replay, to_json
from railings.sdk_objects import inspect
from railings.turn.model import Outcome, Termination, Turn, TurnError, Usage, UsageSource
from railings.turn.parts import (
    Part,
    ProviderItem,
    RedactedThinkingPart,
    RefusalPart,
    ServerToolCall,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCall,
)
from railings.turn.reader import StreamReader
from railings.turn.repair import Arguments, RepairPolicy, Rung, parse_arguments
from railings.turn.stop_reason import Stop, StopSource
from railings.turn.verdict import CallVerdict, RejectReason, Verdict, judge, judge_call

try:  # one version, in pyproject.toml; the installed metadata carries it
    __version__ = version("railings")
except PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    *errors.__all__,
    "Arguments",
    "CallVerdict",
    "Outcome",
    "Part",
    "ProviderItem",
    "RedactedThinkingPart",
    "RefusalPart",
    "RejectReason",
    "RepairPolicy",
    "Replay",
    "Rung",
    "ServerToolCall",
    "ServerToolResultPart",
    "Stop",
    "StopSource",
    "StreamReader",
    "Termination",
    "TextPart",
    "ThinkingPart",
    "ToolCall",
    "Turn",
    "TurnError",
    "Usage",
    "UsageSource",
    "Verdict",
    "__version__",
    "accelerations",
    "inspect",
    "judge",
    "judge_call",
    "parse_arguments",
    "replay",
    "to_json",
]
