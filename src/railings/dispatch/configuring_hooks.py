"""Where the repository in a working directory says its hooks are: ``core.hooksPath``.

git runs the hooks of the directory ``core.hooksPath`` names instead of
``.git/hooks``, so a write there is a hook whatever the directory is called. The
repository's own configuration is read the way git reads it, as far as this key
goes: ``.git`` (a directory, or a file ``gitdir: <path>``), its ``config`` and
``config.worktree`` and, for a linked worktree, the ``config`` of its
``commondir``. Each file read is bounded (:data:`MAX_CONFIG_BYTES`); a file that
is missing, too large to read in full or malformed gives what could be read of
it and never an error: this only ever adds directories that ask. A relative
value is taken from the working directory, where git runs hooks in a repository
with a work tree. ``include.path`` is not followed (the included file is under
``.git`` or elsewhere the model's writes already ask about, or outside the
working directory).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["MAX_CONFIG_BYTES", "hooks_directories", "hooks_paths"]

MAX_CONFIG_BYTES = 256 * 1024
"""How much of one configuration file (or ``.git`` file, or ``commondir``) is read."""


def _read(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            return handle.read(MAX_CONFIG_BYTES).decode("utf-8", "replace")
    except OSError:  # missing, a directory, unreadable: nothing configured here
        return ""


def _git_directory(root: Path) -> Path | None:
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    text = _read(dot_git)
    for line in text.splitlines():
        if line.startswith("gitdir:"):
            named = line[len("gitdir:") :].strip()
            return (root / named) if named else None
    return None


def _value(raw: str) -> str:
    """A git configuration value: quotes removed, a comment outside them cut off."""
    out: list[str] = []
    quoted = False
    chars = iter(raw.strip())
    for char in chars:
        if char == '"':
            quoted = not quoted
        elif char == "\\":
            escaped = next(chars, "")
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(escaped, escaped))
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
    return "".join(out).strip()


def hooks_paths(text: str) -> list[str]:
    """Every ``core.hooksPath`` value in the git configuration ``text``, in order.

    Section and key names compare without case, as git compares them; a header and a
    key on one line (``[core] hooksPath = x``) is read as git reads it.
    """
    found: list[str] = []
    section = ""
    for line in text.splitlines():
        rest = line.strip()
        if rest.startswith("["):
            close = rest.find("]")
            if close < 0:
                continue  # malformed header: git refuses the file; nothing to add
            words = rest[1:close].split(None, 1)
            section = words[0].split(".", 1)[0].lower() if words else ""
            rest = rest[close + 1 :].strip()
        if section != "core" or "=" not in rest:
            continue
        key, raw = rest.split("=", 1)
        if key.strip().lower() == "hookspath":
            value = _value(raw)
            if value:
                found.append(value)
    return found


def hooks_directories(root: Path) -> list[Path]:
    """The directories ``core.hooksPath`` names in the repository of ``root``, each both
    as named and resolved through its links (absolute); empty when there is none."""
    git_dir = _git_directory(root)
    if git_dir is None:
        return []
    texts = [_read(git_dir / "config"), _read(git_dir / "config.worktree")]
    common = _read(git_dir / "commondir").strip()
    if common:
        texts.append(_read((git_dir / common) / "config"))
    found: list[Path] = []
    for text in texts:
        for value in hooks_paths(text):
            named = Path(os.path.normpath(root / os.path.expanduser(value)))
            found.extend({named, Path(os.path.realpath(named))})
    return found
