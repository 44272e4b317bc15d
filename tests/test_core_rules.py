"""Tables of the core: stop-reason normalization, the termination state machine,
the error classification tables, and the import boundary of the sans-IO core."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from dataclasses import fields
from inspect import signature
from pathlib import Path

import pytest

from railings import IllegalTransition, RailingsError, errors, inspect, replay
from railings.classify import (
    CONTENT_IDLE_MESSAGE,
    IDLE_MESSAGE,
    INTERRUPTED_MESSAGE,
    class_for_provider_type,
    class_for_status,
    classify_text,
)
from railings.integrations import inspect_message
from railings.transport.config import ClientConfig
from railings.turn.assembler import TurnAssembler
from railings.turn.attempt import Attempt
from railings.turn.reader import StreamReader
from railings.turn.stop_reason import derive_stop_reason, is_truncated, normalize_stop_reason
from railings.turn.termination import TRANSITIONS, Signal, State, TerminationMachine

SRC = Path(__file__).resolve().parents[1] / "src" / "railings"


@pytest.mark.parametrize(
    ("wire", "normalized"),
    [
        ("length", "max_tokens"),
        ("max_tokens", "max_tokens"),
        ("max_output_tokens", "max_tokens"),
        ("stop", "end_turn"),
        ("end_turn", "end_turn"),
        ("tool_calls", "tool_use"),
        ("function_call", "tool_use"),
        ("tool_use", "tool_use"),
        ("content_filter", "content_filter"),
        ("stop_sequence", "stop_sequence"),
        ("refusal", "refusal"),
        ("pause_turn", "pause_turn"),
        ("Something_New", "something_new"),
        ("LENGTH", "max_tokens"),
    ],
)
def test_stop_reason_normalization(wire: str, normalized: str) -> None:
    assert normalize_stop_reason(wire) == normalized


def test_derivation_order_is_limit_then_tool_use_then_end_turn() -> None:
    assert derive_stop_reason(saw_tool_use=True, output_tokens=100, max_tokens=100) == "max_tokens"
    assert derive_stop_reason(saw_tool_use=True, output_tokens=99, max_tokens=100) == "tool_use"
    assert derive_stop_reason(saw_tool_use=False, output_tokens=99, max_tokens=100) == "end_turn"
    assert derive_stop_reason(saw_tool_use=False, output_tokens=500, max_tokens=0) == "end_turn"
    assert derive_stop_reason(saw_tool_use=False, output_tokens=None, max_tokens=10) == "end_turn"


def test_truncation_is_an_output_limit_stop_or_billed_output_at_the_limit() -> None:
    assert is_truncated("max_tokens")
    assert is_truncated("tool_use", output_tokens=64, max_tokens=64)
    assert not is_truncated("tool_use", output_tokens=63, max_tokens=64)
    assert not is_truncated("end_turn")
    assert not is_truncated(None)


def test_no_caller_can_name_a_service_to_waive_a_cut() -> None:
    # The waiver's one home is the profile (misreports_length); no parameter elsewhere
    # can quietly spare a cut call the gate.
    shells = (is_truncated, replay, inspect, inspect_message, StreamReader, Attempt, TurnAssembler)
    for shell in shells:
        assert "service" not in signature(shell).parameters, shell
        assert "exemptions" not in signature(shell).parameters, shell
    assert "service" not in {f.name for f in fields(ClientConfig)}


def test_only_the_proof_moves_to_clean() -> None:
    for state, row in TRANSITIONS.items():
        for signal, target in row.items():
            if target is State.TERMINATED_CLEANLY and state is not State.TERMINATED_CLEANLY:
                assert signal is Signal.PROOF


def test_terminal_states_absorb_everything() -> None:
    for terminal in (State.TERMINATED_CLEANLY, State.TERMINATED_ABRUPTLY):
        assert set(TRANSITIONS[terminal].values()) == {terminal}
        assert set(TRANSITIONS[terminal]) == set(Signal)


def test_illegal_transition_names_state_and_event() -> None:
    machine = TerminationMachine()
    with pytest.raises(IllegalTransition) as info:
        machine.signal(Signal.PROOF)  # a proof before any byte is a driver bug
    assert (info.value.state, info.value.event) == ("connecting", "proof")


@pytest.mark.parametrize(
    ("status", "cls", "retryable"),
    [
        (400, errors.BadRequest, False),
        (401, errors.AuthenticationError, False),
        (403, errors.AuthenticationError, False),
        (404, errors.BadRequest, False),
        (422, errors.BadRequest, False),
        (429, errors.RateLimited, True),
        (500, errors.ServerError, True),
        (502, errors.ServerError, True),
        (503, errors.Overloaded, True),
        (529, errors.Overloaded, True),
    ],
)
def test_status_table(status: int, cls: type, retryable: bool) -> None:
    assert class_for_status(status) is cls
    assert cls.retryable is retryable


def test_provider_types() -> None:
    assert class_for_provider_type("overloaded_error") is errors.Overloaded
    assert class_for_provider_type("tool_use_failed") is errors.BadRequest
    assert class_for_provider_type("context_length_exceeded") is errors.ContextWindowExceeded
    assert class_for_provider_type("who_knows", 502) is errors.ServerError
    assert class_for_provider_type(None) is errors.ProviderError


def test_own_interruption_messages_classify_as_retryable_network() -> None:
    """Pinned verbatim: rewording these must not turn an automatic retry into a hard failure."""
    assert INTERRUPTED_MESSAGE == "stream ended without the provider's termination proof"
    assert IDLE_MESSAGE == "stream went idle: no data for {seconds:g} s while streaming"
    assert (
        CONTENT_IDLE_MESSAGE == "stream went idle: no content for {seconds:g} s, only keep-alives"
    )
    for message in (
        INTERRUPTED_MESSAGE,
        IDLE_MESSAGE.format(seconds=30),
        CONTENT_IDLE_MESSAGE.format(seconds=300),
    ):
        cls = classify_text(f"wrapped: {message}")
        assert cls is errors.TransportError and cls.retryable


def test_error_tree_has_one_root_and_remote_apart_from_local() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, RailingsError)
        if cls not in (RailingsError, errors.RemoteError, errors.LocalError):
            assert issubclass(cls, errors.RemoteError) != issubclass(cls, errors.LocalError), name


# -- the import boundary: an allow-list per layer of the sans-IO core ----------------------
#
# Each layer names the standard-library modules it may import (PURE, plus its own extras)
# and the railings layers it may import. Anything else fails: a lock (threading), an
# environment read (os), a socket, an event loop, a clock, logging, the HTTP stack, or
# any railings module outside the core (transport, secrets, agent...). The check is
# transitive: a core layer may only import layers that are themselves checked here.

# Pure computation: no I/O, no clock, no process state.
PURE = frozenset(
    {
        "__future__",
        "abc",
        "ast",
        "base64",
        "binascii",
        "codecs",
        "collections",
        "collections.abc",
        "copy",
        "dataclasses",
        "enum",
        "functools",
        "itertools",
        "json",
        "math",
        "operator",
        "re",
        "string",
        "types",
        "typing",
        "unicodedata",
    }
)

# layer -> (its standard-library extras, the railings layers it may import)
LAYERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "events.py": (frozenset(), frozenset()),
    # The normalized stop reasons: below the providers (whose tables map into them) and
    # the turn layer (which normalizes with those tables).
    "stops.py": (frozenset(), frozenset()),
    "errors.py": (frozenset(), frozenset({"redact.py"})),
    # sys: the deprecated aliases read railings.secrets from sys.modules; warnings: they warn.
    "redact.py": (frozenset({"urllib.parse", "sys", "warnings"}), frozenset()),
    "classify.py": (frozenset(), frozenset({"errors.py", "providers"})),
    "limits.py": (frozenset(), frozenset({"errors.py", "events.py"})),
    # importlib: the optional fast JSON parser (jiter) is looked up by name.
    # struct, zlib, uuid: the event-stream frame decoder (lengths, CRC32, UUID header values).
    "wire": (
        frozenset({"importlib", "struct", "zlib", "uuid"}),
        frozenset({"errors.py", "events.py", "wire"}),
    ),
    "turn": (
        frozenset(),
        frozenset(
            {
                "errors.py",
                "events.py",
                "stops.py",
                "classify.py",
                "redact.py",
                "limits.py",
                "wire",
                "turn",
                "providers",
            }
        ),
    ),
    # The registry and one package per wire (providers/<name>/: spec, decoder, encoder),
    # whose decoders read the shared framing in wire/ and whose encoders the shared
    # conversation (messages.py).
    # urllib.parse: a model id is percent-encoded into the request path (quote, pure).
    # Never the turn layer, nor classification: both read the registry, so a provider
    # that imported them would point back up (turn normalizes with the specs' stop-reason
    # spellings; classification with their error types).
    "providers": (
        frozenset({"urllib.parse"}),
        frozenset(
            {
                "errors.py",
                "events.py",
                "stops.py",
                "wire",
                "providers",
                "messages.py",
                "conversation.py",
            }
        ),
    ),
    # What every wire's encoder shares: the conversation's names, the max_tokens check.
    "messages.py": (frozenset(), frozenset({"errors.py", "conversation.py"})),
    "conversation.py": (frozenset(), frozenset({"errors.py", "events.py", "turn"})),
    # The name the gateway's judge imports the splitter by; it lives in wire/blocks.py.
    "sse_blocks.py": (frozenset(), frozenset({"wire"})),
    "replay.py": (
        frozenset(),
        frozenset({"errors.py", "events.py", "classify.py", "wire", "turn", "providers"}),
    ),
    # Continuing a Partial answer: the strategies, the repeat, the join, and drivers that
    # use a client only through what it is given (never the transport itself).
    "continuation": (
        frozenset(),
        frozenset(
            {"errors.py", "events.py", "conversation.py", "messages.py", "turn", "providers"}
        ),
    ),
}


def layer_of(module: str) -> str:
    """``railings.turn.model`` -> ``turn``; ``railings.errors`` -> ``errors.py``."""
    first = module.split(".")[1]
    return first if first in LAYERS or (SRC / first).is_dir() else f"{first}.py"


def import_violations(source: str, layer: str) -> list[str]:
    """Every import in ``source`` that ``layer``'s allow-list does not grant."""
    extras, siblings = LAYERS[layer]
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                out.append(f"relative import {'.' * node.level}{node.module or ''}")
                continue
            names = [node.module]
            if node.module == "railings":  # from railings import x: x is the module
                names = [f"railings.{alias.name}" for alias in node.names]
        for name in names:
            if name == "railings" or name.startswith("railings."):
                if name == "railings" or layer_of(name) not in siblings | {layer}:
                    out.append(name)
            elif name not in PURE | extras:
                out.append(name)
    return out


