"""Tools: a name, a manual, an argument schema and a function; and the registry.

A :class:`Tool` is a frozen value. It is checked when it is made -- name, schema,
flags -- so a tool that cannot be offered to a model is a
:class:`~railings.errors.ToolDefinitionError` at import time, not at the first
call. :func:`tool` makes one from a typed function::

    @tool(read_only=True, speculative=True)
    def word_count(path: str, unique: bool = False) -> int:
        \"\"\"Count the words in a file.\"\"\"

Calls always pass keyword arguments, ``function(**arguments)``. A coroutine
function is awaited; a plain function runs in a worker thread of its own, so a
slow one does not stall the stream being read.

**Every call has a time limit**: ``timeout`` seconds (default
:data:`DEFAULT_TOOL_TIMEOUT`), after which the call fails with a message that
says so. A coroutine is cancelled then; a thread cannot be, so it is abandoned:
it is a daemon thread, not one of the event loop's executor, and neither the
loop's shutdown nor the interpreter's exit waits for it. A stuck tool (a FIFO
opened for writing, a lock never released) never holds the agent up.

``speculative`` (start the call while the turn is still streaming, see
:mod:`railings.dispatch.speculative`) is allowed only for ``read_only`` tools:
a speculative call may be cancelled half-way, and only a tool without effects
can be abandoned safely.

``approval(arguments)`` gives the reason one call of the tool must be approved by
the user whatever the approval rule says of the tool as a whole, or None: the
built-in ``write_file`` gives one for a path that configures later commands
(:mod:`railings.dispatch.configuring`).

``repair=False`` makes a tool run only on arguments that parse exactly as the
model sent them. In a turn that ended normally the repair ladder fixes
arguments a model fumbled (a code fence around them, a trailing comma, a string
left open); for a tool that acts on its arguments verbatim -- a shell command,
a file's content -- a guess is worse than a resend: the dispatcher rejects
such a call and tells the model what was wrong with it. The built-in ``shell``
and ``write_file`` are made this way.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from railings.dispatch.schema import check_schema, derive_schema, describe
from railings.errors import ToolDefinitionError

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "Execution",
    "Tool",
    "ToolFailure",
    "ToolRegistry",
    "execute",
    "tool",
]

DEFAULT_TOOL_TIMEOUT = 120.0  # seconds a tool call may take unless the tool says otherwise

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what both OpenAI and Anthropic accept


class ToolFailure(Exception):
    """Raised by a tool to fail with a message meant for the model.

    Not a :class:`~railings.errors.RailingsError`: it never leaves railings. The
    dispatcher catches it (like any exception a tool raises) and sends its
    message back as the call's error result.
    """


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """One tool as offered to the model and run by the dispatcher.

    ``parameters`` is the JSON Schema of the arguments object; ``description``
    is the manual the model reads; ``repair`` says whether arguments fixed by
    the repair ladder may run; ``timeout`` bounds each call in seconds (see the
    module docstring); ``approval(arguments)`` is why one call needs the user's approval
    whatever the rule for the tool says, or None (see the module docstring).
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any] = field(repr=False)
    read_only: bool = False
    speculative: bool = False
    repair: bool = True
    timeout: float = DEFAULT_TOOL_TIMEOUT
    approval: Callable[[Mapping[str, Any]], str | None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ToolDefinitionError(
                f"tool name {self.name!r} must be 1-64 letters, digits, '_' or '-'"
            )
        if not callable(self.function):
            raise ToolDefinitionError(f"tool {self.name!r}: function is not callable")
        if self.speculative and not self.read_only:
            raise ToolDefinitionError(
                f"tool {self.name!r}: speculative start is only allowed for read-only tools"
            )
        if (
            not isinstance(self.timeout, int | float)
            or isinstance(self.timeout, bool)
            or not math.isfinite(self.timeout)
            or self.timeout <= 0
        ):
            raise ToolDefinitionError(
                f"tool {self.name!r}: timeout must be a positive number of seconds, "
                f"not {self.timeout!r}"
            )
        check_schema(self.parameters, self.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly (a decorated function stays usable as a function)."""
        return self.function(*args, **kwargs)

    def definition(self) -> dict[str, Any]:
        """Provider-neutral: ``{"name", "description", "parameters"}``."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
        }

    def to_openai(self) -> dict[str, Any]:
        """The Chat Completions ``tools[]`` entry."""
        return {"type": "function", "function": self.definition()}

    def to_anthropic(self) -> dict[str, Any]:
        """The Messages API ``tools[]`` entry."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.parameters),
        }


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    schema: Mapping[str, Any] | None = None,
    read_only: bool = False,
    speculative: bool = False,
    repair: bool = True,
    timeout: float = DEFAULT_TOOL_TIMEOUT,
    approval: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    schema: Mapping[str, Any] | None = None,
    read_only: bool = False,
    speculative: bool = False,
    repair: bool = True,
    timeout: float = DEFAULT_TOOL_TIMEOUT,
    approval: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a :class:`Tool` from a function: ``@tool`` or ``@tool(read_only=True, ...)``.

    The name defaults to the function's, the description to its docstring (without
    the ``Args:`` section, whose lines describe the parameters), the schema to one
    derived from its typed signature. An explicit ``schema`` replaces the derived
    one and must be a valid JSON Schema of type ``object``.
    """

    def make(fn: Callable[..., Any]) -> Tool:
        return Tool(
            name=name or str(getattr(fn, "__name__", "")),
            description=description if description is not None else describe(fn),
            parameters=dict(schema) if schema is not None else derive_schema(fn),
            function=fn,
            read_only=read_only,
            speculative=speculative,
            repair=repair,
            timeout=timeout,
            approval=approval,
        )

    return make if function is None else make(function)


class ToolRegistry:
    """The tools one agent offers, by name. Names are unique."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.add(item)

    def add(self, item: Tool | Callable[..., Any]) -> Tool:
        """Register a :class:`Tool`, or a plain typed function (made into one by :func:`tool`)."""
        made = item if isinstance(item, Tool) else tool(item)
        if made.name in self._tools:
            raise ToolDefinitionError(f"tool {made.name!r} is already registered")
        self._tools[made.name] = made
        return made

    def tool(self, **options: Any) -> Callable[[Callable[..., Any]], Tool]:
        """``@registry.tool(read_only=True)``: :func:`tool`, then :meth:`add`."""
        return lambda fn: self.add(tool(**options)(fn))

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None when there is none."""
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> tuple[str, ...]:
        """The tool names, in the order the tools were added."""
        return tuple(self._tools)

    def to_openai(self) -> list[dict[str, Any]]:
        """The Chat Completions ``tools`` list, in the order the tools were added."""
        return [t.to_openai() for t in self]

    def to_anthropic(self) -> list[dict[str, Any]]:
        """The Messages API ``tools`` list, in the order the tools were added."""
        return [t.to_anthropic() for t in self]


@dataclass(frozen=True, slots=True)
class Execution:
    """What running a tool produced: ``ok`` False when it raised."""

    ok: bool
    content: str


async def execute(target: Tool, arguments: Mapping[str, Any]) -> Execution:
    """Run ``target`` with ``arguments`` within its ``timeout``; any exception it raises,
    and the time limit passing, become a failed :class:`Execution`. Cancellation is
    not an exception of the tool: it propagates."""
    limit = asyncio.timeout(target.timeout)
    try:
        async with limit:
            if inspect.iscoroutinefunction(target.function):
                value = await target.function(**arguments)
            else:
                value = await _in_thread(target, arguments)
                if inspect.isawaitable(value):
                    value = await value
    except ToolFailure as exc:
        return Execution(False, str(exc))
    except TimeoutError as exc:
        if not limit.expired():  # the tool's own TimeoutError
            return Execution(False, f"{type(exc).__name__}: {exc}")
        return Execution(
            False,
            f"the tool {target.name!r} did not finish within {target.timeout:g} s; "
            "the call was abandoned and its result, if any, is discarded",
        )
    except Exception as exc:
        return Execution(False, f"{type(exc).__name__}: {exc}")
    return Execution(True, _text(value))


async def _in_thread(target: Tool, arguments: Mapping[str, Any]) -> Any:
    """``target.function(**arguments)`` in a daemon thread of its own (see the module
    docstring: a thread that never returns is abandoned, never joined)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # timed out or cancelled meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def work() -> None:
        try:
            value, error = context.run(target.function, **arguments), None
        except BaseException as exc:  # handed to the awaiting task, which decides
            value, error = None, exc
        # RuntimeError: the loop is gone, and nobody waits for this result any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=f"railings tool {target.name}", daemon=True).start()
    return await future


def _text(value: Any) -> str:
    """A tool's return value as the text the model reads."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
