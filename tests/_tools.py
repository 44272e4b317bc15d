"""Test helpers for the built-in tools: build them in a folder, run one call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from railings.dispatch import builtin_tools
from railings.dispatch.tools import Execution, Tool, execute


def tools_in(root: Path, **options: Any) -> dict[str, Tool]:
    """The built-in tools confined to ``root``, by name."""
    return {t.name: t for t in builtin_tools(root, **options)}


def call(target: Tool, **arguments: Any) -> Execution:
    """One call of ``target`` with ``arguments``, to the end."""
    return asyncio.run(execute(target, arguments))
