"""The built-in tools: confinement to the working directory, the shell's capture, cap and
timeout, and the truncation contract in every manual."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

import railings.dispatch.builtins as builtins_module
from _tools import call, tools_in
from railings.dispatch import TRUNCATION_CONTRACT, Execution, builtin_tools, execute
from railings.errors import ConfigurationError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "notes.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "secret.txt").write_text("outside")
    return workdir


def test_every_manual_carries_the_truncation_contract(root: Path) -> None:
    manuals = {name: t.description for name, t in tools_in(root).items()}
    assert set(manuals) == {"shell", "read_file", "write_file", "list_dir"}
    assert all(TRUNCATION_CONTRACT in text for text in manuals.values())
    assert TRUNCATION_CONTRACT == (
        "Tool calls cut off by the output limit are NOT executed and must be resent "
        "complete: keep the arguments short, or split the work into several smaller calls."
    )


def test_read_only_and_speculative_flags(root: Path) -> None:
    flags = {name: (t.read_only, t.speculative) for name, t in tools_in(root).items()}
    assert flags == {
        "shell": (False, False),
        "read_file": (True, True),
        "write_file": (False, False),
        "list_dir": (True, True),
    }


def test_the_working_directory_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not a directory"):
        builtin_tools(tmp_path / "missing")


# -- confinement -----------------------------------------------------------------------------

DOTDOT = "its '..' components lead outside the working directory"
ABSOLUTE = "it is an absolute path outside the working directory"
LINK = "a symbolic link in it leads outside the working directory"


@pytest.fixture
def escapes(root: Path) -> dict[str, tuple[str, str]]:
    os.symlink(root.parent, root / "up")  # a directory link out
    os.symlink(root.parent / "secret.txt", root / "secret-link.txt")  # a file link out
    return {
        "dotdot": ("../secret.txt", DOTDOT),
        "deep-dotdot": ("sub/../../secret.txt", DOTDOT),
        "absolute": (str(root.parent / "secret.txt"), ABSOLUTE),
        "etc": ("/etc/passwd", ABSOLUTE),
        "dir-link": ("up/secret.txt", LINK),
        "file-link": ("secret-link.txt", LINK),
    }


@pytest.mark.parametrize(
    "case", ["dotdot", "deep-dotdot", "absolute", "etc", "dir-link", "file-link"]
)
def test_every_file_tool_refuses_a_path_that_escapes(
    root: Path, escapes: dict[str, tuple[str, str]], case: str
) -> None:
    path, why = escapes[case]
    expected = f"refused: the path {path!r} is not inside the working directory: {why}"
    named = tools_in(root)
    assert call(named["read_file"], path=path) == Execution(False, expected)
    assert call(named["write_file"], path=path, content="pwned") == Execution(False, expected)
    assert call(named["list_dir"], path=path) == Execution(False, expected)
    assert (root.parent / "secret.txt").read_text() == "outside"


def test_a_new_file_under_a_link_out_is_refused(root: Path) -> None:
    os.symlink(root.parent, root / "up")
    result = call(tools_in(root)["write_file"], path="up/new.txt", content="x")
    assert not result.ok and LINK in result.content
    assert not (root.parent / "new.txt").exists()


def test_paths_that_stay_inside_are_fine(root: Path) -> None:
    (root / "sub").mkdir()
    os.symlink(root / "notes.txt", root / "sub" / "link.txt")  # a link that stays inside
    named = tools_in(root)
    assert call(named["read_file"], path="sub/../notes.txt") == Execution(True, "one\ntwo\nthree\n")
    assert call(named["read_file"], path="sub/link.txt").ok
    assert call(named["read_file"], path=str(root / "notes.txt")).ok  # absolute, but inside
    assert call(named["list_dir"]) == Execution(True, "notes.txt\nsub/")
    assert call(named["list_dir"], path="sub") == Execution(True, "link.txt@")


def test_a_nul_byte_or_a_symlink_loop_is_refused(root: Path) -> None:
    os.symlink(root / "loop", root / "loop")
    named = tools_in(root)
    assert call(named["read_file"], path="a\x00b").content.startswith("refused:")
    assert call(named["read_file"], path="loop").content.startswith("refused:")


# -- read_file, write_file, list_dir ---------------------------------------------------------


def test_read_file_pages_by_lines_and_says_where_to_read_on(root: Path) -> None:
    read = tools_in(root)["read_file"]
    assert call(read, path="notes.txt", offset=2) == Execution(True, "two\nthree\n")
    assert call(read, path="notes.txt", limit=1) == Execution(
        True, "one\n\n[... cut: more lines follow; read on with offset=2]"
    )
    assert call(read, path="missing.txt") == Execution(
        False, "cannot read 'missing.txt': No such file or directory"
    )


def test_read_file_caps_its_output(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"line {i:04}\n" for i in range(1000)))
    (root / "wide.txt").write_text("x" * 100 + "\nnext\n")
    read = tools_in(root, max_output=40)["read_file"]
    assert call(read, path="big.txt") == Execution(
        True,
        "line 0000\nline 0001\nline 0002\nline 0003\n"
        "\n[... cut: more lines follow; read on with offset=5]",
    )
    assert call(read, path="wide.txt") == Execution(
        True,
        "x" * 40
        + "\n[... cut: line 1 has 101 bytes, shown is its start; the next line is offset=2]",
    )


def test_write_file_creates_parents_and_appends(root: Path) -> None:
    write = tools_in(root)["write_file"]
    assert call(write, path="a/b/c.txt", content="first\n") == Execution(
        True, "wrote 6 bytes to a/b/c.txt"
    )
    assert call(write, path="a/b/c.txt", content="second\n", append=True) == Execution(
        True, "appended 7 bytes to a/b/c.txt"
    )
    assert (root / "a/b/c.txt").read_text() == "first\nsecond\n"


def test_list_dir_caps_its_entries(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builtins_module, "MAX_ENTRIES", 2)
    (root / "b").mkdir()
    (root / "c.txt").write_text("")
    result = call(tools_in(root)["list_dir"])
    assert result == Execution(True, "b/\nc.txt\n[... 1 more entries not shown]")
    (root / "empty").mkdir()
    assert call(tools_in(root)["list_dir"], path="empty") == Execution(True, "(empty directory)")


# -- shell -----------------------------------------------------------------------------------


def test_shell_runs_in_the_working_directory_and_reports_everything(root: Path) -> None:
    result = call(
        tools_in(root)["shell"], command="pwd; cat notes.txt | wc -l; echo oops >&2; exit 3"
    )
    assert result == Execution(True, f"exit code: 3\nstdout:\n{root}\n3\n\nstderr:\noops\n")
    assert call(tools_in(root)["shell"], command="true") == Execution(
        True, "exit code: 0\n(no output)"
    )


def test_shell_starts_every_process_through_spawn(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, Path]] = []
    real = builtins_module.spawn

    async def spy(command: str, cwd: Path, env: Any = None) -> asyncio.subprocess.Process:
        seen.append((command, cwd))
        return await real(command, cwd, env)

    monkeypatch.setattr(builtins_module, "spawn", spy)
    assert call(tools_in(root)["shell"], command="echo hi").ok
    assert seen == [("echo hi", root)]


def test_shell_caps_its_output_and_says_so(root: Path) -> None:
    shell = tools_in(root, max_output=20)["shell"]
    result = call(shell, command="printf 'A%.0s' $(seq 1 5000); printf 'END'; echo tiny >&2")
    assert result == Execution(
        True,
        "exit code: 0\nstdout:\n"
        + "A" * 10
        + "\n[... stdout cut: 5003 bytes in all; shown are the first 10 and the last 10 ...]\n"
        + "AAAAAAAEND\nstderr:\ntiny\n",
    )


def test_shell_output_above_the_cap_never_blocks_the_command(root: Path) -> None:
    # Far more than a pipe buffer: the command only finishes if the tool keeps reading.
    shell = tools_in(root, max_output=100, timeout=10)["shell"]
    result = call(shell, command="head -c 3000000 /dev/zero; echo done >&2")
    assert result.ok and "3000000 bytes in all" in result.content
    assert result.content.endswith("stderr:\ndone\n")


def test_shell_timeout_kills_the_command_and_everything_it_started(root: Path) -> None:
    marker = root / "background-survived"
    shell = tools_in(root, timeout=0.3)["shell"]
    # sleep 600 outlasts the suite's timeout: the test ends only if the timeout kills it.
    result = call(
        shell, command=f"echo before; (sleep 0.6; touch {marker}) & sleep 600; echo after"
    )
    assert result == Execution(
        False,
        "the command timed out after 0.3 s and was killed; output so far:\n"
        "exit code: none (killed)\nstdout:\nbefore\n",
    )
    time.sleep(0.6)
    assert not marker.exists()  # the whole process group was killed


def test_the_model_may_ask_for_a_shorter_timeout(root: Path) -> None:
    result = call(tools_in(root, timeout=30)["shell"], command="sleep 30", timeout=0.2)
    assert not result.ok and "timed out after 0.2 s" in result.content


def test_a_cancelled_shell_call_leaves_no_process_behind(root: Path) -> None:
    marker = root / "still-running"

    async def main() -> None:
        task = asyncio.create_task(
            execute(tools_in(root)["shell"], {"command": f"sleep 0.5; touch {marker}"})
        )
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.6)

    asyncio.run(main())
    assert not marker.exists()