def layer_files(layer: str) -> list[Path]:
    path = SRC / layer
    if path.is_dir():
        return sorted(path.rglob("*.py"))
    return [path] if path.exists() else []


def test_every_core_layer_imports_only_its_allow_list() -> None:
    """The sans-IO boundary: no lock, environment read, socket or clock in the core."""
    checked = 0
    for layer in LAYERS:
        for file in layer_files(layer):
            checked += 1
            bad = import_violations(file.read_text(encoding="utf-8"), layer)
            assert not bad, f"{file.relative_to(SRC)} ({layer}) imports {bad}"
    assert checked > 20


# The product's I/O layers: each may import any layer above except the test kit, which
# is a consumer of the product (fault proxy, scripted server, matrix), never a part of it.
PRODUCT = ("gateway", "transport", "agent", "dispatch", "integrations", "guard.py")


def test_the_product_never_imports_the_test_kit() -> None:
    checked = 0
    for layer in (*LAYERS, *PRODUCT):
        for file in layer_files(layer):
            checked += 1
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                kit = ("railings.testing", "railings.testing.")
                bad = [n for n in names if n == kit[0] or n.startswith(kit[1])]
                assert not bad, f"{file.relative_to(SRC)} ({layer}) imports the test kit: {bad}"
    assert checked > 40


