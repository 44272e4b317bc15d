"""Scripts: what the scripted model says, as data.

A script is a JSON object. Only ``turns`` is required::

    {
      "model": "scripted-1",          # model name in responses (default: the request's model)
      "api_key": "sk-test",           # require exactly this key (default: none required)
      "require_api_key": false,       # require some key, any value (implied by api_key)
      "chunk_size": 16,               # characters per streamed delta (default 16)
      "delay": 0.0,                   # seconds between streamed events (default 0)
      "ping": true,                   # Anthropic: send a ping event after the first block start
      "on_exhausted": "repeat_last",  # more assistant messages than turns: "repeat_last" | "error"
      "seed": 7,                      # makes message, call and request ids deterministic
      "prefill": true,                # Anthropic: false = this model refuses assistant prefill
      "proof": false,                 # quirks (below), for every turn or per turn
      "turns": [
        {"text": "Let me look.",
         "thinking": "The user wants a listing.",          # optional reasoning
         "tool_calls": [                                     # optional, parallel allowed
           {"name": "list_files", "arguments": {"path": "."}},
           {"name": "shell", "arguments": "{\\"cmd\\": \\"ls\\"}", "id": "call_1"},
           {"name": "local_shell", "type": "local_shell",           # a Responses item
            "arguments": {"action": {"type": "exec", "command": ["ls"], "env": {}}}},
           {"name": "shell", "arguments": {"cmd": "ls"},
            "object_arguments": true}                          # Chat: arguments as an object
         ],
         "stop_reason": "end_turn",    # optional: force the stop reason
         "chunk_size": 8,              # optional per-turn overrides
         "delay": 0.01},
        {"text": "Done: 3 files."}
      ]
    }

**Which turn answers.** The server is stateless: turn ``i`` answers a request
whose conversation (``messages``) already holds ``i`` assistant messages. So
"call tool X", then "after the tool result, say Z" are two turns. The
Responses API has no assistant *messages* but a flat list of ``input`` items,
where one assistant turn is several items (its ``reasoning``, its text
``message``, one ``function_call`` per call): there, turn ``i`` answers an
``input`` that holds ``i`` *runs* of assistant items -- maximal sequences of
consecutive items that are an assistant-role message, a ``reasoning`` item or a
call item (``function_call``, ``custom_tool_call``, any ``*_call``, an
``mcp_approval_request``), separated by anything else (a user message, any
``*_call_output``, an ``mcp_approval_response``). Replaying a
response's ``output`` and then the call outputs therefore counts one turn, however
many calls it made (:func:`assistant_turns`). A request header
``x-railings-turn: N`` picks turn N explicitly. Past the last turn the server
repeats the last one (``on_exhausted: "repeat_last"``) or answers 400
(``"error"``).

**Assistant prefill** (Messages API). A conversation that *ends* with an assistant
message is a prefill: the model continues that message. The turn counted without it
answers, and when its ``text`` starts with the prefill's text only the rest is sent
(and counted as output); otherwise the turn is sent whole. A prefill that ends in
whitespace is answered 400 "final assistant content cannot end with trailing
whitespace", as the API does; with ``"prefill": false`` (a model that refuses prefill)
every prefill is answered 400 "This model does not support assistant message prefill.
The conversation must end with a user message.". A trailing assistant message that
holds a ``tool_use`` block is no prefill: it counts as a turn, as any other; nor is
a turn that stopped with ``pause_turn`` sent back whole, as the API's continuation of
a paused turn is: the next turn answers it.

**What a turn produces**, in this order: ``thinking`` (Anthropic ``thinking``
block with a signature; OpenAI ``reasoning_content`` deltas, as DeepSeek and
others send), ``text``, then each tool call. ``arguments`` is a JSON object
(serialized with ``json.dumps``, so ``{"a": 1}`` is sent as ``{"a": 1}``) or
a string sent verbatim, which may be invalid JSON on purpose.

**Call types.** ``type`` (default ``function``) is ``custom`` (a freeform
``custom_tool_call``: ``arguments`` is its input text), ``local_shell``,
``shell``, ``apply_patch``, ``computer`` (``arguments`` is the object of the
item's fields, e.g. ``{"action": {...}}``) or ``mcp_approval`` (an
``mcp_approval_request``, ``arguments`` the MCP call's JSON). The Responses API
sends each as its own item (``testing/wire_responses_items.py``); Chat
Completions and Messages send every call as a function call. ``object_arguments:
true`` makes Chat Completions send ``function.arguments`` as a JSON object: the
text parsed, and -- when the output limit cut it -- repaired, as servers that
parse the model's text themselves do.

**Large payloads.** Anywhere a string is expected (``text``, ``thinking``, and
any string inside ``arguments``), ``{"$filler": N}`` stands for N characters of
deterministic prose, so a 1 MB argument is one line of script.

**Stop reason.** Without ``stop_reason``: ``tool_use`` / ``tool_calls`` when
the turn has tool calls, else ``end_turn`` / ``stop``; ``max_tokens`` /
``length`` when the output was cut. A forced value may use either vocabulary
(``end_turn``, ``tool_use``, ``max_tokens``, ``stop_sequence``, ``refusal``,
``pause_turn`` or ``stop``, ``tool_calls``, ``length``, ``content_filter``); it
is translated per provider, and an unknown value is sent verbatim. The
Responses API has no stop reason, only a status: ``max_tokens`` / ``length``
become ``response.incomplete`` with ``incomplete_details.reason:
"max_output_tokens"``, ``refusal`` / ``content_filter`` an incomplete
``content_filter``, an unknown value an incomplete with that reason verbatim, and
the rest ``response.completed``.

**Token count.** One token per 4 characters (Unicode code points) of generated
output, counted over thinking, text and argument JSON together, rounded up:
``tokens = ceil(chars / 4)``. A request's ``max_tokens`` (OpenAI: also
``max_completion_tokens``; Responses: ``max_output_tokens``) M allows ``4 * M``
characters: longer output is cut at exactly that character, wherever it falls
(inside a word, inside a tool call's arguments, leaving e.g.
``{"command": "rm -rf /tmp/leg``), the stop reason becomes ``max_tokens`` /
``length``, and usage reports exactly M output tokens. Tool calls that did not
start before the cut are not sent. Input tokens are
``ceil(len(json.dumps(system, messages, tools)) / 4)`` (Responses: instructions,
input, tools).

**Quirks** of compatible endpoints (:mod:`railings.testing.quirks`), top-level or per
turn (the turn's value wins): ``"proof": false`` ends every stream without its proof
(``data: [DONE]``, ``message_stop`` ...: what the ``drop_terminator`` fault does, the
chunked body still ends cleanly); ``"null_stop_reason": true`` sends no stop reason
(Chat: ``finish_reason: null`` on every chunk; Messages: ``message_delta`` with
``stop_reason: null``; the other wires ignore it); ``"cut_stop_reason": "tool_calls"``
is the stop reason sent when the output limit cut the turn (vLLM reports ``tool_calls``
there; usage still reaches the limit); ``"keepalives": N`` sends N ``: keep-alive``
comments before the first event (SSE wires), ``"keepalive_delay": S`` seconds apart.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from railings.errors import ConfigurationError
from railings.testing.plan import (
    TOKEN_CHARS,
    Plan,
    PlannedCall,
    anthropic_stop_reason,
    assistant_turns,
    count_tokens,
    openai_finish_reason,
    plan_turn,
    positive_int,
    responses_status,
)
from railings.testing.quirks import KEYS as QUIRK_KEYS
from railings.testing.quirks import NO_QUIRKS, Quirks
from railings.testing.script_values import (
    expand,
    filler,
    non_negative,
    positive_int_or_none,
    string,
)

__all__ = [
    "TOKEN_CHARS",
    "Plan",
    "PlannedCall",
    "Script",
    "ScriptTurn",
    "ToolCallSpec",
    "anthropic_stop_reason",
    "assistant_turns",
    "count_tokens",
    "filler",
    "openai_finish_reason",
    "plan_turn",
    "positive_int",
    "responses_status",
]

DEFAULT_CHUNK_SIZE = 16

# Call types a script may ask for (railings.events.CallType): a ``function`` everywhere;
# the others are Responses API items, sent as plain function calls on the other wires.
CALL_TYPES = (
    "function",
    "custom",
    "local_shell",
    "shell",
    "apply_patch",
    "computer",
    "mcp_approval",
)


def _check_keys(data: Mapping[str, Any], cls: type[Any], where: str, *extra: str) -> None:
    """An unknown key is a :class:`~railings.errors.ConfigurationError` naming ``where``:
    the keys are the fields of ``cls`` (its ``quirks`` spelled as the quirk keys, which
    ``extra`` gives) and ``extra``."""
    unknown = set(data) - {f.name for f in dataclasses.fields(cls) if f.name != "quirks"}
    unknown -= set(extra)
    if unknown:
        raise ConfigurationError(f"{where}: unknown keys {sorted(unknown)}")


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    """One tool call a turn makes. ``arguments`` is the exact text sent (JSON, or a
    ``custom`` call's freeform input). ``type`` is the call type; ``object_arguments``
    makes the Chat wire send ``function.arguments`` as an object, the way servers that
    parse (and repair) the model's text do."""

    name: str
    arguments: str
    id: str | None = None
    type: str = "function"
    object_arguments: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "tool_call") -> ToolCallSpec:
        """One call from its script object; an object ``arguments`` is serialized, and a
        malformed call is a :class:`~railings.errors.ConfigurationError` naming ``where``."""
        if not isinstance(data, Mapping) or not isinstance(data.get("name"), str):
            raise ConfigurationError(f"{where}: needs a string 'name'")
        _check_keys(data, cls, where)
        args = expand(data.get("arguments", {}), f"{where}.arguments")
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        call_id = data.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise ConfigurationError(f"{where}.id: expected a string")
        call_type = data.get("type", "function")
        if call_type not in CALL_TYPES:
            raise ConfigurationError(f"{where}.type: one of {', '.join(CALL_TYPES)}")
        as_object = data.get("object_arguments", False)
        if not isinstance(as_object, bool):
            raise ConfigurationError(f"{where}.object_arguments: expected true or false")
        return cls(data["name"], args, call_id, call_type, as_object)


