"""The Responses API input items for a call and for its result, by call type.

Each call the client acts on goes back as the item the API produced, and its result
in the item shape the API expects for that type (openai-python ``types/responses``,
``ResponseInputItemParam``):

=================  ==========================  ==============================================
call type          the call, rebuilt           its result
=================  ==========================  ==============================================
``function``       ``function_call``           ``function_call_output`` {call_id, output}
``custom``         ``custom_tool_call``        ``custom_tool_call_output`` {call_id, output}
``local_shell``    ``local_shell_call``        ``local_shell_call_output`` {call_id, output}
``shell``          ``shell_call``              ``shell_call_output`` {call_id, output: [{stdout,
                                               stderr, outcome: {type: exit, exit_code}}]}
``apply_patch``    ``apply_patch_call``        ``apply_patch_call_output`` {call_id, status
                                               completed | failed, output}
``computer``       ``computer_call``           ``computer_call_output`` {call_id, output:
                                               {type: computer_screenshot, image_url}}
``mcp_approval``   ``mcp_approval_request``    ``mcp_approval_response`` {approval_request_id,
                                               approve, reason}
=================  ==========================  ==============================================

Where a shape has no text field, railings' one result string is placed as follows: a
shell result is stdout with exit code 0, or (an error or a rejection notice) stderr with
exit code 1; a computer result is the screenshot's image URL, and any other text (a
rejection notice) goes in a user message right after a ``computer_call_output`` without
an image, since that item has no text field; an approval is
``approve: true`` when the result is not an error (a denial's text is its ``reason``).
``local_shell_call_output`` is sent with ``call_id``, as the API's local shell guide and
working clients (vercel/ai) do, although openai-python types it with ``id``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["call_item", "result_item", "result_items"]

# A computer tool's result is its screenshot, as a URL (a data: URL when inline).
_IMAGE_URL_PREFIXES = ("data:image/", "https://", "http://")

# The call type -> the call item's type on the wire.
_CALL_ITEMS = {
    "function": "function_call",
    "custom": "custom_tool_call",
    "local_shell": "local_shell_call",
    "shell": "shell_call",
    "apply_patch": "apply_patch_call",
    "computer": "computer_call",
    "mcp_approval": "mcp_approval_request",
}


def call_item(
    call_type: str, call_id: str, name: str, arguments: Mapping[str, Any] | None, raw: str
) -> dict[str, Any]:
    """The call as an input item, rebuilt without an item id (see ``encoder.py``)."""
    kind = _CALL_ITEMS.get(call_type, "function_call")
    if kind == "function_call":
        return {"type": kind, "call_id": call_id, "name": name, "arguments": raw}
    if kind == "custom_tool_call":
        return {"type": kind, "call_id": call_id, "name": name, "input": raw}
    if kind == "mcp_approval_request":
        return {"type": kind, "id": call_id, "name": name, "arguments": raw}
    # The structured items: their arguments are the item's own fields (responses_items).
    fields = dict(arguments) if arguments is not None else {}
    if not fields and raw:
        try:
            loaded = json.loads(raw)
        except ValueError:
            loaded = {}
        fields = loaded if isinstance(loaded, dict) else {}
    return {"type": kind, "call_id": call_id, "status": "completed", **fields}


def result_items(
    call_type: str, call_id: str, content: str, is_error: bool
) -> list[dict[str, Any]]:
    """The items that answer a call: its output item, and for a computer call whose result
    is text (a rejection notice, an error) a user message with that text, since a
    ``computer_call_output`` holds only a screenshot."""
    out = [result_item(call_type, call_id, content, is_error)]
    if call_type == "computer" and not content.startswith(_IMAGE_URL_PREFIXES):
        out.append({"role": "user", "content": content})
    return out


def result_item(call_type: str, call_id: str, content: str, is_error: bool) -> dict[str, Any]:
    """The result of a call of ``call_type`` as the input item the API expects."""
    match call_type:
        case "custom":
            return {"type": "custom_tool_call_output", "call_id": call_id, "output": content}
        case "local_shell":
            return {"type": "local_shell_call_output", "call_id": call_id, "output": content}
        case "shell":
            stdout, stderr = ("", content) if is_error else (content, "")
            outcome = {"type": "exit", "exit_code": 1 if is_error else 0}
            output = [{"stdout": stdout, "stderr": stderr, "outcome": outcome}]
            return {"type": "shell_call_output", "call_id": call_id, "output": output}
        case "apply_patch":
            status = "failed" if is_error else "completed"
            return {
                "type": "apply_patch_call_output",
                "call_id": call_id,
                "status": status,
                "output": content,
            }
        case "computer":
            screenshot: dict[str, Any] = {"type": "computer_screenshot"}
            if content.startswith(_IMAGE_URL_PREFIXES):
                screenshot["image_url"] = content
            return {"type": "computer_call_output", "call_id": call_id, "output": screenshot}
        case "mcp_approval":
            item: dict[str, Any] = {
                "type": "mcp_approval_response",
                "approval_request_id": call_id,
                "approve": not is_error,
            }
            if is_error and content:
                item["reason"] = content
            return item
    return {"type": "function_call_output", "call_id": call_id, "output": content}
