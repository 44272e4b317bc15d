"""The installed package is the library and its test kit, and it imports without extras.

A plain ``pip install railings`` brings httpx2, rich and jsonschema, nothing else.
These tests run the installed package in a child interpreter whose import system
refuses every optional and development-only package (the SDKs, the frameworks,
pytest, hypothesis, jiter, the repository's ``tools/``), which is what a bare
environment looks like to railings: every module must import, or fail on use with
:class:`~railings.errors.MissingDependency` naming the extra to install.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import railings

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(railings.__file__).resolve().parent

# Import names that a plain install does not have (the extras, the dev tools, the repository).
ABSENT = [
    "openai",
    "anthropic",
    "langchain",
    "langchain_core",
    "langchain_openai",
    "langchain_anthropic",
    "langgraph",
    "pydantic_ai",
    "pytest",
    "_pytest",
    "hypothesis",
    "jiter",
    "httpx",
    "httpx_sse",
    "uvicorn",
    "opentelemetry",
    "tools",
    "conftest",
]

# Prepended to each child: a finder that refuses ABSENT, as a bare venv would.
BLOCKER = """
import importlib.abc, sys
ABSENT = set(%r)
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ABSENT:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
for name in list(sys.modules):
    if name.split(".")[0] in ABSENT:
        del sys.modules[name]
sys.meta_path.insert(0, Absent())
sys.path = [p for p in sys.path if p not in ("", %r, %r)]
"""
BLOCKER = BLOCKER % (ABSENT, str(ROOT), str(ROOT / "tests"))

WALK = """
import importlib, json, pkgutil
import railings
from railings.errors import MissingDependency
report = {"imported": [], "missing": {}, "broken": {}}
for info in pkgutil.walk_packages(railings.__path__, "railings."):
    if info.name == "railings.__main__":  # runs the CLI when imported
        continue
    try:
        importlib.import_module(info.name)
    except MissingDependency as exc:
        report["missing"][info.name] = str(exc)
    except BaseException as exc:
        report["broken"][info.name] = f"{type(exc).__name__}: {exc}"
    else:
        report["imported"].append(info.name)
print(json.dumps(report))
"""


def _bare(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def test_the_blocker_does_block() -> None:
    # Without this, every test below could pass because the blocker silently let SDKs in.
    done = _bare("import openai")
    assert done.returncode == 1
    assert "No module named 'openai'" in done.stderr


def test_every_module_imports_without_the_extras() -> None:
    done = _bare(WALK)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["broken"] == {}
    assert len(report["imported"]) > 60
    # Exactly the modules whose whole purpose is an optional package fail, and each
    # names the extra that brings it.
    assert report["missing"] == {
        "railings.integrations.langchain": (
            "railings.integrations.langchain needs langchain-core: "
            "pip install langchain-core langgraph langchain (railings' langchain extra)"
        ),
        "railings.integrations.langgraph": (
            "railings.integrations.langgraph needs langchain-core: "
            "pip install langchain-core langgraph (railings' langgraph extra)"
        ),
        "railings.testing.pytest_plugin": (
            "railings.testing.pytest_plugin needs pytest: pip install pytest"
            " (railings' pytest extra)"
        ),
    }


def test_each_extra_named_in_an_error_exists() -> None:
    from railings._extras import EXTRAS

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for module, (distribution, extra) in EXTRAS.items():
        assert extra in extras, module
        assert any(spec.startswith(distribution) for spec in _flatten(extras, extra)), module


def _flatten(extras: dict[str, list[str]], extra: str) -> list[str]:
    specs = []
    for spec in extras[extra]:
        if spec.startswith("railings["):
            for inner in spec[len("railings[") : -1].split(","):
                specs += _flatten(extras, inner)
        else:
            specs.append(spec)
    return specs


def test_the_sdk_columns_without_the_sdks_are_one_line_and_exit_2(tmp_path: Path) -> None:
    code = "import sys\nfrom railings.cli import main\nsys.exit(main(sys.argv[1:]))"
    done = _bare(code, "matrix", "--client", "all", "--quick", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "railings matrix: --client openai-sdk needs openai: pip install openai"
        " (railings' sdks extra)"
    ]


def test_the_demo_without_the_sdks_shows_railings_and_says_what_to_install(
    tmp_path: Path,
) -> None:
    code = "import sys\nfrom railings.cli import main\nsys.exit(main(sys.argv[1:]))"
    done = _bare(code, "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["fault", "railings"]
    assert "openai chat" not in done.stdout
    assert "pip install openai anthropic to see" in done.stdout
    assert "ran: railings 0 of" in done.stdout


def test_the_gateway_without_its_extra_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code = "import sys\nfrom railings.cli import main\nsys.exit(main(sys.argv[1:]))"
    done = _bare(code, "gateway", "--upstream", "http://127.0.0.1:9", "--no-journal", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "railings gateway: the gateway needs uvicorn: pip install uvicorn (railings' gateway extra)"
    ]


def test_replay_and_a_first_run_work_without_the_extras(tmp_path: Path) -> None:
    code = "import sys\nfrom railings.cli import main\nsys.exit(main(sys.argv[1:]))"
    capture = ROOT / "tests" / "corpus" / "real" / "anthropic" / "max_tokens_inside_tool_input.sse"
    done = _bare(code, "replay", str(capture), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "TRUNCATED" in done.stdout
    assert "NOT executed: truncated" in done.stdout


def test_every_package_directory_is_a_package() -> None:
    for directory in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir())]:
        if directory.name == "__pycache__" or not any(directory.glob("*.py")):
            continue
        assert (directory / "__init__.py").is_file(), directory


def test_one_version_read_from_the_metadata() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert railings.__version__ == version("railings") == declared
    assert declared not in (PACKAGE / "__init__.py").read_text()


def test_nothing_in_the_package_needs_the_repository() -> None:
    # Campaigns and measurements live in tools/, test data in tests/corpus: the
    # installed package names neither.
    imports = re.compile(r"^\s*(?:from|import)\s+(tools|tests|conftest|hypothesis)\b", re.M)
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not imports.search(text), path
        assert "tools.measure" not in text and "tools.reliability" not in text, path
