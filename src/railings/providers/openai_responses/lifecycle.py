"""The Responses API's lifecycle events: the response began, finished, was cut or failed.

Handlers of :mod:`railings.providers.openai_responses.decoder`'s table for the events about the
response as a whole rather than one of its output items. Each is a pure function of
the event's JSON object (the decoder's state is not needed):

* ``response.created`` -- the response's id and model.
* ``response.completed`` -- usage, the response's output items (:class:`OutputItems`),
  the status ``completed`` as the wire stop reason, then the termination proof.
* ``response.incomplete`` -- usage, ``incomplete_details.reason`` as the wire stop
  reason, then the proof.
* ``response.failed`` and ``error`` -- usage (``failed`` only) and a provider error.
"""

from __future__ import annotations

from typing import Any

from railings.events import (
    MessageStart,
    OutputItems,
    ProviderErrorEvent,
    StopReason,
    StreamEvent,
    TerminationProof,
    Unknown,
)
from railings.providers.base import as_dict, as_str, usage_update
from railings.wire._json import as_int

__all__ = ["COMPLETED", "FAILED", "INCOMPLETE", "LIFECYCLE"]

COMPLETED = "response.completed"
INCOMPLETE = "response.incomplete"
FAILED = "response.failed"


def created(obj: dict[str, Any]) -> list[StreamEvent]:
    """``response.created``: the response's id and model."""
    response = as_dict(obj.get("response"))
    return [MessageStart(id=as_str(response.get("id")), model=as_str(response.get("model")))]


def completed(obj: dict[str, Any]) -> list[StreamEvent]:
    """``response.completed``: usage, the output items, the stop reason and the proof."""
    output = as_dict(obj.get("response")).get("output")
    # The finished items, to go back verbatim (see railings.conversation): only these carry
    # a reasoning item's encrypted content whole, and the ids that pair it with its call.
    items: list[StreamEvent] = []
    if isinstance(output, list):
        if all(isinstance(item, dict) for item in output):
            items.append(OutputItems(items=tuple(output)))
        else:
            items.append(Unknown(name=f"openai-responses:{COMPLETED}:output"))
    return [
        *usage(obj),
        *items,
        StopReason(wire="completed"),
        TerminationProof(marker=COMPLETED),
    ]


def incomplete(obj: dict[str, Any]) -> list[StreamEvent]:
    """``response.incomplete``: usage, the reason as the stop reason, and the proof."""
    details = as_dict(as_dict(obj.get("response")).get("incomplete_details"))
    # The API documents a reason on every incomplete response; without one, the stop is
    # still not a finished turn, so it is reported as such rather than derived.
    reason = as_str(details.get("reason")) or "incomplete"
    return [*usage(obj), StopReason(wire=reason), TerminationProof(marker=INCOMPLETE)]


def failed(obj: dict[str, Any]) -> list[StreamEvent]:
    """``response.failed``: usage and the provider's error."""
    error = as_dict(as_dict(obj.get("response")).get("error"))
    return [*usage(obj), error_event(error, "response failed")]


def error(obj: dict[str, Any]) -> list[StreamEvent]:
    """``error``: documented flat (``{"type": "error", "code", "message", "param"}``);
    some servers nest the same fields under ``error``."""
    nested = obj.get("error")
    return [error_event(nested if isinstance(nested, dict) else obj, "provider error")]


def error_event(error: dict[str, Any], fallback: str) -> ProviderErrorEvent:
    """A Responses error object as a normalized event, typed by its ``code``."""
    code = error.get("code")
    kind = error.get("type")
    provider_type = code if isinstance(code, str) and code else None
    if provider_type is None and isinstance(kind, str) and kind and kind != "error":
        provider_type = kind
    return ProviderErrorEvent(
        message=as_str(error.get("message")) or fallback,
        provider_type=provider_type,
        status=as_int(code),
    )


def usage(obj: dict[str, Any]) -> list[StreamEvent]:
    """The usage of the event's response, when it has one."""
    usage = as_dict(obj.get("response")).get("usage")
    return usage_update(usage, "input_tokens", "output_tokens")


LIFECYCLE = {
    "response.created": created,
    COMPLETED: completed,
    INCOMPLETE: incomplete,
    FAILED: failed,
    "error": error,
}
"""The lifecycle event type -> its handler."""
