"""What an install from the wheel gets: the example it ships, the install hint of each
missing extra, and the metadata check ``make dist`` runs on the built files.

``make wheel-check`` (in CI) builds the wheel, installs it into a fresh venv outside the
source tree and runs ``railings demo`` and ``railings replay`` there; these tests hold
the pieces it rests on without building anything.
"""

from __future__ import annotations

import sys
import tomllib
import zipfile
from email.message import Message
from pathlib import Path

import pytest

import railings.examples
from railings._extras import require
from railings.errors import MissingDependency
from railings.replay import replay
from railings.turn.verdict import RejectReason
from tools.check_dist import PACKAGE_DATA, check_metadata, check_wheel

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_shipped_example_is_the_repository_example() -> None:
    shipped = railings.examples.CUT_SHELL_CALL
    assert shipped.read_bytes() == (ROOT / "examples" / shipped.name).read_bytes()


def test_the_shipped_example_is_a_cut_call_that_is_not_executed() -> None:
    result = replay(railings.examples.CUT_SHELL_CALL.read_bytes())
    (verdict,) = result.verdicts
    assert verdict.call.name == "shell"
    assert not verdict.execute and verdict.reason is RejectReason.TRUNCATED


def test_the_package_data_the_wheel_must_hold_is_declared() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = declared["package-data"]["railings"]
    for name in PACKAGE_DATA:
        inside = name.removeprefix("railings/")
        assert any(Path(inside).match(p) for p in patterns), name
        assert (ROOT / "src" / name).is_file(), name


# -- the install hint of a missing extra ----------------------------------------------------


def test_a_missing_package_is_named_with_the_command_that_installs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # how Python marks an absent module
    with pytest.raises(MissingDependency) as caught:
        require("gateway", "uvicorn")
    assert str(caught.value) == (
        "gateway needs uvicorn: pip install uvicorn (railings' gateway extra)"
    )
    assert caught.value.install == ("uvicorn",)


def test_every_absent_package_is_in_the_one_command_and_the_extra_is_the_last_modules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core", None)
    monkeypatch.setitem(sys.modules, "langchain", None)
    with pytest.raises(MissingDependency) as caught:
        require("the middleware", "langchain_core", "langgraph", "langchain")
    error = caught.value
    # langgraph is installed: only the two absent packages are named.
    assert error.install == ("langchain-core", "langchain")
    assert (error.package, error.extra) == ("langchain-core", "langchain")
    assert str(error) == (
        "the middleware needs langchain-core: pip install langchain-core langchain"
        " (railings' langchain extra)"
    )


def test_nothing_is_raised_when_every_module_is_there() -> None:
    require("the test kit", "pytest")


def test_the_error_alone_installs_the_package_it_names() -> None:
    error = MissingDependency("x", package="botocore", extra="bedrock")
    assert error.install == ("botocore",)
    assert str(error) == "x needs botocore: pip install botocore (railings' bedrock extra)"


# -- the metadata check of make dist --------------------------------------------------------


def _faithful() -> Message:
    meta = Message()
    meta["Metadata-Version"] = "2.4"
    for field, key in (
        ("Name", "name"),
        ("Version", "version"),
        ("Summary", "description"),
        ("License-Expression", "license"),
        ("Requires-Python", "requires-python"),
    ):
        meta[field] = PROJECT[key]
    meta["Description-Content-Type"] = "text/markdown"
    for spec in PROJECT["dependencies"]:
        meta["Requires-Dist"] = spec
    for extra, specs in PROJECT["optional-dependencies"].items():
        meta["Provides-Extra"] = extra
        for spec in specs:
            meta["Requires-Dist"] = f'{spec}; extra == "{extra}"'
    meta.set_payload(README)
    return meta


def test_metadata_that_says_what_pyproject_says_passes() -> None:
    assert check_metadata(_faithful(), PROJECT, README) == []


def test_metadata_drift_is_named() -> None:
    meta = _faithful()
    meta.replace_header("Version", "0.0.1")
    del meta["Provides-Extra"]
    meta.set_payload("# another project\n")
    problems = check_metadata(meta, PROJECT, README)
    assert f"Version: '0.0.1', pyproject says '{PROJECT['version']}'" in problems
    assert "the long description is not README.md" in problems
    assert any(p.startswith("Provides-Extra: []") for p in problems)


def test_a_wheel_without_its_package_data_is_refused(tmp_path: Path) -> None:
    dist_info = f"{PROJECT['name']}-{PROJECT['version']}.dist-info"
    wheel = tmp_path / "railings-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as out:
        out.writestr(f"{dist_info}/METADATA", _faithful().as_string())
        out.writestr(f"{dist_info}/entry_points.txt", "[console_scripts]\n")
        out.writestr("railings/py.typed", "")
        out.writestr("tests/test_x.py", "")
    problems = check_wheel(wheel, PROJECT, README)
    assert "entry point railings = railings.cli:main missing" in problems
    assert "railings/examples/cut_shell_call.sse is not in the wheel" in problems
    assert "tests/test_x.py is in the wheel" in problems
    assert "railings/py.typed is not in the wheel" not in problems


def test_the_readme_names_the_wheel_make_dist_builds() -> None:
    # Until railings is on the package index, the README's install from a wheel is the way
    # in without a clone: the file it names must be the one make dist writes.
    wheel = f"dist/{PROJECT['name']}-{PROJECT['version']}-py3-none-any.whl"
    assert f"pip install '{wheel}[sdks]'" in README
