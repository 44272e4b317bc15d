"""Confined file access for the built-in tools: no path, link or race leads outside the root.

Theory of operation. Checking a path and then opening it by name is a race: a
process (a command the model started earlier is enough) can swap a checked file
for a symbolic link between the two. So nothing here opens a path by name from
the top. Every operation:

1. normalizes the path *lexically* against the root (``..`` collapsed); a path
   that leaves the root then is refused, saying whether ``..`` or an absolute
   path took it out;
2. opens the root by its descriptor (checked by ``fstat`` to still be the
   directory the tools were made for) and walks down **one component at a time**,
   each directory opened relative to the previous one with ``O_NOFOLLOW`` (what
   ``openat`` does; ``os.open(..., dir_fd=...)``). A component that is a
   symbolic link is read (``readlinkat``) and its target spliced into the walk:
   a target that leaves the root -- absolute outside it, or with more ``..``
   than the walk has directories -- is refused. A link that stays inside is
   followed, like ``openat2(RESOLVE_IN_ROOT)`` but refusing instead of clamping;
3. opens the last component itself with ``O_NOFOLLOW | O_NONBLOCK`` and checks
   the open descriptor (``fstat``): reading takes a regular file only, listing a
   directory only. FIFOs, sockets and devices are refused, and never block: the
   open does not wait for a writer, and nothing is ever opened for writing but
   a fresh file;
4. writes through a temporary file created (``O_CREAT | O_EXCL | O_NOFOLLOW``)
   in the target's directory descriptor, then renamed over the name
   (``renameat``), which replaces whatever is there -- a link swapped in
   included -- without following it. An existing file is replaced only when it
   is a regular file with one link: a hard link to a file outside the root
   (``st_nlink > 1``) is refused, not written through. Its mode is kept.

What a swap can still do is make an operation fail (the link it met is refused),
never make it act outside the root.
"""

from __future__ import annotations

import collections
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar

from railings.dispatch.tools import ToolFailure

__all__ = ["Root", "escape_message"]

T = TypeVar("T")
MAX_LINKS = 40  # what Linux allows in one path resolution (ELOOP past it)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)

DOTDOT = "its '..' components lead outside the working directory"
ABSOLUTE = "it is an absolute path outside the working directory"
LINK = "a symbolic link in it leads outside the working directory"


def escape_message(path: str, why: str) -> str:
    """The refusal the model reads for a path that leads outside."""
    return f"refused: the path {path!r} is not inside the working directory: {why}"


class _Again(Exception):
    """The last component turned out to be a symbolic link: splice it and walk on."""