@dataclass(frozen=True, slots=True)
class ScriptTurn:
    """One assistant turn: thinking, text, tool calls, and optional overrides."""

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    stop_reason: str | None = None
    chunk_size: int | None = None
    delay: float | None = None
    quirks: Quirks = NO_QUIRKS

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "turn") -> ScriptTurn:
        """One turn from its script object, ``$filler`` expanded; an unknown key or a wrong
        type is a :class:`~railings.errors.ConfigurationError` naming ``where``."""
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"{where}: expected an object")
        _check_keys(data, cls, where, *QUIRK_KEYS)
        calls = data.get("tool_calls", [])
        if not isinstance(calls, list):
            raise ConfigurationError(f"{where}.tool_calls: expected a list")
        stop = data.get("stop_reason")
        if stop is not None and not isinstance(stop, str):
            raise ConfigurationError(f"{where}.stop_reason: expected a string")
        return cls(
            text=string(data.get("text", ""), f"{where}.text"),
            thinking=string(data.get("thinking", ""), f"{where}.thinking"),
            tool_calls=tuple(
                ToolCallSpec.from_dict(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls)
            ),
            stop_reason=stop,
            chunk_size=positive_int_or_none(data.get("chunk_size"), f"{where}.chunk_size"),
            delay=non_negative(data.get("delay"), f"{where}.delay"),
            quirks=Quirks.from_dict(data, where),
        )