def test_the_allow_list_is_closed_under_its_own_imports() -> None:
    # A layer may only lean on layers that are checked too: otherwise a lock one import away
    # would pass unseen.
    for layer, (_, siblings) in LAYERS.items():
        assert siblings <= LAYERS.keys(), (layer, siblings - LAYERS.keys())


@pytest.mark.parametrize(
    ("layer", "source"),
    [
        ("turn", "import threading"),
        ("turn", "from threading import Lock"),
        ("wire", "import os"),
        ("errors.py", "from os import environ"),
        ("redact.py", "import os.path"),
        ("wire", "import socket"),
        ("turn", "import asyncio"),
        ("turn", "import time"),
        ("events.py", "import logging"),
        ("wire", "import httpx2"),
        ("turn", "from railings.transport.fallback import FALLBACK"),
        ("redact.py", "from railings.secrets import SECRETS"),
        ("turn", "from railings import secrets"),
        ("wire", "from railings.turn.model import Turn"),
        ("providers", "from railings.turn.stop_reason import Stop"),
        ("providers", "from railings.classify import class_for_status"),
        ("messages.py", "from railings.providers import spec"),
        ("messages.py", "from railings.providers.gemini.encoder import gemini_body"),
        ("wire", "from railings.providers.ollama.decoder import OllamaDecoder"),
        ("wire", "from railings.providers import spec"),
        ("turn", "from . import model"),
        ("turn", "def f():\n    import threading\n"),
    ],
)
def test_the_allow_list_refuses_process_state_and_io(layer: str, source: str) -> None:
    assert import_violations(source, layer), f"{layer} allowed {source!r}"


