"""Argument schemas: derived from a typed signature, checked at registration, enforced
before execution.

A tool's arguments are described by one JSON Schema object. :func:`derive_schema`
writes it from a Python signature; :func:`check_schema` refuses a hand-written
one that is not a valid schema for a JSON object; :func:`schema_problems` lists,
with the JSON path of each, why a call's arguments do not match. The validation
itself is ``jsonschema``'s: no hand-written checks.

Types a signature may use, and the schema each becomes:

==================================  ==========================================
``str`` / ``int`` / ``float``       ``string`` / ``integer`` / ``number``
``bool``                            ``boolean``
``list`` / ``list[T]``              ``array`` (``items`` from ``T``)
``dict`` / ``dict[str, T]``         ``object`` (``additionalProperties`` from ``T``)
``Literal["a", "b"]``               ``enum``
``T | None`` / ``Optional[T]``      ``T`` or ``null``
``A | B``                           ``anyOf``
``Any``                             any value
``Annotated[T, "text"]``            ``T`` with ``description`` "text"
==================================  ==========================================

A parameter with a default is optional; one without is required. Anything else
(``*args``, a positional-only parameter, a missing annotation, an unknown type)
is a :class:`~railings.errors.ToolDefinitionError` at registration, not a
surprise at call time.
"""

from __future__ import annotations

import inspect
import itertools
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

# jsonschema ships no type stubs (types-jsonschema is not a dependency).
from jsonschema import Draft202012Validator, SchemaError  # type: ignore[import-untyped]
from jsonschema.validators import validator_for  # type: ignore[import-untyped]

from railings.errors import ToolDefinitionError

__all__ = ["check_schema", "derive_schema", "describe", "schema_problems"]

MAX_PROBLEMS = 5
"""At most this many schema problems are reported to the model for one call."""

_SCALARS: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARGS_HEADING = re.compile(r"^(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def derive_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """The JSON Schema of ``function``'s keyword arguments (see the module table)."""
    where = getattr(function, "__qualname__", repr(function))
    try:
        signature = inspect.signature(function)
        hints = typing.get_type_hints(function, include_extras=True)
    except (TypeError, ValueError, NameError) as exc:
        raise ToolDefinitionError(f"tool {where}: cannot read its signature: {exc}") from exc
    notes = _docstring_arguments(inspect.getdoc(function) or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in signature.parameters.items():
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise ToolDefinitionError(
                f"tool {where}: parameter {name!r} is {parameter.kind.description}; "
                "a tool is called with keyword arguments only"
            )
        if name not in hints:
            raise ToolDefinitionError(f"tool {where}: parameter {name!r} has no type annotation")
        prop = _schema_for(hints[name], f"tool {where}, parameter {name!r}")
        if name in notes and "description" not in prop:
            prop["description"] = notes[name]
        if parameter.default is parameter.empty:
            required.append(name)
        elif _is_json(parameter.default):
            prop["default"] = parameter.default
        properties[name] = prop
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def describe(function: Callable[..., Any]) -> str:
    """The docstring of ``function`` without its ``Args:`` section: the tool's manual."""
    lines = (inspect.getdoc(function) or "").splitlines()
    return "\n".join(itertools.takewhile(lambda line: not _ARGS_HEADING.match(line), lines)).strip()


def check_schema(schema: Mapping[str, Any], name: str) -> None:
    """Refuse a schema that is not a valid JSON Schema describing a JSON object."""
    if not isinstance(schema, Mapping):
        raise ToolDefinitionError(f"tool {name!r}: the schema must be a JSON object")
    if schema.get("type") != "object":
        raise ToolDefinitionError(f'tool {name!r}: the arguments schema must have "type": "object"')
    try:
        json.dumps(schema)
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        raise ToolDefinitionError(f"tool {name!r}: invalid JSON Schema: {exc.message}") from exc
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"tool {name!r}: the schema is not JSON: {exc}") from exc


def schema_problems(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """Why ``arguments`` do not match ``schema``: one line per problem, JSON path first.

    Empty when they match. At most :data:`MAX_PROBLEMS` lines, in path order.
    """
    validator = validator_for(schema, default=Draft202012Validator)(schema)
    errors = sorted(validator.iter_errors(arguments), key=lambda e: (e.json_path, e.message))
    return [f"at {error.json_path}: {error.message}" for error in errors[:MAX_PROBLEMS]]


def _schema_for(annotation: Any, where: str) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is Any:
        return {}
    if origin is typing.Annotated:
        inner = _schema_for(args[0], where)
        text = next((a for a in args[1:] if isinstance(a, str)), None)
        if text:
            inner["description"] = text
        return inner
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    if annotation is type(None):
        return {"type": "null"}
    if annotation is list or origin is list:
        if not args:
            return {"type": "array"}
        return {"type": "array", "items": _schema_for(args[0], where)}
    if annotation is dict or origin is dict:
        if args and args[0] is not str:
            raise ToolDefinitionError(f"{where}: JSON object keys are strings, not {args[0]!r}")
        if len(args) == 2:
            return {"type": "object", "additionalProperties": _schema_for(args[1], where)}
        return {"type": "object"}
    if origin is Literal:
        if not all(_is_json(a) and not isinstance(a, (list, dict)) for a in args):
            raise ToolDefinitionError(f"{where}: Literal values must be JSON scalars")
        return {"enum": list(args)}
    if origin is Union or origin is types.UnionType:
        return _union([_schema_for(a, where) for a in args])
    raise ToolDefinitionError(f"{where}: unsupported type {annotation!r} for a tool argument")


def _union(options: list[dict[str, Any]]) -> dict[str, Any]:
    """``T | None`` as ``{"type": [t, "null"]}`` when ``T`` is a plain type; else ``anyOf``."""
    kinds = [o.get("type") for o in options]
    if all(isinstance(k, str) for k in kinds) and all(len(o) == 1 for o in options):
        return {"type": kinds}
    return {"anyOf": options}


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _docstring_arguments(doc: str) -> dict[str, str]:
    """Per-argument text from a Google-style ``Args:`` section (``name: text`` lines;
    deeper-indented lines continue the previous argument)."""
    notes: dict[str, str] = {}
    inside = False
    current: str | None = None
    indent: int | None = None
    for line in doc.splitlines():
        if _ARGS_HEADING.match(line):
            inside = True
            continue
        if not inside or not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if depth == 0:
            break  # the next section
        match = _ARG_LINE.match(line)
        if match and (indent is None or depth <= indent):
            indent = depth
            current = match[1]
            notes[current] = match[2].strip()
        elif current is not None:
            notes[current] = f"{notes[current]} {line.strip()}".strip()
    return notes
