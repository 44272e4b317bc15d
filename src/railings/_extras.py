"""Optional packages: which extra brings each, and the check a feature runs before use.

railings' own dependencies are few (httpx2, rich, jsonschema). The official SDKs,
the frameworks and pytest are optional: a module that needs one calls
:func:`require` first, so a plain install of railings fails on use with one
line naming the packages to install (and the extra that brings them), never with a
bare ``ModuleNotFoundError`` from deep inside.
"""

from __future__ import annotations

import importlib.util

from railings.errors import MissingDependency

__all__ = ["EXTRAS", "missing", "require"]

# import name -> (distribution, the extra that installs it)
EXTRAS: dict[str, tuple[str, str]] = {
    "openai": ("openai", "sdks"),
    "anthropic": ("anthropic", "sdks"),
    "google.genai": ("google-genai", "sdks"),
    "boto3": ("boto3", "sdks"),
    "ollama": ("ollama", "sdks"),
    "langchain_core": ("langchain-core", "langgraph"),
    "langgraph": ("langgraph", "langgraph"),
    "langchain": ("langchain", "langchain"),
    "pytest": ("pytest", "pytest"),
    "uvicorn": ("uvicorn", "gateway"),
    "botocore": ("botocore", "bedrock"),
}


def missing(*modules: str) -> list[str]:
    """The modules of ``modules`` that cannot be imported here."""
    return [module for module in modules if not _found(module)]


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(feature: str, *modules: str) -> None:
    """Raise :class:`~railings.errors.MissingDependency` when a module is absent.

    The error names the first absent module's package, and the install command
    lists the packages of every absent module, so one command is enough. The extra
    named beside it is the last module's, the most specific: a caller lists the
    modules it needs from the general to the specific (``langchain``'s extra brings
    ``langchain-core`` and ``langgraph`` too).
    """
    absent = missing(*modules)
    if absent:
        package, extra = EXTRAS[absent[0]][0], EXTRAS[modules[-1]][1]
        install = tuple(dict.fromkeys(EXTRAS[module][0] for module in absent))
        raise MissingDependency(feature, package=package, extra=extra, install=install)
