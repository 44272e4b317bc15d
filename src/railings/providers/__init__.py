"""The provider registry: every wire format railings speaks, one package each.

::

    openai_chat.SPEC        "openai"            OpenAI Chat Completions
    anthropic.SPEC          "anthropic"         Anthropic Messages
    openai_responses.SPEC   "openai-responses"  OpenAI Responses
    gemini.SPEC             "gemini"            Google Gemini (and Vertex AI)
    bedrock.SPEC            "bedrock"           Amazon Bedrock ConverseStream
    ollama.SPEC             "ollama"            Ollama /api/chat and /api/generate

Each package (``providers/<name>/``) holds its wire whole: ``spec.py``, one frozen
:class:`~railings.providers.base.ProviderSpec` with its stop-reason table and error
types; ``decoder.py``, frames in, normalized events out; ``encoder.py``, the
conversation as a request body. Every other layer reads the specs through this
registry (by name, by request path, or by the first event of a stream) instead of
keeping its own table. Adding a wire format is one package here, its name in
:data:`~railings.providers.base.ProviderName`, its line in :data:`SPECS` and
:data:`DETECTION_ORDER`, and its tests (``tests/test_providers.py`` checks every spec
whole, and that none of these lists misses one); the test kit speaks it once
``railings.testing.wires`` has its ``KitWire``. CONTRIBUTING.md has the recipe.
"""

from __future__ import annotations

from collections.abc import Iterable

from railings.errors import ConfigurationError, ProviderError
from railings.providers import anthropic, bedrock, gemini, ollama, openai_chat, openai_responses
from railings.providers.base import (
    Detection,
    EncodeRequest,
    ErrorShapes,
    Framing,
    Proof,
    ProviderDecoder,
    ProviderName,
    ProviderSpec,
    ScriptedShape,
    StopReasons,
)
from railings.stops import Stop
from railings.wire.sse import ServerSentEvent

__all__ = [
    "DETECTION_ORDER",
    "FALLBACK",
    "KEY_PICKS",
    "NAMES",
    "SPECS",
    "Detection",
    "EncodeRequest",
    "ErrorShapes",
    "Framing",
    "Proof",
    "ProviderDecoder",
    "ProviderName",
    "ProviderSpec",
    "ScriptedShape",
    "StopReasons",
    "derived_stop_reasons",
    "detect",
    "error_types",
    "provider_for_path",
    "spec",
    "spec_for_path",
    "stop_reason_on",
    "stop_reasons",
]

# In the order the CLI and the docs list them.
SPECS: tuple[ProviderSpec, ...] = (
    openai_chat.SPEC,
    anthropic.SPEC,
    openai_responses.SPEC,
    gemini.SPEC,
    bedrock.SPEC,
    ollama.SPEC,
)
NAMES: tuple[ProviderName, ...] = tuple(s.name for s in SPECS)
_BY_NAME: dict[str, ProviderSpec] = {s.name: s for s in SPECS}

# What a stream is read as when nothing in it says (an ``auto`` stream with no event
# any spec recognises): Chat Completions, the wire most services speak.
FALLBACK: ProviderSpec = openai_chat.SPEC


# Which wire a key in the environment picks when the CLI is told none, first found
# first: one spec per key variable a key-requiring spec reads (both OpenAI wires read
# OPENAI_API_KEY: it picks Chat Completions; Ollama needs no key, only --provider picks
# it). tests/test_providers.py checks that no such variable is missing.
KEY_PICKS: tuple[ProviderSpec, ...] = (anthropic.SPEC, openai_chat.SPEC, gemini.SPEC, bedrock.SPEC)


def spec(name: str) -> ProviderSpec:
    """The spec named ``name``; an unknown name is a
    :class:`~railings.errors.ConfigurationError` listing the known ones."""
    found = _BY_NAME.get(name)
    if found is None:
        raise ConfigurationError(
            f"unknown provider {name!r}: expected one of " + ", ".join(map(repr, NAMES))
        )
    return found


def spec_for_path(path: str) -> ProviderSpec | None:
    """The spec whose request paths ``path`` ends with (whatever prefix a gateway puts
    before it; query string and trailing slash ignored); None for any other path."""
    return next((candidate for candidate in SPECS if candidate.routes(path)), None)


def provider_for_path(path: str) -> str | None:
    """The name of the wire format a request path speaks, by how it ends; None for any
    other path. The guard watches these paths, and the fault proxy shapes its errors by
    them."""
    found = spec_for_path(path)
    return None if found is None else found.name


# The order detection asks the specs in: the wires whose frames say them by themselves
# first (Bedrock's event-stream prelude, Ollama's NDJSON line: see the reader), then the
# SSE wires whose events are named or typed (their hints are specific), then Gemini
# (its response object's camelCase keys), Chat Completions (a ``choices`` key,
# ``[DONE]``) last.
DETECTION_ORDER: tuple[ProviderSpec, ...] = (
    bedrock.SPEC,
    ollama.SPEC,
    anthropic.SPEC,
    openai_responses.SPEC,
    gemini.SPEC,
    openai_chat.SPEC,
)


def detect(
    sse: ServerSentEvent, specs: Iterable[ProviderSpec] = DETECTION_ORDER
) -> ProviderSpec | None:
    """The first SSE spec whose detection hints recognise ``sse``; None when none does
    (an event of a type no spec knows: the reader waits for the next one)."""
    found = (s for s in specs if s.framing is Framing.SSE and s.detection.recognises(sse))
    return next(found, None)


def error_types() -> dict[str, type[ProviderError]]:
    """Every spec's error types (provider error type or code -> error class) in one map,
    keyed in lower case (classification looks types up case-insensitively: Bedrock's
    ``throttlingException``, Gemini's ``RESOURCE_EXHAUSTED``); two specs that share a
    type agree on its class (a test proves it)."""
    out: dict[str, type[ProviderError]] = {}
    for candidate in SPECS:
        out.update((kind.lower(), cls) for kind, cls in candidate.error_types.items())
    return out


def stop_reasons() -> dict[str, Stop]:
    """Every spec's stop-reason spellings (``StopReasons.wire``) -> normalized, in one map
    keyed in lower case (normalization matches spellings case-insensitively: Gemini's
    are upper case); two specs that share a spelling agree on it (a test proves it).
    The turn layer normalizes with this map (:mod:`railings.turn.stop_reason`)."""
    out: dict[str, Stop] = {}
    for candidate in SPECS:
        out.update((w.lower(), stop) for w, stop in candidate.stop_reasons.wire.items())
    return out


def derived_stop_reasons() -> frozenset[str]:
    """Every spec's spellings whose meaning the turn decides (``StopReasons.derived``:
    the Responses status ``completed``), in lower case."""
    return frozenset(w.lower() for s in SPECS for w in s.stop_reasons.derived)


def stop_reason_on(target: ProviderSpec, stop: str) -> str | None:
    """``target``'s spelling of ``stop``, a stop reason in any registered wire's
    vocabulary (or normalized): a spelling of ``target`` stays as is, another is
    normalized (:func:`stop_reasons`) and inverted, or sent as its nearest; None when
    nothing knows it. The scripted server sends what this returns."""
    if stop in target.stop_reasons.wire:
        return stop
    return target.stop_reasons.to_wire(str(stop_reasons().get(stop.lower(), stop)))
