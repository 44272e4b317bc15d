"""The journal is the user's alone: created 0700 / 0600, and a warning when it is not.

The journal holds tasks, the files the agent read and what commands printed. Under
the common umask 022 a directory is made 0755 and a file 0644: readable by every
local user. So the directories railings makes for it are created 0700 (what the
XDG Base Directory specification asks of a data directory it has to create), and
the database file is created 0600 before SQLite opens it; SQLite gives its
``-wal`` and ``-shm`` files the database's own mode. No process-wide umask is
changed: another thread of the process keeps its own.

An existing journal is not changed behind the user's back (it may be shared on
purpose): when its files, or the directory railings keeps it in, let others in,
one warning line says so, once per process and journal, on the ``railings.journal``
logger (printed on stderr when the application configured no logging).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import stat
import threading
from pathlib import Path

__all__ = ["PRIVATE_DIRECTORY", "PRIVATE_FILE", "create_private", "warn_if_shared"]

PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600
SIDE_FILES = ("-wal", "-shm", "-journal")  # SQLite's files beside the database

log = logging.getLogger("railings.journal")
_warned: set[Path] = set()
_warned_lock = threading.Lock()


def create_private(path: Path) -> None:
    """Make the missing directories above ``path`` 0700, and ``path`` itself, if it does
    not exist, an empty file 0600 (SQLite takes an empty file as a new database)."""
    above = [path.parent, *path.parent.parents]
    missing = list(itertools.takewhile(lambda directory: not directory.exists(), above))
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            directory.mkdir(PRIVATE_DIRECTORY)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE))


def _open_to_others(path: Path) -> str | None:
    """``"NAME 0644"`` when ``path`` exists with group or other permission bits set."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
    return f"{path} {mode:04o}" if mode & 0o077 else None


def warn_if_shared(path: Path, *, own_directory: bool) -> None:
    """One warning line when the journal at ``path`` (its database and SQLite's files
    beside it; its directory too when ``own_directory``: the one railings keeps it in)
    lets other users in. Once per process for each journal."""
    candidates = [path, *(path.with_name(path.name + side) for side in SIDE_FILES)]
    if own_directory:
        candidates.append(path.parent)
    wide = [found for found in map(_open_to_others, candidates) if found is not None]
    if not wide:
        return
    with _warned_lock:
        if path in _warned:
            return
        _warned.add(path)
    log.warning(
        "railings: warning: the journal %s can be read by other users (%s): "
        "chmod 600 its files and 700 its directory to keep it private",
        path,
        ", ".join(wide),
    )
