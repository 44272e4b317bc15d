"""Writes that configure later commands: the one rule that says which writes need approval.

Theory of operation. Approving a command means approving what it does *as the user
knows it*. A file that git, a shell or a build tool reads to decide what to run
changes that meaning silently: ``core.fsmonitor`` in ``.git/config`` makes a
harmless ``git status`` run any command, a ``Makefile`` rule makes ``make test``
run another, a ``conftest.py`` is imported by every ``pytest``. So a write to such a
path is as strong as a command, and asks the user the same way, whatever the rule
for the writing tool says (:class:`~railings.dispatch.gates.ApprovalGate` asks
whenever :func:`configures_commands` gives a reason). Source code the model was asked
to write is not on the list: running it is what the user approves when they approve
the command that runs it.

The path is judged as the write will land, not as it was spelled:

1. lexically normalized against the root, as the file tools do (``./.git/../.git``
   is ``.git``);
2. then resolved through every symbolic link that exists inside the root, as the
   write follows them (``link/config`` with ``link -> .git`` is ``.git/config``);
   a part that does not exist yet is taken as named;
3. each component folded the way filesystems that ignore case and some characters
   compare names (git's ``is_hfs_dotgit`` / ``is_ntfs_dotgit``): case folded, the
   characters HFS+ ignores dropped, trailing dots and spaces dropped (NTFS), and
   ``git~1`` read as ``.git`` (an NTFS short name).

Both the spelled and the resolved path are checked; a match on either asks. The
names are tables (:mod:`railings.dispatch.configuring_paths`); what the tree holds
asks too: a directory holding ``HEAD``, ``objects/`` and ``refs/`` (a git directory
of any name) or ``pyvenv.cfg`` (a virtual environment of any name), the directory
the repository's ``core.hooksPath`` names
(:mod:`railings.dispatch.configuring_hooks`), and the directories on ``PATH``. The
list, and why each entry is on it, is in docs/SECURITY.md.
"""

from __future__ import annotations

import itertools
import os
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from railings.dispatch.configuring_hooks import hooks_directories
from railings.dispatch.configuring_paths import (
    DIRECTORIES,
    GIT,
    GIT_HOOKS,
    NAMES,
    ON_PATH,
    PAIRS,
    PYTHON,
    SHELL,
    SUFFIXES,
)
from railings.dispatch.files import Root
from railings.dispatch.tools import ToolFailure

__all__ = ["configures_commands"]

# Characters HFS+ ignores in names (git's list in utf8.c, next_hfs_char).
_IGNORED = frozenset(
    [chr(c) for c in range(0x200C, 0x2010)]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x206A, 0x2070)]
    + ["\ufeff"]
)


def fold(name: str) -> str:
    """``name`` as a filesystem that ignores case and HFS+/NTFS quirks compares it."""
    folded = "".join(c for c in unicodedata.normalize("NFC", name) if c not in _IGNORED)
    folded = folded.casefold().rstrip(". ")
    return ".git" if folded == "git~1" else folded


def _reason(parts: Sequence[str]) -> str | None:
    """Why the path ``parts`` (folded, relative to the root) configures commands, or None."""
    if not parts:
        return None
    for size in (1, 2):
        for start in range(len(parts) - size + 1):
            found = DIRECTORIES.get(tuple(parts[start : start + size]))
            # A directory's name as the last part: a write there creates that file (a
            # ".git" file points git at another repository), or is refused.
            if found is not None:
                return found
    name = parts[-1]
    if name in NAMES:
        return NAMES[name]
    if len(parts) >= 2:
        if parts[-2] == "hooks" and name in GIT_HOOKS:
            return GIT
        found = PAIRS.get((parts[-2], name))
        if found is not None:
            return found
    if name.startswith(".env."):  # .env.local and the like, read by the same loaders
        return SHELL
    for suffix, why in SUFFIXES.items():
        if name.endswith(suffix):
            return why
    return None


def _landing(root: Root, path: str) -> Path | None:
    """Where a write of ``path`` would land (absolute, inside the root): the part that
    exists resolved through its links, the rest as named. None when the path leads
    outside the root (the write is refused anyway) or cannot be walked."""
    try:
        parts = Path(os.path.normpath(os.path.join(root.path, path))).relative_to(root.path).parts
    except ValueError:
        return None
    for cut in range(len(parts), -1, -1):
        try:
            found = root.resolve(os.path.join(".", *parts[:cut]))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, ToolFailure):
            return None
        return found.joinpath(*parts[cut:])
    return None


def _above(root: Path, landing: Path, test: Callable[[Path], bool]) -> bool:
    """True when ``test`` holds for a directory above ``landing``, inside ``root``."""
    return any(
        test(d) for d in itertools.takewhile(lambda d: d.is_relative_to(root), landing.parents)
    )


def _git_directory(directory: Path) -> bool:
    """A git repository's own directory, whatever its name: ``HEAD``, ``objects/`` and
    ``refs/`` make one."""
    return (
        (directory / "HEAD").is_file()
        and (directory / "objects").is_dir()
        and (directory / "refs").is_dir()
    )


def _virtual_environment(directory: Path) -> bool:
    """A virtual environment of any name (it holds ``pyvenv.cfg``), whose scripts and
    packages are what runs."""
    return (directory / "pyvenv.cfg").is_file()


def _under(landing: Path, directory: Path, root: Path) -> bool:
    """True when ``landing`` is inside ``directory``, both inside ``root``, each part
    compared folded (a directory named ``Tools/Hooks`` is ``tools/hooks`` where the
    filesystem ignores case)."""
    if not (landing.is_relative_to(root) and directory.is_relative_to(root)):
        return landing.is_relative_to(directory)
    inner = [fold(p) for p in directory.relative_to(root).parts]
    return [fold(p) for p in landing.relative_to(root).parts][: len(inner)] == inner


def _path_directories(root: Path, search_path: str) -> Iterable[Path]:
    if not search_path:
        return
    for entry in search_path.split(os.pathsep):
        # An empty entry is the current directory: where commands run, the root.
        where = Path(entry) if os.path.isabs(entry) else root / entry
        yield Path(os.path.realpath(where))


def configures_commands(root: Root, path: str, *, search_path: str | None = None) -> str | None:
    """Why writing ``path`` (relative to ``root``) configures commands run later, or None.

    ``search_path`` is the commands' ``PATH`` (default: this process's): a file
    written into one of its directories can stand in for a command. The module
    docstring says how the path is normalized.
    """
    if not isinstance(path, str) or "\x00" in path:
        return None  # the schema or the write refuses it: nothing is written
    spelled = [fold(p) for p in Path(os.path.normpath(path)).parts if p not in ("/", ".")]
    why = _reason(spelled)
    if why is not None:
        return why
    landing = _landing(root, path)
    if landing is None:
        return None
    why = _reason([fold(p) for p in landing.relative_to(root.path).parts])
    if why is not None:
        return why
    if _above(root.path, landing, _git_directory):
        return GIT
    if _above(root.path, landing, _virtual_environment):
        return PYTHON
    if any(_under(landing, hooks, root.path) for hooks in hooks_directories(root.path)):
        return GIT
    search = os.environ.get("PATH", "") if search_path is None else search_path
    if Path(os.path.realpath(landing.parent)) in set(_path_directories(root.path, search)):
        return ON_PATH
    return None
