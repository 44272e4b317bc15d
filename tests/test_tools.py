"""Tools: the decorator, the derived schemas, bad definitions, the registry, execution."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any, Literal, Optional

import pytest

from railings.dispatch import (
    Execution,
    Tool,
    ToolFailure,
    ToolRegistry,
    derive_schema,
    execute,
    schema_problems,
    tool,
)
from railings.errors import ToolDefinitionError


def test_schema_is_derived_from_a_typed_signature() -> None:
    def search(
        query: str,
        limit: int = 10,
        ratio: float = 0.5,
        exact: bool = False,
        tags: list[str] | None = None,
        mode: Literal["fast", "deep"] = "fast",
        extra: dict[str, int] | None = None,
        anything: Any = None,
        legacy: Optional[int] = None,  # noqa: UP045 -- the old spelling must work too
        items: list = [],  # noqa: B006 -- never mutated; shows a bare list
    ) -> str:
        return query

    assert derive_schema(search) == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "ratio": {"type": "number", "default": 0.5},
            "exact": {"type": "boolean", "default": False},
            "tags": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
            },
            "mode": {"enum": ["fast", "deep"], "default": "fast"},
            "extra": {
                "anyOf": [
                    {"type": "object", "additionalProperties": {"type": "integer"}},
                    {"type": "null"},
                ],
                "default": None,
            },
            "anything": {"default": None},
            "legacy": {"type": ["integer", "null"], "default": None},
            "items": {"type": "array", "default": []},
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_the_docstring_is_the_manual_and_its_args_describe_the_parameters() -> None:
    @tool(read_only=True)
    def grep(pattern: str, path: Annotated[str, "Where to look."] = ".") -> str:
        """Search files for a pattern.

        Returns matching lines.

        Args:
            pattern: A regular expression,
                in Python syntax.
            path (str): Ignored here: Annotated text wins.
        """
        return pattern

    assert grep.name == "grep"
    assert grep.description == "Search files for a pattern.\n\nReturns matching lines."
    assert grep.parameters["properties"] == {
        "pattern": {"type": "string", "description": "A regular expression, in Python syntax."},
        "path": {"type": "string", "description": "Where to look.", "default": "."},
    }
    assert grep.read_only and not grep.speculative
    assert grep("x") == "x"  # the decorated function is still a function


def test_an_explicit_schema_replaces_the_derived_one() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}

    @tool(name="count-up", description="Count.", schema=schema)
    def count(**kwargs: Any) -> int:
        return int(kwargs["n"])

    assert (count.name, count.description, dict(count.parameters)) == ("count-up", "Count.", schema)
    assert count.to_openai() == {
        "type": "function",
        "function": {"name": "count-up", "description": "Count.", "parameters": schema},
    }
    assert count.to_anthropic() == {
        "name": "count-up",
        "description": "Count.",
        "input_schema": schema,
    }


def _untyped(path):  # type: ignore[no-untyped-def]
    return path


def _star(*paths: str) -> str:
    return ""


def _positional(path: str, /) -> str:
    return path


def _set(paths: set[str]) -> str:
    return ""


def _int_keys(table: dict[int, str]) -> str:
    return ""


def _unresolvable(x: NoSuchType) -> str:  # type: ignore[name-defined]  # noqa: F821
    return ""


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (_untyped, "has no type annotation"),
        (_star, "keyword arguments only"),
        (_positional, "keyword arguments only"),
        (_set, "unsupported type"),
        (_int_keys, "keys are strings"),
        (_unresolvable, "cannot read its signature"),
    ],
)
def test_a_signature_that_cannot_be_a_schema_is_refused(function: Any, message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        tool(function)


def _noop() -> None:
    return None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "has space"}, "must be 1-64 letters"),
        ({"name": "x" * 65}, "must be 1-64 letters"),
        ({"speculative": True}, "only allowed for read-only tools"),
        ({"schema": {"type": "array"}}, '"type": "object"'),
        ({"schema": {"type": "object", "properties": {"a": {"type": 5}}}}, "invalid JSON Schema"),
        ({"schema": {"type": "object", "default": {1, 2}}}, "not JSON"),
    ],
)
def test_a_bad_definition_is_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        tool(**options)(_noop)


def test_a_tool_needs_a_callable() -> None:
    with pytest.raises(ToolDefinitionError, match="not callable"):
        Tool("x", "", {"type": "object"}, function="nope")  # type: ignore[arg-type]


def test_the_registry_holds_unique_names() -> None:
    registry = ToolRegistry([_noop])

    @registry.tool(read_only=True)
    def look(path: str) -> str:
        return path

    assert registry.names == ("_noop", "look")
    assert "look" in registry and len(registry) == 2
    assert registry.get("missing") is None and registry["look"] is look
    assert [t["function"]["name"] for t in registry.to_openai()] == ["_noop", "look"]
    assert [t["name"] for t in registry.to_anthropic()] == ["_noop", "look"]
    with pytest.raises(ToolDefinitionError, match="already registered"):
        registry.add(tool(name="look")(_noop))


def test_schema_problems_name_the_path_and_the_problem() -> None:
    schema = derive_schema(_typed_for_problems)
    assert schema_problems(schema, {"paths": ["a", 3], "depth": 1}) == []
    assert schema_problems(schema, {"paths": ["a", None], "depth": 1}) == [
        "at $.paths[1]: None is not of type 'string', 'integer'"
    ]
    assert schema_problems(schema, {"paths": [True], "extra": 1}) == [
        "at $: 'depth' is a required property",
        "at $: Additional properties are not allowed ('extra' was unexpected)",
        "at $.paths[0]: True is not of type 'string', 'integer'",
    ]


def _typed_for_problems(paths: list[str | int], depth: int) -> None:
    return None


# -- execution -------------------------------------------------------------------------------


def test_async_and_sync_tools_run_and_their_results_become_text() -> None:
    threads: list[str] = []

    @tool
    async def add(a: int, b: int) -> int:
        return a + b

    @tool
    def describe(name: str) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return {"name": name, "ok": True}

    @tool
    def nothing() -> None:
        return None

    async def main() -> list[Execution]:
        return [
            await execute(add, {"a": 2, "b": 3}),
            await execute(describe, {"name": "é"}),
            await execute(nothing, {}),
        ]

    assert asyncio.run(main()) == [
        Execution(True, "5"),
        Execution(True, '{"name": "é", "ok": true}'),
        Execution(True, ""),
    ]
    assert threads and threads[0] != threading.main_thread().name  # sync tools use a worker


def test_a_raising_tool_is_a_failed_execution_with_its_message() -> None:
    @tool
    def fails(kind: str) -> str:
        if kind == "tool":
            raise ToolFailure("the file is locked; try again later")
        raise KeyError(kind)

    async def main() -> tuple[Execution, Execution]:
        return await execute(fails, {"kind": "tool"}), await execute(fails, {"kind": "other"})

    assert asyncio.run(main()) == (
        Execution(False, "the file is locked; try again later"),
        Execution(False, "KeyError: 'other'"),
    )
