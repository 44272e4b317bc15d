"""A Responses API request, as the scripted server reads it: :func:`parse_ask`.

The body is validated the way the API does, with its own 400 messages, and
reduced to what the server needs (:class:`ResponsesAsk`). The input of a request is
checked the way the API is reported to check it: with ``store: false`` a reasoning
item without its encrypted content is "not found"; a reasoning item must come right
before an item it produced; an item a reasoning produced (its id, given) must come
after that reasoning. The server remembers which of its items a reasoning produced
(``reasoned``, item id -> reasoning id).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from railings.testing.plan import assistant_turns, compact, count_tokens, positive_int

__all__ = ["ResponsesAsk", "parse_ask"]


@dataclass(frozen=True, slots=True)
class ResponsesAsk:
    """A ``POST /responses`` request, validated. ``turns``: the assistant turns its
    ``input`` holds (:func:`~railings.testing.script.assistant_turns`)."""

    model: str
    input: list[Any]
    instructions: str | None
    stream: bool
    max_tokens: int | None
    input_tokens: int
    turns: int
    echo: dict[str, Any] = field(default_factory=dict)  # request fields the response repeats
    background: bool = False  # ``background: true``: kept to be streamed again or cancelled


def parse_ask(obj: Any, reasoned: Mapping[str, str] | None = None) -> ResponsesAsk | str:
    """Validate a request body; a string is the 400 message. ``reasoned`` maps the ids
    of items a reasoning item produced to that reasoning item's id (see the module docstring).

    Deliberately lenient on one point: ``max_output_tokens`` may be below the real
    API's minimum of 16, so tests can cut a turn after a few characters.
    """
    if not isinstance(obj, Mapping):
        return "We could not parse the JSON body of your request."
    model = obj.get("model")
    if not isinstance(model, str) or not model:
        return "Missing required parameter: 'model'."
    previous = obj.get("previous_response_id")
    if previous is not None:
        # Nothing is stored here: the whole conversation must come in ``input``.
        return f"Previous response with id '{previous}' not found."
    items = obj.get("input", [])
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        return (
            "Invalid type for 'input': expected one of a string or an array of input "
            "items, but got an object instead."
        )
    limit = obj.get("max_output_tokens")
    if limit is not None and not positive_int(limit):
        return (
            f"Invalid 'max_output_tokens': integer below minimum value. Expected a value "
            f">= 1, but got {limit!r} instead."
        )
    background = obj.get("background") is True
    if background and obj.get("store") is False:
        # A background response is kept on the server, to be retrieved, resumed or
        # cancelled later: that is storing it.
        return "Invalid value for 'store': background responses require store=true."
    problem = _check_reasoning(items, obj.get("store", True) is not False, reasoned or {})
    if problem:
        return problem
    instructions = obj.get("instructions")
    tools = obj.get("tools")
    tools = tools if isinstance(tools, list) else []
    echo = {
        "instructions": instructions if isinstance(instructions, str) else None,
        "max_output_tokens": limit,
        "parallel_tool_calls": obj.get("parallel_tool_calls", True) is not False,
        "store": obj.get("store", True) is not False,
        "temperature": obj.get("temperature", 1.0),
        "tool_choice": obj.get("tool_choice", "auto"),
        "tools": [_echo_tool(t) for t in tools],
        "top_p": obj.get("top_p", 1.0),
        "metadata": obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {},
        "background": background,
    }
    prompt = compact([instructions, items, obj.get("tools")])
    return ResponsesAsk(
        model,
        items,
        echo["instructions"],
        obj.get("stream") is True,
        limit,
        count_tokens(len(prompt)),
        assistant_turns(items),
        echo,
        background,
    )


def _check_reasoning(items: list[Any], store: bool, reasoned: Mapping[str, str]) -> str:
    """The API's rules for reasoning items in ``input`` (see the module docstring); "" if kept."""
    issued = set(reasoned.values())
    seen: set[str] = set()
    for at, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        ident = item.get("id")
        if item.get("type") == "reasoning":
            if not store and not item.get("encrypted_content"):
                return (
                    f"Item with id '{ident}' not found. Items are not persisted when "
                    "`store` is set to false. Try again with `store` set to true, or "
                    "remove this item from your input."
                )
            following = items[at + 1] if at + 1 < len(items) else None
            produced = following.get("id") if isinstance(following, Mapping) else None
            if ident in issued and reasoned.get(str(produced)) != ident:
                return (
                    f"Item '{ident}' of type 'reasoning' was provided without its "
                    "required following item."
                )
            seen.add(str(ident))
        elif isinstance(ident, str) and ident in reasoned and reasoned[ident] not in seen:
            return (
                f"Item '{ident}' of type '{item.get('type')}' was provided without its "
                f"required 'reasoning' item: '{reasoned[ident]}'."
            )
    return ""


def _echo_tool(tool: Any) -> Any:
    # The API repeats each tool with its defaults filled in; a function tool is strict
    # unless the request said otherwise.
    if isinstance(tool, Mapping) and tool.get("type") == "function":
        return {
            "type": "function",
            "description": tool.get("description"),
            "name": tool.get("name"),
            "parameters": tool.get("parameters"),
            "strict": tool.get("strict", True),
        }
    return tool
