"""The built-in tools: ``shell``, ``read_file``, ``write_file`` and ``list_dir``.

All four are confined to one working directory. A path is joined to it and
resolved -- ``..`` collapsed, every symbolic link followed -- and must still lie
inside it (``Path.is_relative_to``); otherwise the call fails with an error
that says which way the path escaped (``..``, an absolute path, or a link).
``shell`` starts its command in that directory; what the command itself then
does is not confined (that is what the approval gate is for).

Every process is started by :func:`spawn`, and only there: a test can spy on
that one function to prove what did -- and what never did -- reach a shell.

Each tool's manual (its description to the model) ends with the truncation
contract, :data:`~railings.dispatch.notices.TRUNCATION_CONTRACT`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, TextIO

from railings.dispatch.notices import TRUNCATION_CONTRACT
from railings.dispatch.tools import Tool, ToolFailure, tool
from railings.errors import ConfigurationError

__all__ = ["DEFAULT_MAX_OUTPUT", "DEFAULT_TIMEOUT", "builtin_tools", "confine", "spawn"]

DEFAULT_TIMEOUT = 60.0  # seconds a shell command may run
MAX_TIMEOUT = 600.0  # the most a model may ask for
DEFAULT_MAX_OUTPUT = 32_000  # bytes kept of each of stdout and stderr, and of a file read
MAX_ENTRIES = 500  # list_dir entries shown


async def spawn(command: str, cwd: Path) -> asyncio.subprocess.Process:
    """Start ``command`` in a shell in ``cwd``: the one place railings starts a process.

    It gets no stdin (a command waiting for input would only hang) and its own
    process group, so a timeout kills whatever it started too.
    """
    return await asyncio.create_subprocess_shell(
        command,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )


def confine(root: Path, path: str) -> Path:
    """``path`` resolved against ``root``; a :class:`ToolFailure` if it leads outside ``root``.

    ``root`` must already be resolved.
    """
    if "\x00" in path:
        raise ToolFailure(f"refused: the path {path!r} contains a NUL byte")
    joined = root / path
    try:
        target = joined.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
        raise ToolFailure(f"refused: cannot resolve the path {path!r}: {exc}") from exc
    if target.is_relative_to(root):
        return target
    if not Path(os.path.normpath(joined)).is_relative_to(root):
        if Path(path).is_absolute():
            why = "it is an absolute path outside the working directory"
        else:
            why = "its '..' components lead outside the working directory"
    else:
        why = "a symbolic link in it leads outside the working directory"
    raise ToolFailure(f"refused: the path {path!r} is not inside the working directory: {why}")


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


def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        process.kill()


def _open_regular(target: Path, path: str) -> TextIO:
    """``target`` opened for reading text, if it is a regular file.

    Opened without blocking and checked on the open descriptor, so a FIFO (whose
    open would wait for a writer forever) or a device is refused, and cannot be
    swapped in between a check and the open.
    """
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolFailure(f"refused: {path!r} is not a regular file")
        return open(fd, encoding="utf-8", errors="replace", newline="")
    except BaseException:
        os.close(fd)
        raise


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
) -> tuple[Tool, ...]:
    """``shell``, ``read_file``, ``write_file`` and ``list_dir``, confined to ``workdir``.

    ``timeout`` is the default for a shell command (the model may ask for up to
    :data:`MAX_TIMEOUT`); ``max_output`` caps each captured stream and each read.
    """
    root = Path(workdir).resolve()
    if not root.is_dir():
        raise ConfigurationError(f"working directory {str(workdir)!r} is not a directory")
    if max_output < 2:
        raise ConfigurationError("max_output must be at least 2 bytes")
    default_timeout = timeout

    @tool(
        repair=False,  # a command runs as the model wrote it, or not at all
        description=(
            f"Run a shell command in the working directory ({root}) and return its exit "
            f"code, stdout and stderr. The command is killed after `timeout` seconds "
            f"(default {timeout:g}, at most {MAX_TIMEOUT:g}); it gets no input. Output "
            f"above {max_output} bytes per stream is cut, keeping its start and its end, "
            f"and the result says so. {TRUNCATION_CONTRACT}"
        ),
    )
    async def shell(
        command: Annotated[str, "The command line, run by /bin/sh."],
        timeout: Annotated[float | None, "Seconds before the command is killed."] = None,
    ) -> str:
        limit = min(timeout if timeout and timeout > 0 else default_timeout, MAX_TIMEOUT)
        process = await spawn(command, root)
        out, err = _Capture(max_output), _Capture(max_output)
        try:
            async with asyncio.timeout(limit):
                await asyncio.gather(_drain(process.stdout, out), _drain(process.stderr, err))
                code = await process.wait()
        except TimeoutError:
            _kill(process)
            await process.wait()
            raise ToolFailure(
                f"the command timed out after {limit:g} s and was killed; "
                f"output so far:\n{_report(None, out, err)}"
            ) from None
        finally:
            if process.returncode is None:  # cancelled: leave nothing running
                _kill(process)
                await process.wait()
        return _report(code, out, err)

    @tool(
        read_only=True,
        speculative=True,
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
        target = confine(root, path)
        lines: list[str] = []
        size = 0
        line_no = 0
        try:
            with _open_regular(target, path) as fh:
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

    @tool(
        repair=False,  # the content is written as the model wrote it, or not at all
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
        target = confine(root, path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("a" if append else "w", encoding="utf-8", newline="") as fh:
                fh.write(content)
        except OSError as exc:
            raise ToolFailure(f"cannot write {path!r}: {exc.strerror or exc}") from exc
        size = len(content.encode())
        return f"{'appended' if append else 'wrote'} {size} bytes to {path}"

    @tool(
        read_only=True,
        speculative=True,
        description=(
            "List a directory inside the working directory, one entry per line, sorted; "
            f"directories end in '/', symbolic links in '@'. At most {MAX_ENTRIES} entries. "
            f"{TRUNCATION_CONTRACT}"
        ),
    )
    def list_dir(path: Annotated[str, "Relative to the working directory."] = ".") -> str:
        target = confine(root, path)
        try:
            with os.scandir(target) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError as exc:
            raise ToolFailure(f"cannot list {path!r}: {exc.strerror or exc}") from exc
        names = [
            e.name + ("@" if e.is_symlink() else "/" if e.is_dir() else "")
            for e in entries[:MAX_ENTRIES]
        ]
        if len(entries) > MAX_ENTRIES:
            names.append(f"[... {len(entries) - MAX_ENTRIES} more entries not shown]")
        return "\n".join(names) if names else "(empty directory)"

    return (shell, read_file, write_file, list_dir)
