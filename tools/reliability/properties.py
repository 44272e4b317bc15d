"""The properties every fuzz campaign checks, and the spy on the one place processes start.

Four properties, named as the campaigns report them:

``typed_errors_only``
    Feeding any bytes, split anywhere, raises nothing but a
    :class:`~railings.errors.RailingsError` (never ``KeyError``, ``IndexError``,
    ``UnicodeDecodeError``, ``RecursionError``, ``ValueError``...).
``never_clean_without_proof``
    A turn is reported clean only when a termination proof block was fed
    whole; a capture cut at any offset before its proof is never clean.
``no_truncated_execution``
    No call of a turn that is not clean executes, and no call of a turn
    stopped by the output limit executes unless its arguments parsed strictly.
``shell_never_reached``
    Dispatching the turn through the real ``shell`` tool, with
    :func:`railings.dispatch.builtins.spawn` replaced by :class:`ShellSpy`,
    starts a process only for calls whose verdict is *execute*: never one from
    an interrupted or truncated turn.

A broken property raises :class:`PropertyViolation` with what reproduces it.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections import Counter
from collections.abc import Coroutine, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from unittest import mock

from railings.dispatch import (
    CircuitBreaker,
    Dispatcher,
    Tool,
    ToolRegistry,
    builtin_tools,
    default_chain,
)
from railings.dispatch import builtins as builtins_module
from railings.errors import EventTooLarge, RailingsError
from railings.replay import Replay
from railings.turn.model import Turn
from railings.turn.reader import StreamReader
from railings.turn.verdict import judge
from tools.reliability.corpus import PROOF_MARKERS

__all__ = [
    "PROPERTIES",
    "PropertyViolation",
    "ShellSpy",
    "Tally",
    "check_no_truncated_execution",
    "check_not_clean",
    "check_proof_present",
    "feed",
]

T = TypeVar("T")

PROPERTIES = (
    "typed_errors_only",
    "never_clean_without_proof",
    "no_truncated_execution",
    "shell_never_reached",
)


class PropertyViolation(AssertionError):
    """A property failed; ``reproduce`` says with what input."""

    def __init__(self, prop: str, detail: str, reproduce: str = "") -> None:
        super().__init__(f"{prop}: {detail}" + (f"\n  reproduce: {reproduce}" if reproduce else ""))
        self.prop = prop
        self.detail = detail
        self.reproduce = reproduce


class Tally:
    """How many examples checked each property (what ``make fuzz`` prints)."""

    def __init__(self) -> None:
        self.checked: Counter[str] = Counter()
        self.typed_errors: Counter[str] = Counter()  # railings errors seen (allowed)
        # The positive control: shell runs of calls that were allowed to execute. A spy
        # that never sees a command proves nothing; this count shows it does see them.
        self.shell_runs = 0

    def __iadd__(self, other: Tally) -> Tally:
        self.checked.update(other.checked)
        self.typed_errors.update(other.typed_errors)
        self.shell_runs += other.shell_runs
        return self


def feed(
    body: bytes,
    cuts: Iterable[int] = (),
    *,
    provider: str = "auto",
    max_tokens: int | None = None,
    tally: Tally | None = None,
    reproduce: str = "",
) -> Replay | None:
    """Feed ``body`` split at ``cuts``, close, judge: the replay, or None when a
    :class:`RailingsError` escaped (allowed: typed). Anything else is a violation."""
    if tally is not None:
        tally.checked["typed_errors_only"] += 1
    try:
        reader = StreamReader(provider, max_tokens=max_tokens)
        last = 0
        try:
            for cut in sorted(set(cuts)):
                if 0 < cut < len(body):
                    reader.feed(body[last:cut])
                    last = cut
            reader.feed(body[last:])
        except EventTooLarge:
            pass  # the reader already ended the turn abruptly (as replay does)
        reader.close()
        turn = reader.turn()
        return Replay(turn, judge(turn))
    except RailingsError as exc:
        if tally is not None:
            tally.typed_errors[type(exc).__name__] += 1
        return None
    except BaseException as exc:  # the property: nothing else ever escapes
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        raise PropertyViolation(
            "typed_errors_only", f"{type(exc).__name__} escaped: {exc!r}"[:500], reproduce
        ) from exc


def check_not_clean(
    result: Replay, why: str, reproduce: str = "", tally: Tally | None = None
) -> None:
    """The turn must not be clean, and nothing in it may execute."""
    if tally is not None:
        tally.checked["never_clean_without_proof"] += 1
    if result.turn.complete:
        raise PropertyViolation("never_clean_without_proof", f"reported clean {why}", reproduce)
    check_no_truncated_execution(result, reproduce, tally)


def check_proof_present(
    result: Replay, fed: Sequence[bytes] | bytes, reproduce: str = "", tally: Tally | None = None
) -> None:
    """A clean turn must have been fed a proof (by bytes: one of :data:`PROOF_MARKERS`)."""
    if tally is not None:
        tally.checked["never_clean_without_proof"] += 1
    if not result.turn.complete:
        return
    data = fed if isinstance(fed, bytes) else b"".join(fed)
    if not any(marker in data for marker in PROOF_MARKERS):
        raise PropertyViolation(
            "never_clean_without_proof", "clean without any proof in the bytes", reproduce
        )


def check_no_truncated_execution(
    result: Replay, reproduce: str = "", tally: Tally | None = None
) -> None:
    """Execute only from a clean turn; in a truncated turn, only strictly parsed calls."""
    if tally is not None:
        tally.checked["no_truncated_execution"] += 1
    turn = result.turn
    for verdict in result.verdicts:
        if not verdict.execute:
            continue
        call = verdict.call
        if not turn.complete:
            raise PropertyViolation(
                "no_truncated_execution",
                f"call {call.name!r} executes from a turn that is {turn.outcome.value}",
                reproduce,
            )
        if turn.truncated and call.arguments is None:
            raise PropertyViolation(
                "no_truncated_execution",
                f"call {call.name!r} executes with arguments cut by the output limit: "
                f"{call.raw_arguments[:200]!r}",
                reproduce,
            )
        if not isinstance(verdict.arguments, dict):
            raise PropertyViolation(
                "no_truncated_execution", f"call {call.name!r} executes without an object"
            )


class _NoProcess:
    """What the spy hands the shell tool instead of a process: exited 0, no output."""

    returncode = 0
    stdout = None
    stderr = None
    pid = -1

    async def wait(self) -> int:
        return 0


def _marker(arguments: Any) -> str:
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        return "?"


class ShellSpy:
    """While active, :func:`railings.dispatch.builtins.spawn` only records its commands.

    :meth:`dispatch` runs a turn's calls through a :class:`Dispatcher` whose
    every tool, whatever the model named it, is the real built-in ``shell``
    tool run with ``echo <the call's arguments>``: a call that gets past the
    truncation gate and the chain reaches ``spawn`` and is recorded. Use as a
    context manager (it owns a temporary working directory and an event loop).
    """

    def __init__(self) -> None:
        self.commands: list[str] = []
        self._patch = mock.patch.object(builtins_module, "spawn", self._spawn)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._shell: Tool | None = None
        self._tools: dict[str, Tool] = {}

    @property
    def workdir(self) -> str:
        """The temporary working directory the spied tools are confined to."""
        assert self._tmp is not None, "use ShellSpy as a context manager"
        return self._tmp.name

    async def _spawn(self, command: str, cwd: Path, env: Any = None) -> _NoProcess:
        self.commands.append(command)
        return _NoProcess()

    def __enter__(self) -> ShellSpy:
        self._tmp = tempfile.TemporaryDirectory(prefix="railings-spy-")
        self._shell = next(t for t in builtin_tools(self._tmp.name) if t.name == "shell")
        self._loop = asyncio.new_event_loop()
        self._patch.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._patch.stop()
        if self._loop is not None:
            self._loop.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def adaptor(self, name: str) -> Tool | None:
        """A tool named ``name`` that runs the spied shell, or None for an invalid name."""
        if name not in self._tools:
            shell = self._shell
            assert shell is not None, "use ShellSpy as a context manager"

            async def run(**arguments: Any) -> Any:
                return await shell.function(command="echo " + _marker(arguments))

            try:
                self._tools[name] = Tool(name, "spy", {"type": "object"}, run)
            except RailingsError:  # a name no model API accepts: the call stays unknown
                return None
        return self._tools[name]

    def run(self, awaitable: Coroutine[Any, Any, T]) -> T:
        """Run ``awaitable`` on the spy's event loop."""
        assert self._loop is not None, "use ShellSpy as a context manager"
        return self._loop.run_until_complete(awaitable)

    def dispatch(self, turn: Turn) -> list[str]:
        """Dispatch ``turn`` and return the commands that reached ``spawn``."""
        registry = ToolRegistry()
        for name in dict.fromkeys(call.name for call in turn.tool_calls):
            adaptor = self.adaptor(name)
            if adaptor is not None:
                registry.add(adaptor)
        dispatcher = Dispatcher(
            registry,
            chain=default_chain(max_repeats=None),
            breaker=CircuitBreaker(max_failures=1_000_000),
        )
        before = len(self.commands)
        self.run(dispatcher.dispatch_turn(turn))
        return self.commands[before:]

    def check(self, result: Replay, reproduce: str = "", tally: Tally | None = None) -> None:
        """Property ``shell_never_reached`` for one judged turn."""
        if tally is not None:
            tally.checked["shell_never_reached"] += 1
        if not result.turn.tool_calls:
            return
        spawned = self.dispatch(result.turn)
        allowed = Counter("echo " + _marker(v.arguments) for v in result.verdicts if v.execute)
        if spawned and not result.turn.complete:
            raise PropertyViolation(
                "shell_never_reached",
                f"{len(spawned)} call(s) of a {result.turn.outcome.value} turn reached the shell",
                reproduce,
            )
        extra = Counter(spawned) - allowed
        if tally is not None:
            tally.shell_runs += len(spawned)
        if extra:
            raise PropertyViolation(
                "shell_never_reached",
                f"the shell ran {sorted(extra)[:3]} without an execute verdict",
                reproduce,
            )