class Root:
    """A working directory, remembered by its device and inode, opened afresh per operation."""

    def __init__(self, path: Path) -> None:
        self.path = path
        info = os.stat(path)
        self._identity = (info.st_dev, info.st_ino)

    @contextmanager
    def _open(self) -> Iterator[int]:
        fd = os.open(self.path, _DIR & ~os.O_NOFOLLOW)
        try:
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) != self._identity:
                raise ToolFailure(f"refused: the working directory {self.path} was replaced")
            yield fd
        finally:
            os.close(fd)

    # -- resolution --------------------------------------------------------------------

    def _parts(self, path: str) -> list[str]:
        if "\x00" in path:
            raise ToolFailure(f"refused: the path {path!r} contains a NUL byte")
        joined = Path(os.path.normpath(os.path.join(self.path, path)))
        if not joined.is_relative_to(self.path):
            raise ToolFailure(
                escape_message(path, ABSOLUTE if Path(path).is_absolute() else DOTDOT)
            )
        return list(joined.relative_to(self.path).parts)

    def walk(
        self, path: str, last: Callable[[int, str | None], T], *, create: bool = False
    ) -> tuple[T, str]:
        """Walk ``path`` down from the root; call ``last(directory_fd, name)`` at its end.

        ``name`` is None when the path names a directory reached by the walk
        (the root itself, or what ``..`` led back to). ``last`` raises
        :class:`_Again` when ``name`` is a symbolic link. With ``create``,
        missing directories on the way are made. Returns ``last``'s value and
        the path resolved, relative to the root.
        """
        pending = collections.deque(self._parts(path))
        links = 0
        with self._open() as root_fd:
            stack: list[tuple[int, str]] = [(root_fd, "")]
            try:
                while True:
                    if not pending:
                        return last(stack[-1][0], None), "/".join(n for _, n in stack[1:])
                    name = pending.popleft()
                    if name in ("", "."):
                        continue
                    if name == "..":
                        if len(stack) == 1:
                            raise ToolFailure(escape_message(path, LINK))
                        os.close(stack.pop()[0])
                        continue
                    here = stack[-1][0]
                    try:
                        if not pending:
                            shown = "/".join([*(n for _, n in stack[1:]), name])
                            return last(here, name), shown
                        stack.append((self._enter(here, name, create), name))
                        continue
                    except _Again:
                        pass
                    target = _readlink(here, name)
                    links += 1
                    if target is None:  # swapped back in the meantime: walk it again
                        target = name
                    elif target.startswith("/"):
                        while len(stack) > 1:
                            os.close(stack.pop()[0])
                        inside = Path(os.path.normpath(target))
                        if not inside.is_relative_to(self.path):
                            raise ToolFailure(escape_message(path, LINK))
                        target = str(inside.relative_to(self.path))
                    pending.extendleft(reversed(target.split("/")))
                    if links > MAX_LINKS:
                        raise ToolFailure(
                            f"refused: the path {path!r} has too many levels of symbolic links"
                        )
            finally:
                for fd, _ in stack[1:]:
                    os.close(fd)

    @staticmethod
    def _enter(directory: int, name: str, create: bool) -> int:
        try:
            return _open_last(directory, name, _DIR)
        except FileNotFoundError:
            if not create:
                raise
            with suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=directory)
            return Root._enter(directory, name, False)

    # -- operations --------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """Where ``path`` leads, inside the root; a :class:`ToolFailure` if it leads out."""

        def last(directory: int, name: str | None) -> None:
            if name is not None and _readlink(directory, name) is not None:
                raise _Again

        _, shown = self.walk(path, last)
        return self.path / shown if shown else self.path

    def open_regular(self, path: str) -> int:
        """A descriptor of the regular file ``path``, opened for reading without blocking."""

        def last(directory: int, name: str | None) -> int:
            fd = _open_last(directory, name or ".", _FILE)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise ToolFailure(f"refused: {path!r} is not a regular file")
            return fd

        return self.walk(path, last)[0]

    def list(self, path: str) -> list[tuple[str, str]]:
        """``(name, kind)`` of each entry of the directory ``path``: kind is "/", "@" or ""."""

        def last(directory: int, name: str | None) -> list[tuple[str, str]]:
            fd = _open_last(directory, name or ".", _DIR)
            try:
                with os.scandir(fd) as scan:
                    return [
                        (e.name, "@" if e.is_symlink() else "/" if e.is_dir() else "") for e in scan
                    ]
            finally:
                os.close(fd)

        return self.walk(path, last)[0]

    def write(self, path: str, content: bytes, *, append: bool) -> None:
        """Write ``content`` to ``path`` (after what it holds, with ``append``), atomically."""

        def last(directory: int, name: str | None) -> None:
            if name is None:
                raise ToolFailure(f"refused: {path!r} is a directory")
            try:
                info = os.stat(name, dir_fd=directory, follow_symlinks=False)
            except FileNotFoundError:
                info = None
            if info is not None:
                if stat.S_ISLNK(info.st_mode):
                    raise _Again
                _writable(info, path)
            _replace(directory, name, content, append and info is not None, path)

        self.walk(path, last, create=True)


def _readlink(directory: int, name: str) -> str | None:
    try:
        return os.readlink(name, dir_fd=directory)
    except OSError:  # EINVAL: not a link; ENOENT: gone
        return None


def _open_last(directory: int, name: str, flags: int) -> int:
    try:
        return os.open(name, flags, dir_fd=directory)
    except OSError as exc:
        if (
            exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)
            and _readlink(directory, name) is not None
        ):
            raise _Again from None
        raise


def _writable(info: os.stat_result, path: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise ToolFailure(f"refused: {path!r} is not a regular file")
    if info.st_nlink > 1:
        raise ToolFailure(
            f"refused: {path!r} has {info.st_nlink} hard links; one may lead outside the "
            "working directory, so it is not written through"
        )


def _replace(directory: int, name: str, content: bytes, append: bool, path: str) -> None:
    """Write a temporary file next to ``name``, then rename it over ``name``."""
    temporary = f".{name[:200]}.{secrets.token_hex(6)}.railings-tmp"
    fd = os.open(
        temporary,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o666,
        dir_fd=directory,
    )
    try:
        with open(fd, "wb", closefd=False) as out:
            if append:
                source = _open_last(directory, name, _FILE)
                try:
                    info = os.fstat(source)
                    _writable(info, path)
                    os.fchmod(fd, stat.S_IMODE(info.st_mode))
                    with open(source, "rb", closefd=False) as old:
                        while chunk := old.read(1 << 20):
                            out.write(chunk)
                finally:
                    os.close(source)
            else:
                try:
                    old_info = os.stat(name, dir_fd=directory, follow_symlinks=False)
                    if stat.S_ISREG(old_info.st_mode):
                        os.fchmod(fd, stat.S_IMODE(old_info.st_mode))
                except FileNotFoundError:
                    pass
            out.write(content)
        os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise
    finally:
        os.close(fd)