def test_the_allow_list_lets_the_core_import_what_it_needs() -> None:
    assert import_violations("from railings.providers import PROVIDERS", "turn") == []
    assert import_violations("import json\nfrom railings.events import TextDelta", "wire") == []


# -- which way the layers point -------------------------------------------------------------
#
# A layer never imports one that reads it. Each pair is an import that would point back up,
# with why; the allow-list above refuses providers -> turn as well, and these hold outside
# the sans-IO core too.

NEVER: dict[tuple[str, str], str] = {
    ("wire", "providers"): "a wire's decoder, in its provider's package, reads the shared "
    "framing in wire/; the framing never reads a wire",
    ("providers", "turn"): "the turn layer reads the registry (stop-reason spellings, "
    "framing); a provider names a stop reason with railings.stops",
    ("gateway", "agent"): "the gateway records its turns in railings.journal, the store "
    "the agent writes too",
}


def imports_of(source: str) -> list[tuple[str, str | None]]:
    """Every ``(module, name)`` that ``source`` imports, wherever the statement is:
    ``import m`` is ``(m, None)``, ``from m import n`` is ``(m, n)``, and a name that is
    a railings module (``from railings import agent``) is that module, ``(m.n, None)``."""
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                under = Path(*node.module.split(".")[1:], alias.name)
                if node.module.startswith("railings") and (
                    (SRC / under).is_dir() or (SRC / under).with_suffix(".py").exists()
                ):
                    out.append((f"{node.module}.{alias.name}", None))
                else:
                    out.append((node.module, alias.name))
    return out


def reaches(source: str, layer: str) -> list[str]:
    """The imports in ``source`` of railings' ``layer`` (a package or a module)."""
    prefix = f"railings.{layer.removesuffix('.py')}"
    return [m for m, _ in imports_of(source) if m == prefix or m.startswith(prefix + ".")]


