"""Writes that configure later commands ask for approval, however the path is spelled.

The rule is :func:`railings.dispatch.configuring.configures_commands`; the approval gate
applies it whatever its ``needs_approval`` rule says of ``write_file``, so an
application that asks only about ``shell`` (as ``railings run`` does) still asks before
``.git/config`` is written.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from railings import replay
from railings.dispatch import (
    Dispatcher,
    Invocation,
    OutcomeStatus,
    ToolRegistry,
    builtin_tools,
    default_chain,
    tool,
)
from railings.dispatch.configuring import configures_commands, fold
from railings.dispatch.files import Root
from streams import openai_chunk


def _write_turn(path: str, content: str = "x") -> bytes:
    arguments = json.dumps({"path": path, "content": content})
    start = {"index": 0, "id": "call_0", "type": "function"}
    start["function"] = {"name": "write_file", "arguments": arguments}
    return b"".join(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            openai_chunk({"tool_calls": [start]}),
            openai_chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    )


def _dispatch(root: Path, path: str) -> tuple[OutcomeStatus, list[str]]:
    """Dispatch one ``write_file`` of ``path`` through a chain that asks only about
    ``shell`` and answers no; what became of it, and what the approver was asked."""
    asked: list[str] = []

    def approve(call: Invocation) -> bool:
        asked.append(f"{call.name}: {call.approval_reason}")
        return False

    chain = default_chain(approve=approve, needs_approval=lambda tool: tool.name == "shell")
    dispatcher = Dispatcher(ToolRegistry(builtin_tools(root)), chain=chain)
    batch = asyncio.run(dispatcher.dispatch_turn(replay(_write_turn(path)).turn))
    (outcome,) = batch.outcomes
    return outcome.status, asked


def test_the_gate_asks_before_a_configuring_write_whatever_its_rule_says(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    status, asked = _dispatch(tmp_path, ".git/config")
    assert status is OutcomeStatus.DENIED
    assert asked == [
        "write_file: git reads it to decide what to run (configuration, hooks, filters)"
    ]
    assert not (tmp_path / ".git" / "config").exists()


def test_the_gate_does_not_ask_about_a_plain_write(tmp_path: Path) -> None:
    status, asked = _dispatch(tmp_path, "src/app.py")
    assert status is OutcomeStatus.EXECUTED and asked == []
    assert (tmp_path / "src" / "app.py").read_text() == "x"


CONFIGURING = [
    ".git/config",
    ".git/hooks/pre-commit",
    ".git/info/attributes",
    "./.git/../.git/config",
    "a/../.git/config",
    ".GIT/CONFIG",
    ".Git/hooks/post-checkout",
    ".git./config",  # NTFS drops trailing dots
    ".git /config",  # and trailing spaces
    "GIT~1/config",  # an NTFS short name
    ".g\u200cit/config",  # HFS+ ignores the zero-width non-joiner
    "sub/project/.git/config",
    "sub/.git",  # a .git file points git at another repository
    ".gitattributes",
    "sub/.gitmodules",
    ".envrc",
    ".env",
    ".env.local",
    ".bashrc",
    ".zshenv",
    ".profile",
    "Makefile",
    "makefile",
    "GNUmakefile",
    "rules.mk",
    "package.json",
    "web/.npmrc",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "noxfile.py",
    "tests/conftest.py",
    "lib/python3.11/site-packages/evil.pth",
    "sitecustomize.py",
    "usercustomize.py",
    ".pre-commit-config.yaml",
    ".vscode/tasks.json",
    ".idea/workspace.xml",
    ".github/workflows/ci.yml",
    ".cargo/config.toml",
    ".cargo/config",
    "Cargo.toml",
    "build.rs",
    ".husky/pre-commit",
    "node_modules/.bin/jest",
    ".config/git/config",
    ".ssh/config",
    "HEAD",
]


@pytest.mark.parametrize("path", CONFIGURING)
def test_a_path_that_configures_commands_is_recognised(tmp_path: Path, path: str) -> None:
    assert configures_commands(Root(tmp_path), path, search_path="") is not None


@pytest.mark.parametrize(
    "path",
    ["README.md", "src/app.py", "tests/test_app.py", "docs/make.md", "git/notes.txt", "envrc.md"],
)
def test_an_ordinary_path_is_not(tmp_path: Path, path: str) -> None:
    assert configures_commands(Root(tmp_path), path, search_path="") is None


def test_a_link_to_git_is_judged_where_it_leads(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "innocent").symlink_to(".git")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "up").symlink_to("..")
    (tmp_path / "notes.txt").symlink_to(".git/config")  # a dangling link into .git
    root = Root(tmp_path)
    assert configures_commands(root, "innocent/config", search_path="") is not None
    assert configures_commands(root, "innocent/hooks/new/pre-push", search_path="") is not None
    assert configures_commands(root, "dir/up/.git/config", search_path="") is not None
    assert configures_commands(root, "notes.txt", search_path="") is not None


def test_a_git_directory_of_any_name_is_recognised(tmp_path: Path) -> None:
    bare = tmp_path / "mirror.repo"
    for sub in ("objects", "refs", "hooks"):
        (bare / sub).mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    root = Root(tmp_path)
    assert configures_commands(root, "mirror.repo/config", search_path="") is not None
    assert configures_commands(root, "mirror.repo/hooks/post-update", search_path="") is not None
    assert configures_commands(root, "other/config.txt", search_path="") is None


def test_a_directory_on_the_commands_path_is_recognised(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    root = Root(tmp_path)
    search = os.pathsep.join(["/usr/bin", str(tmp_path / "tools")])
    assert configures_commands(root, "tools/git", search_path=search) is not None
    assert configures_commands(root, "tools/git", search_path="/usr/bin") is None
    assert configures_commands(root, "ls", search_path=".") is not None  # a relative entry


def test_fold_reads_names_as_lenient_filesystems_compare_them() -> None:
    assert {fold(n) for n in (".GIT", ".git.", ".git ", "git~1", ".g\u200dit", ".gi\ufefft")} == {
        ".git"
    }
    assert fold("Makefile") == "makefile"


def test_an_approval_rule_that_fails_asks(tmp_path: Path) -> None:
    def broken(arguments: object) -> str | None:
        raise OSError("stale file handle")

    ran: list[str] = []

    @tool(approval=broken)
    def write_file(path: str, content: str) -> str:
        ran.append(path)
        return "written"

    asked: list[str | None] = []

    def approve(call: Invocation) -> bool:
        asked.append(call.approval_reason)
        return False

    chain = default_chain(approve=approve, needs_approval=lambda t: False)
    dispatcher = Dispatcher(ToolRegistry([write_file]), chain=chain)
    batch = asyncio.run(dispatcher.dispatch_turn(replay(_write_turn("a.txt")).turn))
    assert [o.status for o in batch.outcomes] == [OutcomeStatus.DENIED] and ran == []
    assert asked == ["its approval rule failed (OSError: stale file handle)"]
