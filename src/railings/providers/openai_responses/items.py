"""The Responses API's output item types: which the client must act on, which the
provider runs, and how each becomes a call. Shared by the stream decoder
(:mod:`railings.providers.openai_responses.decoder`) and ``railings.inspect`` for ``Response``
objects, so both read an item the same way.

Every item the client must act on becomes a local call (:data:`LOCAL_ITEMS`), so a
turn that asks the client to do something is never a finished turn with nothing to
do (its stop reason is ``tool_use``, never ``end_turn``):

==========================  ===============  ==============================================
item                        call type        arguments
==========================  ===============  ==============================================
``function_call``           ``function``     ``arguments``: JSON text the model wrote
``custom_tool_call``        ``custom``       ``input``: freeform text, never JSON
``mcp_approval_request``    ``mcp_approval`` ``arguments``: JSON text; the id is the item id
                                             (the ``approval_request_id`` of the answer)
``local_shell_call``        ``local_shell``  ``{"action": ...}``
``shell_call``              ``shell``        ``{"action": ...}``
``apply_patch_call``        ``apply_patch``  ``{"operation": ...}``
``computer_call``           ``computer``     ``{"action" / "actions", "pending_safety_checks"}``
==========================  ===============  ==============================================

The last four carry objects the API parsed from the model's output: their arguments
are the item's own fields, taken from the finished item (``output_item.done``), and
marked ``parsed``. Their streamed progress (``shell_call_command.*``,
``apply_patch_call_operation_diff.*``) repeats what the finished item holds and is
read past. The table is explicit on purpose: these items end in ``_call`` like the
provider-run ones (:data:`SERVER_ITEMS`), and a suffix rule would mark a call the
model is waiting on as already done.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from railings.events import CallType, ToolKind

__all__ = ["LOCAL_ITEMS", "SERVER_INPUT", "SERVER_ITEMS", "LocalItem", "final_input"]


@dataclass(frozen=True, slots=True)
class LocalItem:
    """How one item type the client must act on becomes a call."""

    call_type: CallType
    fields: tuple[str, ...]  # the item fields that are its arguments
    name: str = ""  # the call's name when the item has none of its own
    text: bool = True  # the single field is the model's text (else: objects, parsed)


LOCAL_ITEMS: dict[str, LocalItem] = {
    "function_call": LocalItem("function", ("arguments",)),
    "custom_tool_call": LocalItem("custom", ("input",)),
    "mcp_approval_request": LocalItem("mcp_approval", ("arguments",)),
    "local_shell_call": LocalItem("local_shell", ("action",), "local_shell", text=False),
    "shell_call": LocalItem("shell", ("action",), "shell", text=False),
    "apply_patch_call": LocalItem("apply_patch", ("operation",), "apply_patch", text=False),
    "computer_call": LocalItem(
        "computer", ("action", "actions", "pending_safety_checks"), "computer", text=False
    ),
}

# Calls the provider runs: item type -> (kind, name; "" means the item's own name).
SERVER_ITEMS: dict[str, tuple[ToolKind, str]] = {
    "web_search_call": ("server_tool_use", "web_search"),
    "file_search_call": ("server_tool_use", "file_search"),
    "code_interpreter_call": ("server_tool_use", "code_interpreter"),
    "image_generation_call": ("server_tool_use", "image_generation"),
    "mcp_call": ("mcp_tool_use", ""),
}

# What a provider-run call was asked to do, read from its finished item.
SERVER_INPUT: dict[str, str] = {
    "web_search_call": "action",
    "file_search_call": "queries",
    "code_interpreter_call": "code",
    "mcp_call": "arguments",
}


def final_input(kind: str, item: dict[str, Any]) -> tuple[str, bool]:
    """A call's arguments (local) or input (provider-run) from its finished item, and
    whether they are objects the API parsed (``True``) rather than the model's text."""
    local = LOCAL_ITEMS.get(kind)
    if local is not None:
        if local.text:
            value = item.get(local.fields[0])
            return (value, False) if isinstance(value, str) else ("", False)
        fields = {f: item[f] for f in local.fields if item.get(f) is not None}
        return (json.dumps(fields, ensure_ascii=False), True) if fields else ("", True)
    field = SERVER_INPUT.get(kind)
    if field is None:
        return "", False
    value = item.get(field)
    if isinstance(value, str) and field == "arguments":
        return value, False
    if value is None:
        return "", False
    return json.dumps({field: value}), False