@pytest.mark.parametrize(("layer", "forbidden"), list(NEVER), ids=[f"{a}->{b}" for a, b in NEVER])
def test_no_layer_imports_one_that_reads_it(layer: str, forbidden: str) -> None:
    checked = 0
    for file in layer_files(layer):
        checked += 1
        bad = reaches(file.read_text(encoding="utf-8"), forbidden)
        assert not bad, (
            f"{file.relative_to(SRC)} imports {bad}: {layer} never imports {forbidden} "
            f"({NEVER[layer, forbidden]})"
        )
    assert checked


# A wire is one package, providers/<name>/: its modules import the shared layers, ``base``
# and their own package, never the registry (``providers/__init__.py`` imports every
# package: a cycle) and never another wire's package, except the pairs below, with why.
WIRE_SHARES: dict[tuple[str, str], str] = {
    ("openai_responses", "openai_chat"): "one platform: the error types and error body",
}


def wire_package_violations(source: str, package: str) -> list[str]:
    """What ``source``, a module of ``providers/<package>/``, imports of the registry or of
    another wire's package."""
    out: list[str] = []
    for module, name in imports_of(source):
        parts = module.split(".")
        if parts[:2] != ["railings", "providers"]:
            continue
        if len(parts) == 2:
            out.append(module if name is None else f"{module}.{name}")
        elif parts[2] not in ("base", package) and (package, parts[2]) not in WIRE_SHARES:
            out.append(module)
    return out


def test_a_wire_package_imports_neither_the_registry_nor_another_wire() -> None:
    packages = sorted(p for p in (SRC / "providers").iterdir() if (p / "__init__.py").exists())
    assert len(packages) >= 6
    for package in packages:
        for file in sorted(package.rglob("*.py")):
            bad = wire_package_violations(file.read_text(encoding="utf-8"), package.name)
            assert not bad, f"{file.relative_to(SRC)} imports {bad}"


@pytest.mark.parametrize(
    ("package", "source"),
    [
        ("gemini", "from railings.providers import spec"),
        ("gemini", "from railings.providers import SPECS"),
        ("gemini", "import railings.providers"),
        ("gemini", "from railings.providers.ollama.decoder import NDJSONDecoder"),
        ("openai_chat", "from railings.providers.openai_responses.spec import SPEC"),
    ],
)
def test_the_wire_package_rule_refuses_the_registry_and_other_wires(
    package: str, source: str
) -> None:
    assert wire_package_violations(source, package), f"{package} allowed {source!r}"


def test_the_wire_package_rule_lets_a_wire_import_its_own_and_the_base() -> None:
    allowed = (
        "from railings.providers.base import ProviderSpec\n"
        "from railings.providers.gemini.decoder import GeminiDecoder\n"
        "from railings.wire.sse import ServerSentEvent\n"
    )
    assert wire_package_violations(allowed, "gemini") == []


def test_importing_the_gateway_runs_nothing_of_the_agent() -> None:
    code = "import sys, railings.gateway\nfor m in sorted(sys.modules): print(m)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = [m for m in done.stdout.split() if m.split(".")[:2] == ["railings", "agent"]]
    assert not loaded, f"importing railings.gateway loads {loaded}"


# The gateway reads other layers only through what they publish. A leading underscore marks
# what a layer keeps to itself, a name in a module or a module in a package
# (``railings.wire._json``, ``providers/_tail.py``): the gateway imports neither (the
# package's own top-level helpers, ``railings._extras``, belong to no layer). Of ``wire/``
# it imports only the SSE framing it cuts events with, and only what that module's
# ``__all__`` exports; of ``providers/`` only the registry and ``base``, never a wire's
# package: a decoder's constants and patterns are its wire's business, and what the
# gateway needs of a wire it reads from the wire's spec (``error_shapes``, ``numbered``,
# ``sequence_numbers``).
GATEWAY_WIRE = frozenset({"railings.wire.sse"})

