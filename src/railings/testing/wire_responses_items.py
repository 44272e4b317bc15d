"""The Responses API output items the scripted server writes, one shape per call type.

Shapes follow the real API (``tests/corpus/responses/``: the vercel/ai and pydantic-ai
captures). Each call the script makes becomes the item of its type:

=================  ==========================  =============================================
script ``type``    item (id prefix)            streamed as
=================  ==========================  =============================================
``function``       ``function_call`` (fc)      ``function_call_arguments.delta`` / ``.done``
``custom``         ``custom_tool_call`` (ctc)  ``custom_tool_call_input.delta`` / ``.done``
``mcp_approval``   ``mcp_approval_request``    added and done whole (no deltas), its id the
                                               call's id (the ``approval_request_id``)
``local_shell``    ``local_shell_call`` (lsh)  added with an empty command, done whole
``shell``          ``shell_call`` (sh)         added without an action, done whole
``apply_patch``    ``apply_patch_call`` (apc)  added without an operation, done whole
``computer``       ``computer_call`` (cu)      added without an action, done whole
=================  ==========================  =============================================

The last four carry objects the API parsed from the model's output: a call the output
limit cut is closed with its text *repaired* into an object (``status: "incomplete"``),
or with no fields when nothing can be read -- the object on the wire proves nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from railings.testing.plan import Plan, PlannedCall, pieces

__all__ = ["OutputItem", "call_events", "plan_items", "text_part"]

# call type -> (item type, id prefix)
_ITEMS: dict[str, tuple[str, str]] = {
    "function": ("function_call", "fc"),
    "custom": ("custom_tool_call", "ctc"),
    "mcp_approval": ("mcp_approval_request", "mcpr"),
    "local_shell": ("local_shell_call", "lsh"),
    "shell": ("shell_call", "sh"),
    "apply_patch": ("apply_patch_call", "apc"),
    "computer": ("computer_call", "cu"),
}
_STRUCTURED = frozenset({"local_shell_call", "shell_call", "apply_patch_call", "computer_call"})


@dataclass(frozen=True, slots=True)
class OutputItem:
    """One output item: a reasoning, a message, or a call of one of the types above."""

    kind: str  # "reasoning" | "message" | an item type of _ITEMS
    id: str
    text: str  # the summary, the text, the arguments or the freeform input
    complete: bool
    call_id: str = ""
    name: str = ""
    fields: dict[str, Any] = field(default_factory=dict)  # a structured item's objects

    def final(self) -> dict[str, Any]:
        """The item as ``output_item.done`` and the final response show it."""
        status = "completed" if self.complete else "incomplete"
        if self.kind == "reasoning":
            item: dict[str, Any] = {
                "id": self.id,
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": self.text}],
                "encrypted_content": sealed(self.id),
            }
            if not self.complete:
                item["status"] = status
            return item
        if self.kind == "message":
            return {
                "id": self.id,
                "type": "message",
                "status": status,
                "content": [text_part(self.text)],
                "role": "assistant",
            }
        if self.kind == "mcp_approval_request":
            return {
                "id": self.id,
                "type": self.kind,
                "arguments": self.text,
                "name": self.name,
                "server_label": "scripted",
            }
        if self.kind == "custom_tool_call":
            return {
                "id": self.id,
                "type": self.kind,
                "status": status,
                "call_id": self.call_id,
                "name": self.name,
                "input": self.text,
            }
        if self.kind in _STRUCTURED:
            return {
                "id": self.id,
                "type": self.kind,
                "status": status,
                "call_id": self.call_id,
                **self.fields,
            }
        return {
            "id": self.id,
            "type": "function_call",
            "status": status,
            "arguments": self.text,
            "call_id": self.call_id,
            "name": self.name,
        }

    def added(self) -> dict[str, Any]:
        """The item as ``output_item.added`` shows it: nothing written yet."""
        item = self.final()
        if self.kind == "mcp_approval_request":
            return item  # sent whole from the start (as the API does)
        item["status"] = "in_progress"
        if self.kind == "function_call":
            item["arguments"] = ""
        elif self.kind == "custom_tool_call":
            item["input"] = ""
        elif self.kind in _STRUCTURED:
            for key in self.fields:
                del item[key]
            if self.kind == "local_shell_call":
                item["action"] = {"type": "exec", "command": [], "env": {}}
        return item


def sealed(item_id: str) -> str:
    """Stands for the API's encrypted reasoning: opaque, and the same for the same item."""
    return "gAAAAA" + base64.urlsafe_b64encode(f"railings:{item_id}".encode()).decode()


def text_part(text: str) -> dict[str, Any]:
    """A message's ``output_text`` content part holding ``text``, with the empty
    ``annotations`` and ``logprobs`` the API sends."""
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def _call_item(call: PlannedCall, new_item_id: Callable[[str], str]) -> OutputItem:
    kind, prefix = _ITEMS.get(call.type, _ITEMS["function"])
    item_id = call.id if kind == "mcp_approval_request" else new_item_id(prefix)
    fields = call.parsed_arguments() if kind in _STRUCTURED else {}
    return OutputItem(kind, item_id, call.arguments, call.complete, call.id, call.name, fields)


def plan_items(plan: Plan, new_item_id: Callable[[str], str]) -> list[OutputItem]:
    """The output items of a response that carries ``plan``, in order."""
    items: list[OutputItem] = []
    if plan.thinking:
        items.append(
            OutputItem("reasoning", new_item_id("rs"), plan.thinking, plan.thinking_complete)
        )
    if plan.text:
        items.append(OutputItem("message", new_item_id("msg"), plan.text, plan.text_complete))
    items.extend(_call_item(call, new_item_id) for call in plan.calls)
    return items


_DELTAS = {
    "function_call": ("response.function_call_arguments", "arguments"),
    "custom_tool_call": ("response.custom_tool_call_input", "input"),
}


def call_events(
    item: OutputItem, index: int, event: Callable[..., bytes], chunk_size: int
) -> Iterator[bytes]:
    """A call item's events from ``output_item.added`` up to (not including) its done."""
    yield event("response.output_item.added", output_index=index, item=item.added())
    stream = _DELTAS.get(item.kind)
    if stream is None:
        return  # read whole from output_item.done
    name, key = stream
    at = {"item_id": item.id, "output_index": index}
    for piece in pieces(item.text, chunk_size):
        yield event(f"{name}.delta", **at, delta=piece)
    yield event(f"{name}.done", **at, **{key: item.text})
