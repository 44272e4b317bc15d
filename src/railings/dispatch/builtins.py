"""The built-in tools: ``shell``, ``read_file``, ``write_file`` and ``list_dir``.

All four are confined to one working directory. The file tools go through
:class:`~railings.dispatch.files.Root`: a path is normalized against the root and
then walked down one component at a time from a descriptor of the root, never
following a link out, so a path that escapes -- by ``..``, as an absolute path,
or through a link, even one swapped in while the tool runs -- fails with an
error that says which way it escaped. Writes go through a temporary file
renamed into place; FIFOs, sockets and devices are refused without blocking.
A write to a path that configures later commands (``.git/``, a ``Makefile``, an
``.envrc``, ...: :mod:`railings.dispatch.configuring`) asks for approval like a
command, whatever the approval rule says of ``write_file``.

``shell`` starts its command in that directory, under a supervisor, with an
environment built from an allow-list (:mod:`railings.dispatch.shell`): the
command never sees the user's keys, and nothing it starts outlives it. What the
command itself then does is not confined (that is what the approval gate is
for; docs/SECURITY.md draws the line).

Every process is started by :func:`spawn`, and only there: a test can spy on
that one function to prove what did -- and what never did -- reach a shell.

Each tool's manual (its description to the model) ends with the truncation
contract, :data:`~railings.dispatch.notices.TRUNCATION_CONTRACT`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, TextIO

from railings.dispatch.configuring import configures_commands
from railings.dispatch.files import Root
from railings.dispatch.notices import TRUNCATION_CONTRACT
from railings.dispatch.shell import (
    PIPE_GRACE,
    STOP_GRACE,
    command_environment,
    exited,
    stop,
    supervised_argv,
)
from railings.dispatch.tools import Tool, ToolFailure, tool
from railings.errors import ConfigurationError

__all__ = ["DEFAULT_MAX_OUTPUT", "DEFAULT_TIMEOUT", "builtin_tools", "confine", "spawn"]

DEFAULT_TIMEOUT = 60.0  # seconds a shell command may run
MAX_TIMEOUT = 600.0  # the most a model may ask for
DEFAULT_MAX_OUTPUT = 32_000  # bytes kept of each of stdout and stderr, and of a file read
MAX_ENTRIES = 500  # list_dir entries shown
FILE_TOOL_TIMEOUT = 60.0  # seconds a file tool may take (a slow network mount)


async def spawn(
    command: str, cwd: Path, env: Mapping[str, str] | None = None
) -> asyncio.subprocess.Process:
    """Start ``command`` in a shell in ``cwd``: the one place railings starts a process.

    It runs under the supervisor of :mod:`railings.dispatch.shell`, in a session
    of its own, with ``env`` (default: :func:`command_environment`, the
    allow-list alone) and no stdin (a command waiting for input would only hang).
    """
    return await asyncio.create_subprocess_exec(
        *supervised_argv(command),
        cwd=cwd,
        env=dict(command_environment() if env is None else env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )


def confine(root: Path, path: str) -> Path:
    """Where ``path`` leads inside ``root``; a :class:`ToolFailure` if it leads outside ``root``.

    ``root`` must already be resolved. The file tools do not open what this
    returns: they walk the path again from a descriptor of the root, so a link
    swapped in after this check cannot take them out.
    """
    return Root(root).resolve(path)


class _Capture:
    """Keeps the first and the last ``limit // 2`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.half:  # trim rarely: amortized linear
                del self.tail[: -self.half]

    def text(self, label: str) -> str:
        tail = bytes(self.tail[-self.half :])
        kept = len(self.head) + len(tail)
        if kept == self.total:
            return (bytes(self.head) + tail).decode("utf-8", "replace")
        note = (
            f"\n[... {label} cut: {self.total} bytes in all; shown are the first "
            f"{len(self.head)} and the last {len(tail)} ...]\n"
        )
        return self.head.decode("utf-8", "replace") + note + tail.decode("utf-8", "replace")


async def _drain(stream: asyncio.StreamReader | None, capture: _Capture) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        capture.add(chunk)


