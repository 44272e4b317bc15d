"""The configuring-writes rule beyond names: a virtual environment of any name, the
hooks directory ``core.hooksPath`` names, the files of a repository directory assembled
under another name; and a speculative call its approval rule asks about.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from railings.dispatch import SpeculativeRunner, ToolRegistry, tool
from railings.dispatch.configuring import configures_commands
from railings.dispatch.configuring_hooks import MAX_CONFIG_BYTES, hooks_paths
from railings.dispatch.files import Root
from streams import openai_chunk
from test_dispatch_speculative import chunk_args, chunk_call, stream


def _asks(root: Path, path: str) -> bool:
    return configures_commands(Root(root), path, search_path="") is not None


@pytest.mark.parametrize(
    "path",
    [
        "store/config",
        "store/config.worktree",
        "store/commondir",
        "store/hooks/post-checkout",
        "store/info/attributes",
        "deep/er/hooks/pre-push",
    ],
)
def test_the_files_of_a_repository_directory_ask_before_it_is_one(
    tmp_path: Path, path: str
) -> None:
    assert _asks(tmp_path, path)


@pytest.mark.parametrize(
    "path",
    ["src/hooks/useThing.ts", "hooks/README.md", "src/config.ts", "info/notes.txt", "configs"],
)
def test_ordinary_source_next_to_those_names_does_not_ask(tmp_path: Path, path: str) -> None:
    assert not _asks(tmp_path, path)


def test_a_directory_holding_pyvenv_cfg_asks_for_everything_under_it(tmp_path: Path) -> None:
    (tmp_path / "env" / "bin").mkdir(parents=True)
    assert not _asks(tmp_path, "env/bin/python")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert _asks(tmp_path, "env/bin/python")
    assert _asks(tmp_path, "env/new/deeper/file.py")
    assert not _asks(tmp_path, "src/app.py")


def _repository(root: Path, config: str | bytes) -> None:
    (root / ".git").mkdir()
    data = config.encode() if isinstance(config, str) else config
    (root / ".git" / "config").write_bytes(data)


@pytest.mark.parametrize(
    "config",
    [
        "[core]\n\thooksPath = scripts/git\n",
        "[CORE]\n\tHOOKSPATH=scripts/git ; where the hooks are\n",
        '[core] hooksPath = "scripts/git"\n',
        "[core]\n\tbare = false\n[alias]\n\thooksPath = elsewhere\n"
        "[core]\n\thooksPath = ./scripts/git/\n",
    ],
)
def test_the_hooks_directory_core_hookspath_names_asks(tmp_path: Path, config: str) -> None:
    _repository(tmp_path, config)
    assert _asks(tmp_path, "scripts/git/pre-commit-helper")
    assert not _asks(tmp_path, "scripts/other/run")
    assert not _asks(tmp_path, "elsewhere/file")


def test_a_git_file_names_the_repository_whose_hookspath_is_read(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "config").write_text("[core]\n\thooksPath = tools\n")
    (tmp_path / ".git").write_text("gitdir: store\n")
    assert _asks(tmp_path, "tools/anything")


@pytest.mark.parametrize(
    "config",
    [
        b"[core\n\thooksPath = broken\n",  # an unclosed header: no core section opens
        b"\xff\xfe[core]\x00\n",
        b"",
        b"[]\n= x\n",
        b"[core]\n\thooksPath\n",  # a key without a value: no directory
    ],
)
def test_a_malformed_repository_config_never_fails_the_rule(tmp_path: Path, config: bytes) -> None:
    _repository(tmp_path, config)
    assert not _asks(tmp_path, "src/app.py")


def test_only_the_bounded_start_of_a_huge_config_is_read(tmp_path: Path) -> None:
    filler = "# " + "x" * 78 + "\n"
    padding = filler * (MAX_CONFIG_BYTES // len(filler) + 1)
    _repository(tmp_path, "[core]\n\thooksPath = first\n" + padding + "\thooksPath = late\n")
    assert _asks(tmp_path, "first/run")
    assert not _asks(tmp_path, "late/run")


def test_hooks_paths_reads_values_as_git_writes_them() -> None:
    text = '[core]\n\thooksPath = "a dir" # c\n[core "x"]\n\thookspath = b\\tc\n'
    assert hooks_paths(text) == ["a dir", "b\tc"]


def _peek_turn(path: str) -> bytes:
    return b"".join(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            chunk_call(0, "peek", "call_0"),
            chunk_args(0, json.dumps({"path": path})),
            openai_chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    )


def _started(rule: Any, path: str) -> tuple[str, ...]:
    @tool(read_only=True, speculative=True, approval=rule)
    def peek(path: str) -> str:
        return path

    async def go() -> tuple[str, ...]:
        async with SpeculativeRunner(ToolRegistry([peek])) as runner:
            await stream(_peek_turn(path), runner)
            return runner.started

    return asyncio.run(go())


def _secret_rule(arguments: Any) -> str | None:
    return "it reads a secret" if arguments.get("path") == "secret" else None


def _broken_rule(arguments: Any) -> str | None:
    raise KeyError("path")


def test_a_speculative_call_its_approval_rule_passes_still_starts_early() -> None:
    assert _started(_secret_rule, "notes") == ("call_0",)
    assert _started(_secret_rule, "secret") == ()


def test_a_speculative_call_whose_approval_rule_fails_never_starts() -> None:
    assert _started(_broken_rule, "notes") == ()


def test_a_hooks_directory_is_matched_as_a_lenient_filesystem_names_it(tmp_path: Path) -> None:
    _repository(tmp_path, "[core]\n\thooksPath = Tools/Hooks\n")
    assert _asks(tmp_path, "tools/hooks/anything")
    assert _asks(tmp_path, "Tools/Hooks/anything")
    assert not _asks(tmp_path, "tools/hooksmith/anything")