# Imports that break the rule until their module switches, with what to switch to. A pair
# listed here that is no longer imported fails the test too: remove it then.
GATEWAY_PENDING: dict[tuple[str, str], str] = {}


def gateway_violations(source: str) -> list[tuple[str, str]]:
    """What ``source``, a gateway module, imports that another layer keeps to itself:
    ``(what, why)`` pairs."""
    out: list[tuple[str, str]] = []
    for module, name in imports_of(source):
        if not module.startswith("railings.") or module.startswith("railings.gateway"):
            continue
        what = module if name is None else f"{module}.{name}"
        parts = module.split(".")
        if any(p.startswith("_") for p in parts[2:]) or (name or "").startswith("_"):
            out.append((what, "private to its layer"))
        elif parts[1] == "wire" and (
            module not in GATEWAY_WIRE or name not in importlib.import_module(module).__all__
        ):
            out.append((what, "a wire decoder's own: read it from the provider spec"))
        elif parts[1] == "providers" and len(parts) > 2 and parts[2] != "base":
            out.append((what, "a wire's own package: read its spec through the registry"))
    return out


def test_the_gateway_imports_no_private_name_and_no_decoder_constant() -> None:
    found: dict[tuple[str, str], str] = {}
    for file in layer_files("gateway"):
        rel = file.relative_to(SRC).as_posix()
        for what, why in gateway_violations(file.read_text(encoding="utf-8")):
            found[rel, what] = why
    unexpected = [
        f"{rel} imports {what}: {why}"
        for (rel, what), why in found.items()
        if (rel, what) not in GATEWAY_PENDING
    ]
    assert not unexpected, "\n".join(unexpected)
    stale = [key for key in GATEWAY_PENDING if key not in found]
    assert not stale, f"no longer imported, remove from GATEWAY_PENDING: {stale}"


@pytest.mark.parametrize(
    "source",
    [
        "from railings.providers.openai_responses.decoder import SEQUENCE_NUMBER",
        "from railings.providers.openai_chat.decoder import DONE",
        "from railings.wire import openai_chat",
        "import railings.providers.anthropic.decoder",
        "from railings.wire.sse import _BOM",
        "from railings.wire._json import load_object",
        "import railings.providers._tail",
        "from railings.providers.gemini import SPEC",
        "from railings.providers import ollama",
        "from railings.transport.coding import _decoded",
        "def f():\n    from railings.wire.sse import _OPEN\n",
    ],
)
def test_the_gateway_rule_refuses_private_names_and_decoder_constants(source: str) -> None:
    assert gateway_violations(source), f"the gateway allowed {source!r}"


def test_the_gateway_rule_lets_it_import_what_layers_publish() -> None:
    allowed = (
        "from railings.wire.sse import DEFAULT_MAX_EVENT_SIZE\n"
        "from railings.providers import spec\n"
        "from railings.providers.base import ErrorShapes\n"
        "from railings.telemetry import record_span as _record\n"  # a private alias is fine
        "from railings._extras import require\n"
        "from railings.gateway.judge import _own\n"  # its own modules' names
    )
    assert gateway_violations(allowed) == []
    assert reaches("from railings.turn.stop_reason import Stop", "turn")
    assert reaches("from railings import agent", "agent")
    assert reaches("import railings.agent.loop", "agent")
    assert not reaches("from railings.journal import Journal", "agent")


def test_generic_server_error_type_does_not_hide_an_overload_status() -> None:
    assert class_for_provider_type("server_error", 529) is errors.Overloaded
    assert class_for_provider_type("server_error", 503) is errors.Overloaded
    assert class_for_provider_type("api_error", 500) is errors.ServerError
    assert class_for_provider_type("overloaded_error", 500) is errors.Overloaded
