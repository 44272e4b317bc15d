"""Endpoint profiles on disk, the built-in ones, and which one judges a request.

A profile (:class:`~railings.turn.profile.Profile`: what it may change, and why nothing
else) is a small TOML or JSON file::

    name = "gpu-box-vllm"
    wire = "openai"
    base_urls = ["http://gpu-box:8000"]
    structural = true

    [evidence.structural]
    observed = "a finish_reason before [DONE] on every complete answer"
    seen = 12
    date = "2026-12-03"
    source = "railings probe http://gpu-box:8000"

:func:`choose` picks the profile for one endpoint, the same way for the client, the
guard, the gateway and ``replay``: the one named (a :class:`Profile`, a built-in's
name, ``"wire"`` for none, or a file); else the first file of a profiles directory
(``RAILINGS_PROFILES``) that matches the base URL and model; else the first built-in
that does; else :data:`~railings.turn.profile.WIRE`, the wire's own rule.
"""

from __future__ import annotations

import functools
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from railings.errors import ConfigurationError
from railings.turn.profile import RULES, WIRE, Evidence, Profile

__all__ = [
    "BUILTIN",
    "ENV",
    "NAMES",
    "Evidence",
    "Profile",
    "builtin",
    "choose",
    "label",
    "load",
    "parse",
    "read_directory",
]

ENV = "RAILINGS_PROFILES"

_CORPUS = "railings' test corpus, tests/corpus/"


def _seen(observed: str, seen: int, source: str) -> Evidence:
    return Evidence(observed=observed, seen=seen, date="2026-12-03", source=source)


def _structural(observed: str, seen: int, source: str) -> dict[str, Evidence]:
    """The evidence of a built-in whose one observation is about ``structural``."""
    return {"structural": _seen(observed, seen, source)}


# Each entry's evidence is checked against the captures it cites
# (tests/test_profiles.py): a count that stops being true fails the suite.
BUILTIN: tuple[Profile, ...] = (
    Profile(
        name="openai",
        base_urls=("https://api.openai.com",),
        structural=True,
        evidence=_structural(
            "every complete Chat Completions stream sends a finish_reason before "
            "[DONE]; Responses streams end with response.completed, which carries "
            "the status",
            9 + 9,
            _CORPUS + "real/openai and responses (openai service)",
        ),
    ),
    Profile(
        name="anthropic",
        base_urls=("https://api.anthropic.com",),
        structural=True,
        evidence=_structural(
            "every stream sends message_delta with its stop_reason before "
            "message_stop, a block cut by max_tokens left open included",
            14,
            _CORPUS + "real/anthropic",
        ),
    ),
    Profile(
        name="gemini",
        base_urls=(
            "https://generativelanguage.googleapis.com",
            "https://aiplatform.googleapis.com",
            "https://*-aiplatform.googleapis.com",
        ),
        structural=True,
        evidence=_structural(
            "the proof is the finishReason (or a prompt's blockReason) itself",
            10,
            _CORPUS + "gemini",
        ),
    ),
    Profile(
        name="bedrock",
        base_urls=("https://bedrock-runtime.*.amazonaws.com",),
        structural=True,
        evidence=_structural(
            "the proof is messageStop, which carries the stopReason",
            10,
            _CORPUS + "bedrock",
        ),
    ),
    Profile(
        name="deepseek",
        base_urls=("https://api.deepseek.com",),
        first_content=600.0,
        evidence={
            "first_content": _seen(
                "sends `: keep-alive` comments while a request waits, and closes it if "
                "inference has not started after 10 minutes",
                1,
                "https://api-docs.deepseek.com/quick_start/rate_limit",
            ),
            "structural": _seen(
                "not set: two captures send a finish_reason, too few to rule on",
                2,
                _CORPUS + "real/deepseek",
            ),
        },
    ),
    Profile(
        name="azure-openai",
        base_urls=("https://*.openai.azure.com",),
        evidence=_structural(
            "not set: two captures send a finish_reason before [DONE], too few to rule "
            "on for a service whose content filter adds frames of its own",
            2,
            _CORPUS + "real/azure-openai",
        ),
    ),
    Profile(
        name="openrouter",
        base_urls=("https://openrouter.ai/api",),
        evidence=_structural(
            "not set: its two complete captures send a finish_reason before [DONE] (a "
            "third ends in an error), but it relays the streams of many providers",
            2,
            _CORPUS + "real/openrouter",
        ),
    ),
    Profile(
        name="ollama-openai",
        base_urls=("http://localhost:11434", "http://127.0.0.1:11434"),
        evidence=_structural(
            "not set: its OpenAI-compatible API has ended complete answers without a "
            "finish_reason (pydantic/pydantic-ai#3045) or with an empty one "
            "(ollama/ollama#4357)",
            2,
            "https://github.com/pydantic/pydantic-ai/pull/3045, "
            "https://github.com/ollama/ollama/issues/4357",
        ),
    ),
    Profile(
        name="snowflake-cortex",
        base_urls=("https://*.snowflakecomputing.com",),
        evidence=_structural(
            "not set: a complete answer ends with [DONE] and no finish_reason",
            1,
            _CORPUS + "real/snowflake/cortex_no_finish_reason.sse",
        ),
    ),
)