def _close(process: asyncio.subprocess.Process) -> None:
    """Close the pipes of a process whose output is no longer read (one that escaped may
    still hold them open)."""
    transport = getattr(process, "_transport", None)  # asyncio exposes no public close
    if transport is not None:
        transport.close()


def _lines(fh: TextIO, keep: int) -> Iterator[tuple[str, int]]:
    """Each line of ``fh`` as (its first ``keep`` characters, its length in bytes).

    Read in bounded pieces: a line of any length (a 1 GB file without a newline)
    costs memory for ``keep`` characters, not for the line.
    """
    while piece := fh.readline(keep):
        head, size = piece, len(piece.encode())
        while not piece.endswith(("\n", "\r")):
            piece = fh.readline(65536)
            if not piece:
                break
            size += len(piece.encode())
        yield head, size


def _report(code: int | None, out: _Capture, err: _Capture) -> str:
    parts = [f"exit code: {code}" if code is not None else "exit code: none (killed)"]
    if out.total:
        parts.append("stdout:\n" + out.text("stdout"))
    if err.total:
        parts.append("stderr:\n" + err.text("stderr"))
    if not out.total and not err.total:
        parts.append("(no output)")
    return "\n".join(parts)


def builtin_tools(
    workdir: str | os.PathLike[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    pass_env: Iterable[str] = (),
) -> tuple[Tool, ...]:
    """``shell``, ``read_file``, ``write_file`` and ``list_dir``, confined to ``workdir``.

    ``timeout`` is the default for a shell command (the model may ask for up to
    :data:`MAX_TIMEOUT`); ``max_output`` caps each captured stream and each read.
    ``pass_env`` names the environment variables a command may see beyond the
    allow-list of :func:`~railings.dispatch.shell.command_environment` (a
    trailing ``*`` matches a prefix); a name passed here is passed even when it
    says KEY, TOKEN or SECRET.
    """
    path = Path(workdir).resolve()
    if not path.is_dir():
        raise ConfigurationError(f"working directory {str(workdir)!r} is not a directory")
    if max_output < 2:
        raise ConfigurationError("max_output must be at least 2 bytes")
    root = Root(path)
    default_timeout = timeout
    passed = tuple(pass_env)
    shown = ", ".join(passed) if passed else "no other variable"

    @tool(
        repair=False,  # a command runs as the model wrote it, or not at all
        timeout=MAX_TIMEOUT + STOP_GRACE + PIPE_GRACE + 30,  # its own limit ends it first
        description=(
            f"Run a shell command in the working directory ({path}) and return its exit "
            f"code, stdout and stderr. The command is killed after `timeout` seconds "
            f"(default {timeout:g}, at most {MAX_TIMEOUT:g}); it gets no input, and what it "
            f"starts in the background is killed when it ends. Its environment holds only "
            f"PATH, HOME, LANG, LC_*, TERM, TMPDIR, USER, LOGNAME, SHELL and TZ, and "
            f"{shown}: no API keys. Output "
            f"above {max_output} bytes per stream is cut, keeping its start and its end, "
            f"and the result says so. {TRUNCATION_CONTRACT}"
        ),
    )
    async def shell(
        command: Annotated[str, "The command line, run by /bin/sh."],
        timeout: Annotated[float | None, "Seconds before the command is killed."] = None,
    ) -> str:
        limit = min(timeout if timeout and timeout > 0 else default_timeout, MAX_TIMEOUT)
        process = await spawn(command, path, command_environment(passed))
        out, err = _Capture(max_output), _Capture(max_output)
        drains = asyncio.gather(_drain(process.stdout, out), _drain(process.stderr, err))
        code: int | None = None
        open_pipes = False
        try:
            try:
                async with asyncio.timeout(limit):
                    code = await exited(process)
            except TimeoutError:
                await stop(process)  # the supervisor kills all the command started
            try:
                async with asyncio.timeout(PIPE_GRACE):  # output still in the pipes
                    await asyncio.shield(drains)
            except TimeoutError:
                open_pipes = True  # something that escaped holds them: stop waiting
        finally:
            await stop(process)  # cancelled: leave nothing running
            drains.cancel()
            _close(process)
        report = _report(code, out, err)
        if open_pipes:
            report += "\n[... output after the command ended was not waited for]"
        if code is None:
            raise ToolFailure(
                f"the command timed out after {limit:g} s and was killed; output so far:\n{report}"
            )
        return report

    @tool(
        read_only=True,
        speculative=True,
        timeout=FILE_TOOL_TIMEOUT,
        description=(
            "Read a text file inside the working directory. Returns up to `limit` lines "
            f"from line `offset` (1-based), at most {max_output} bytes; the result says "
            f"where to read on when there is more. {TRUNCATION_CONTRACT}"
        ),
    )
    def read_file(
        path: Annotated[str, "Relative to the working directory."],
        offset: Annotated[int, "The first line to return, from 1."] = 1,
        limit: Annotated[int | None, "How many lines at most."] = None,
    ) -> str:
        lines: list[str] = []
        size = 0
        line_no = 0
        try:
            with _text(root.open_regular(path)) as fh:
                for line_no, (line, length) in enumerate(_lines(fh, max_output + 1), start=1):
                    if line_no < offset:
                        continue
                    if not lines and length > max_output:  # one line above the cap
                        start = line.encode()[:max_output].decode("utf-8", "ignore")
                        return start + (
                            f"\n[... cut: line {line_no} has {length} bytes, shown is its "
                            f"start; the next line is offset={line_no + 1}]"
                        )
                    if (limit is not None and len(lines) >= limit) or size + length > max_output:
                        return "".join(lines) + (
                            f"\n[... cut: more lines follow; read on with offset={line_no}]"
                        )
                    lines.append(line)
                    size += length
        except OSError as exc:
            raise ToolFailure(f"cannot read {path!r}: {exc.strerror or exc}") from exc
        return "".join(lines)

    def configuring(arguments: Mapping[str, object]) -> str | None:
        target = arguments.get("path")
        return configures_commands(root, target) if isinstance(target, str) else None

    @tool(
        repair=False,  # the content is written as the model wrote it, or not at all
        timeout=FILE_TOOL_TIMEOUT,
        approval=configuring,  # a write that configures later commands asks, like a command
        description=(
            "Write a text file inside the working directory, creating missing parent "
            "directories. With `append`, add to the end of the file instead of replacing "
            "it: write a long file in several calls, the first without `append`, the rest "
            f"with it. {TRUNCATION_CONTRACT}"
        ),
    )
    def write_file(
        path: Annotated[str, "Relative to the working directory."],
        content: Annotated[str, "The text to write."],
        append: Annotated[bool, "Add to the end instead of replacing."] = False,
    ) -> str:
        data = content.encode()
        try:
            root.write(path, data, append=append)
        except OSError as exc:
            raise ToolFailure(f"cannot write {path!r}: {exc.strerror or exc}") from exc
        return f"{'appended' if append else 'wrote'} {len(data)} bytes to {path}"

    @tool(
        read_only=True,
        speculative=True,
        timeout=FILE_TOOL_TIMEOUT,
        description=(
            "List a directory inside the working directory, one entry per line, sorted; "
            f"directories end in '/', symbolic links in '@'. At most {MAX_ENTRIES} entries. "
            f"{TRUNCATION_CONTRACT}"
        ),
    )
    def list_dir(path: Annotated[str, "Relative to the working directory."] = ".") -> str:
        try:
            entries = sorted(root.list(path))
        except OSError as exc:
            raise ToolFailure(f"cannot list {path!r}: {exc.strerror or exc}") from exc
        names = [name + kind for name, kind in entries[:MAX_ENTRIES]]
        if len(entries) > MAX_ENTRIES:
            names.append(f"[... {len(entries) - MAX_ENTRIES} more entries not shown]")
        return "\n".join(names) if names else "(empty directory)"

    return (shell, read_file, write_file, list_dir)


def _text(fd: int) -> TextIO:
    return open(fd, encoding="utf-8", errors="replace", newline="")