@dataclass(frozen=True, slots=True)
class Script:
    """A whole script (see the module docstring for the JSON format)."""

    turns: tuple[ScriptTurn, ...]
    model: str | None = None
    api_key: str | None = None
    require_api_key: bool = False
    chunk_size: int = DEFAULT_CHUNK_SIZE
    delay: float = 0.0
    ping: bool = True
    on_exhausted: Literal["repeat_last", "error"] = "repeat_last"
    seed: int | None = None
    quirks: Quirks = NO_QUIRKS
    prefill: bool = True  # False: the model refuses an assistant prefill (Messages API)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Script:
        """A script from its parsed JSON; an unknown key, a wrong type or no turns is a
        :class:`~railings.errors.ConfigurationError`."""
        if not isinstance(data, Mapping):
            raise ConfigurationError("script: expected a JSON object")
        _check_keys(data, cls, "script", "description", *QUIRK_KEYS)
        turns = data.get("turns")
        if not isinstance(turns, list) or not turns:
            raise ConfigurationError("script: 'turns' must be a non-empty list")
        exhausted = data.get("on_exhausted", "repeat_last")
        if exhausted not in ("repeat_last", "error"):
            raise ConfigurationError("script.on_exhausted: 'repeat_last' or 'error'")
        for key in ("model", "api_key"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise ConfigurationError(f"script.{key}: expected a string")
        prefill = data.get("prefill", True)
        if not isinstance(prefill, bool):
            raise ConfigurationError("script.prefill: expected true or false")
        seed = data.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ConfigurationError("script.seed: expected an integer")
        return cls(
            turns=tuple(ScriptTurn.from_dict(t, f"turns[{i}]") for i, t in enumerate(turns)),
            model=data.get("model"),
            api_key=data.get("api_key"),
            require_api_key=bool(data.get("require_api_key", False)),
            chunk_size=positive_int_or_none(data.get("chunk_size"), "script.chunk_size")
            or DEFAULT_CHUNK_SIZE,
            delay=non_negative(data.get("delay"), "script.delay") or 0.0,
            ping=bool(data.get("ping", True)),
            on_exhausted=exhausted,
            seed=seed,
            quirks=Quirks.from_dict(data, "script"),
            prefill=prefill,
        )

    @classmethod
    def load(cls, path: str | Path) -> Script:
        """Read a JSON script file."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"cannot read script {path}: {exc}") from exc
        return cls.from_dict(data)

    @classmethod
    def demo(cls) -> Script:
        """The bundled coding-agent demonstration (``testing/scripts/demo.json``)."""
        source = resources.files("railings.testing").joinpath("scripts/demo.json")
        return cls.from_dict(json.loads(source.read_text(encoding="utf-8")))

    @classmethod
    def text(cls, text: str, **options: Any) -> Script:
        """A one-turn script that answers ``text``."""
        return cls.from_dict({"turns": [{"text": text}], **options})

    @property
    def key_required(self) -> bool:
        """True when a request must carry a key: ``require_api_key``, or an ``api_key``."""
        return self.require_api_key or self.api_key is not None

    def turn_index(self, messages: Sequence[Any]) -> int:
        """Turn i answers a conversation that already holds i assistant messages."""
        return sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant")

    def quirks_of(self, turn: ScriptTurn) -> Quirks:
        """The quirks ``turn`` is sent with: its own, else the script's."""
        return turn.quirks.over(self.quirks)

    def select(self, index: int) -> ScriptTurn | None:
        """The turn for ``index``, or None when the script is exhausted and says ``error``."""
        if 0 <= index < len(self.turns):
            return self.turns[index]
        if index < 0 or self.on_exhausted == "error":
            return None
        return self.turns[-1]