_BY_NAME = {p.name: p for p in BUILTIN}
NAMES: tuple[str, ...] = (WIRE.name, *_BY_NAME)
"""Every name :func:`builtin` knows: ``wire`` and the built-ins'."""


def builtin(name: str) -> Profile:
    """The built-in profile ``name``, or :data:`WIRE` for ``"wire"``."""
    if name == WIRE.name:
        return WIRE
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ConfigurationError(
            f"unknown profile {name!r}: expected one of {', '.join(NAMES)}, or a file"
        ) from None


_FIELDS = {"name", "wire", "base_urls", "models", "evidence", *RULES}


def parse(data: Mapping[str, Any], where: str = "profile") -> Profile:
    """A profile from a file's decoded contents; anything it may not say is refused with
    :class:`~railings.errors.ConfigurationError` naming it."""
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{where}: a profile is a table of fields")
    for key in data:
        if key not in _FIELDS:
            if any(word in key.lower() for word in ("proof", "eof", "complete", "done", "end")):
                raise ConfigurationError(
                    f"{where}: {key!r} refused: a profile may name no ending that is not "
                    "the provider's own proof, nor accept a stream without one"
                )
            raise ConfigurationError(
                f"{where}: unknown field {key!r} (a profile may set {', '.join(RULES)})"
            )
    evidence = data.get("evidence", {})
    if not isinstance(evidence, Mapping) or not all(
        isinstance(entry, Mapping) for entry in evidence.values()
    ):
        raise ConfigurationError(f"{where}: evidence is a table per rule")
    wire = data.get("wire")
    try:  # (each refusal below is named once, with ``where``, by the last clause)
        return Profile(
            name=_text(data.get("name"), "name"),
            wire=None if wire is None else _text(wire, "wire"),
            base_urls=_texts(data.get("base_urls", ()), "base_urls"),
            models=_texts(data.get("models", ()), "models"),
            structural=_flag(data, "structural"),
            first_content=data.get("first_content"),
            misreports_length=_flag(data, "misreports_length"),
            proof=data.get("proof"),
            evidence={rule: Evidence(**dict(entry)) for rule, entry in evidence.items()},
        )
    except TypeError as exc:
        raise ConfigurationError(
            f"{where}: evidence needs observed, seen, date and source"
        ) from exc
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None


def _flag(data: Mapping[str, Any], name: str) -> bool:
    # Only true or false: a quoted "true" read as false would leave a rule the file
    # asks for silently unset.
    value = data.get(name, False)
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be true or false, not {value!r}")
    return value


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise ConfigurationError(f"{name} must be a string")
    return value


def _texts(value: object, name: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f"{name} must be a list of strings")
    return tuple(value)


def load(path: str | Path) -> list[Profile]:
    """The profiles of a file (``.toml`` or ``.json``) or of a directory's such files, in
    name order. A file that cannot be read or parsed raises
    :class:`~railings.errors.ConfigurationError` naming it."""
    where = Path(path)
    files = sorted(where.glob("*.toml")) + sorted(where.glob("*.json"))
    if where.is_file():
        files = [where]
    elif not where.is_dir():
        raise ConfigurationError(f"no profile at {where}")
    found = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
            data = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigurationError(f"profile {file}: {exc}") from None
        found.append(parse(data, f"profile {file}"))
    return found


def choose(
    profile: Profile | str | Path | None,
    base_url: str,
    model: str | None = None,
    *,
    directory: str | Path | None = None,
) -> Profile:
    """The profile that judges requests to ``base_url`` (module docstring)."""
    if isinstance(profile, Profile):
        return profile
    if isinstance(profile, Path) or (isinstance(profile, str) and _looks_like_path(profile)):
        found = load(profile)
        if not found:
            raise ConfigurationError(f"no profile in {profile}")
        return _first(found, base_url, model) or found[0]
    if isinstance(profile, str):
        return builtin(profile)
    return _first(read_directory(directory), base_url, model) or (
        _first(BUILTIN, base_url, model) or WIRE
    )


def read_directory(directory: str | Path | None = None) -> tuple[Profile, ...]:
    """The profiles of ``directory`` (default: ``RAILINGS_PROFILES``; none when unset),
    read once per process, as :func:`choose` reads them. A shell that chooses per request
    calls it when it starts, so that a file there that cannot be used fails then, and
    not once an upstream has answered a request (and billed it)."""
    directory = directory if directory is not None else os.environ.get(ENV) or None
    return () if directory is None else _loaded(str(directory))


def label(profile: Profile) -> str:
    """The name a metric, a span or a journal shows for ``profile``, from a fixed set: a
    built-in's name, ``wire``, or ``custom`` for a profile of the user's (whose name is
    theirs, and would make a label of unbounded values)."""
    if profile is WIRE or _BY_NAME.get(profile.name) is profile:
        return profile.name
    return "custom"


@functools.lru_cache(maxsize=8)
def _loaded(directory: str) -> tuple[Profile, ...]:
    # Read once per process: a shell asks for every request.
    return tuple(load(directory))


def _looks_like_path(text: str) -> bool:
    return os.sep in text or text.endswith((".toml", ".json"))


def _first(profiles: Any, base_url: str, model: str | None) -> Profile | None:
    return next((p for p in profiles if p.matches(base_url, model)), None)
