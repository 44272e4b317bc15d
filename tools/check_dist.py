"""Check the metadata of the built sdist and wheel against pyproject.toml.

Run by ``make dist`` after ``python -m build``: ``python -m tools.check_dist dist``.
The distributions are read with the standard library only (``zipfile``, ``tarfile``,
``email``): what a package index and pip read is the wheel's ``METADATA`` and the
sdist's ``PKG-INFO``, and both must say what pyproject.toml declares. The wheel must
also hold the files the package reads at run time (the demo script, the example stream,
``py.typed``) and nothing of the repository (``tests/``, ``tools/``). Prints one line
per distribution checked; on a problem, one line each on stderr and exit 1.
"""

from __future__ import annotations

import re
import sys
import tarfile
import tomllib
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Files of the package that the code opens by path, so the wheel must carry them.
PACKAGE_DATA = (
    "railings/py.typed",
    "railings/testing/scripts/demo.json",
    "railings/examples/cut_shell_call.sse",
)


def _name(requirement: str) -> str:
    """The distribution name a requirement starts with, normalized (PEP 503)."""
    found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert found, requirement
    return re.sub(r"[-_.]+", "-", found[0]).lower()


def check_metadata(meta: Message, project: dict[str, object], readme: str) -> list[str]:
    """What ``meta`` (a METADATA or PKG-INFO) gets wrong about ``project``."""
    problems = []
    for field, want in (
        ("Name", project["name"]),
        ("Version", project["version"]),
        ("Requires-Python", project["requires-python"]),
        ("License-Expression", project["license"]),
        ("Summary", project["description"]),
        ("Description-Content-Type", "text/markdown"),
    ):
        if meta.get(field) != want:
            problems.append(f"{field}: {meta.get(field)!r}, pyproject says {want!r}")
    if meta.get_payload().strip() != readme.strip():
        problems.append("the long description is not README.md")
    requires = meta.get_all("Requires-Dist") or []
    base = sorted(_name(r) for r in requires if "extra ==" not in r)
    declared = project["dependencies"]
    assert isinstance(declared, list)
    if base != sorted(_name(r) for r in declared):
        problems.append(f"Requires-Dist without an extra: {base}, pyproject says {declared}")
    extras = project["optional-dependencies"]
    assert isinstance(extras, dict)
    provided = sorted(meta.get_all("Provides-Extra") or [])
    if provided != sorted(extras):
        problems.append(f"Provides-Extra: {provided}, pyproject says {sorted(extras)}")
    for extra, specs in extras.items():
        listed = sorted(_name(r) for r in requires if f'extra == "{extra}"' in r)
        if listed != sorted(_name(s) for s in specs):
            problems.append(f"extra {extra}: {listed}, pyproject says {specs}")
    return problems


def check_wheel(path: Path, project: dict[str, object], readme: str) -> list[str]:
    """What the wheel at ``path`` gets wrong: its metadata, entry point and files."""
    dist_info = f"{project['name']}-{project['version']}.dist-info"
    with zipfile.ZipFile(path) as wheel:
        names = set(wheel.namelist())
        meta = Parser().parsestr(wheel.read(f"{dist_info}/METADATA").decode())
        entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
    problems = check_metadata(meta, project, readme)
    scripts = project["scripts"]
    assert isinstance(scripts, dict)
    for script, target in scripts.items():
        if f"{script} = {target}" not in entry_points:
            problems.append(f"entry point {script} = {target} missing")
    problems += [f"{name} is not in the wheel" for name in PACKAGE_DATA if name not in names]
    stray = sorted(n for n in names if n.split("/")[0] in ("tests", "tools", "bench", "docs"))
    problems += [f"{name} is in the wheel" for name in stray]
    return problems


def check_sdist(path: Path, project: dict[str, object], readme: str) -> list[str]:
    """What the sdist at ``path`` gets wrong: its PKG-INFO and the files a build needs."""
    top = f"{project['name']}-{project['version']}"
    with tarfile.open(path) as sdist:
        names = set(sdist.getnames())
        member = sdist.extractfile(f"{top}/PKG-INFO")
        assert member is not None
        meta = Parser().parsestr(member.read().decode())
    problems = check_metadata(meta, project, readme)
    needed = ("pyproject.toml", "README.md", *(f"src/{name}" for name in PACKAGE_DATA))
    problems += [f"{name} is not in the sdist" for name in needed if f"{top}/{name}" not in names]
    return problems


def main(argv: list[str]) -> int:
    dist = Path(argv[0] if argv else "dist")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    readme = (ROOT / project["readme"]).read_text(encoding="utf-8")
    stem = f"{project['name']}-{project['version']}"
    wheels = sorted(dist.glob(f"{stem}-*.whl"))
    sdists = sorted(dist.glob(f"{stem}.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        print(f"check_dist: expected one wheel and one sdist of {stem} in {dist}", file=sys.stderr)
        return 1
    failed = False
    for path, check in ((sdists[0], check_sdist), (wheels[0], check_wheel)):
        problems = check(path, project, readme)
        for problem in problems:
            print(f"check_dist: {path.name}: {problem}", file=sys.stderr)
        if problems:
            failed = True
        else:
            print(f"{path.name}: metadata, files and entry points match pyproject.toml")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
