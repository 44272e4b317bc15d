"""The provider-neutral conversation model: frozen values an agent keeps as its history.

Each wire's request body is built from it by that wire's encoder
(``railings.providers.<name>.encoder``), with the rules the wire imposes;
:mod:`railings.messages` re-exports every name here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from railings.errors import ToolDefinitionError
from railings.events import CallType
from railings.turn.model import Turn
from railings.turn.parts import (
    Part,
    RedactedThinkingPart,
    ServerToolCall,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
)

__all__ = [
    "Assistant",
    "Block",
    "Message",
    "RedactedThinking",
    "ResponsesItems",
    "ServerBlock",
    "System",
    "Text",
    "Thinking",
    "ToolResult",
    "ToolSpec",
    "ToolUse",
    "User",
    "call_names",
]


# -- assistant content blocks -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Text:
    """Text the model wrote (a refusal is kept as text too)."""

    text: str


@dataclass(frozen=True, slots=True)
class Thinking:
    """Reasoning text; ``signature`` is Anthropic's proof the block is unmodified."""

    text: str
    signature: str = ""


@dataclass(frozen=True, slots=True)
class RedactedThinking:
    """Anthropic ``redacted_thinking``: opaque ``data`` that must go back verbatim."""

    data: str


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A tool call the model made.

    ``arguments`` is the parsed JSON object, or None when the arguments did not
    parse (a call cut by the output limit); ``raw_arguments`` is what the model
    wrote, byte for byte. ``type`` is the call's :data:`~railings.events.CallType`:
    the Responses API sends each type back as its own item, and its result in the
    matching output item (:mod:`railings.providers.openai_responses.shapes`).
    """

    id: str
    name: str
    arguments: Mapping[str, Any] | None
    raw_arguments: str = ""
    type: CallType = "function"  # what the call asks the client to do (railings.events)

    def arguments_json(self) -> str:
        """The arguments as the model wrote them (OpenAI sends this string back)."""
        if self.raw_arguments:
            return self.raw_arguments
        return json.dumps(dict(self.arguments or {}), separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class ServerBlock:
    """A provider-run tool block (``server_tool_use``, ``web_search_tool_result`` ...),
    kept exactly as the provider sent it and sent back to that provider only."""

    raw: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ResponsesItems:
    """A Responses API response's own output items -- reasoning with its encrypted
    content, messages and calls, each with its item id -- sent back as they are, to
    that API only. A reasoning item goes back with the items it produced, paired
    by their ids; nothing is rebuilt."""

    items: tuple[Mapping[str, Any], ...]


Block = Text | Thinking | RedactedThinking | ToolUse | ServerBlock | ResponsesItems


# -- messages -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class System:
    """Instructions: a system message for Chat Completions, the top-level ``instructions``
    for Responses and ``system`` for Anthropic (several are joined by a blank line)."""

    text: str


@dataclass(frozen=True, slots=True)
class User:
    """What the user said: a task or a chat line."""

    text: str


@dataclass(frozen=True, slots=True)
class Assistant:
    """One assistant message: its blocks in the order the model produced them."""

    blocks: tuple[Block, ...] = ()

    @classmethod
    def of(cls, text: str = "", tool_calls: Iterable[ToolUse] = ()) -> Assistant:
        """Text and tool calls, the common case."""
        blocks: list[Block] = [Text(text)] if text else []
        blocks.extend(tool_calls)
        return cls(tuple(blocks))

    @classmethod
    def from_turn(cls, turn: Turn) -> Assistant:
        """The assistant message for a streamed turn, to append to the history, read from
        the turn's parts (:mod:`railings.turn.parts`).

        Thinking comes first (Anthropic requires it before text and tool use),
        then text (a refusal counts as text), then the local tool calls. A turn that
        used provider-run tools, or thought in several blocks, keeps its text, its
        thinking blocks (each with its own signature) and the provider's blocks in
        the order they arrived, sent back verbatim: that is how Anthropic continues a
        ``pause_turn``, and how it verifies each thinking block.
        """
        blocks = _in_order(turn.parts)
        if not blocks:
            if turn.thinking or turn.thinking_signature:
                blocks.append(Thinking(turn.thinking, turn.thinking_signature))
            blocks.extend(RedactedThinking(data) for data in turn.redacted_thinking)
            if turn.text or turn.refusal:
                blocks.append(Text(turn.text or turn.refusal))
        blocks.extend(
            ToolUse(call.id, call.name, call.arguments, call.raw_arguments, call.type)
            for call in turn.tool_calls
        )
        items = _reasoned_items(turn.output_items)
        if items:
            blocks.append(ResponsesItems(items))
        return cls(tuple(blocks))

    @property
    def text(self) -> str:
        """The text blocks joined, without thinking or tool calls."""
        return "".join(block.text for block in self.blocks if isinstance(block, Text))

    @property
    def tool_calls(self) -> tuple[ToolUse, ...]:
        """The local tool calls, in the order the model made them."""
        return tuple(block for block in self.blocks if isinstance(block, ToolUse))


def _reasoned_items(items: tuple[Mapping[str, Any], ...]) -> tuple[Mapping[str, Any], ...]:
    """The output items to send back as they are: only when the model reasoned and
    every reasoning item carries its encrypted content. Without it a reasoning item
    cannot be sent (``store: false`` keeps nothing server-side), and the items it
    produced cannot be sent with their ids either: the API refuses a call whose
    reasoning is missing. Then the turn is rebuilt from its text and calls."""
    reasoning = [i for i in items if i.get("type") == "reasoning"]
    if not reasoning or not all(i.get("encrypted_content") for i in reasoning):
        return ()
    return items


def _in_order(parts: tuple[Part, ...]) -> list[Block]:
    """Text, thinking and provider-run blocks in arrival order, or nothing when the order
    says no more than "thinking, then text": a turn without provider-run parts and with
    at most one thinking block. Local calls go after them (Anthropic wants every
    ``tool_use`` last), so the text around one is one block; refusal is not sent here."""
    thoughts = sum(1 for p in parts if isinstance(p, ThinkingPart | RedactedThinkingPart))
    provider_run = any(isinstance(p, ServerToolCall | ServerToolResultPart) for p in parts)
    if not provider_run and thoughts <= 1:
        return []
    out: list[Block] = []
    for part in parts:
        match part:
            case TextPart(text=text):
                if out and isinstance(out[-1], Text):
                    out[-1] = Text(out[-1].text + text)
                else:
                    out.append(Text(text))
            case ThinkingPart(text=text, signature=signature):
                out.append(Thinking(text, signature))
            case RedactedThinkingPart(data=data):
                out.append(RedactedThinking(data))
            case ServerToolCall():
                out.append(ServerBlock(part.block()))
            case ServerToolResultPart(block=block):
                out.append(ServerBlock(block))
    return out


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of one tool call (or the notice sent instead of executing it).

    ``name`` is the called tool's name, for the wires that tie a result to its call by
    name (Gemini's ``functionResponse``, Ollama's ``tool_name``); left empty, the
    encoders find it in the history by ``call_id``."""

    call_id: str
    content: str
    is_error: bool = False
    name: str = ""


Message = System | User | Assistant | ToolResult


def call_names(messages: Iterable[Message]) -> dict[str, str]:
    """Each tool call's id -> the called tool's name, over a history's assistant messages."""
    return {
        call.id: call.name
        for message in messages
        if isinstance(message, Assistant)
        for call in message.tool_calls
    }


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call: its name, what it does, and its arguments' JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    def __post_init__(self) -> None:
        # Both providers restrict tool names to this alphabet and length.
        if (
            not self.name
            or len(self.name) > 64
            or not all(c.isascii() and (c.isalnum() or c in "_-") for c in self.name)
        ):
            raise ToolDefinitionError(f"invalid tool name {self.name!r}: use [A-Za-z0-9_-]{{1,64}}")
        if self.parameters.get("type") != "object":
            raise ToolDefinitionError(f"tool {self.name!r}: parameters must be an object schema")
