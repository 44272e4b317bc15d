"""Registers a seventh wire in a fresh interpreter and prints, as JSON, every table keyed
by provider that does not have it (``tests/test_registration.py`` runs it).

The registry gains the seventh spec as it is built, before any layer reads it, exactly
as a line in ``providers/__init__.py`` would add it: ``SPECS``, ``DETECTION_ORDER`` and
``KEY_PICKS``. With ``with-kit`` the test kit gains its ``KitWire`` too (OpenAI's shapes
on the seventh wire's paths), the rest of a registration; with ``registry-only`` it does
not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.abc
import importlib.util
import io
import json
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

SEVENTH = "seventh"
PATH = "/v1/seventh/stream"


def seventh_spec(registry: Any) -> Any:
    """The seventh wire: Chat Completions' shapes under another name, paths, defaults,
    one stop-reason spelling and one error type of its own."""
    from railings.errors import Overloaded
    from railings.providers.base import StopReasons
    from railings.stops import Stop

    chat = registry.openai_chat.SPEC
    return dataclasses.replace(
        chat,
        name=SEVENTH,
        title="Seventh Wire",
        request_path="/seventh/stream",
        path_suffixes=("/seventh/stream",),
        default_base_url="https://seventh.invalid/v1",
        base_url_env="SEVENTH_BASE_URL",
        api_key_env="SEVENTH_API_KEY",
        default_model="seventh-1",
        gen_ai_name="seventh.ai",
        stop_reasons=StopReasons(
            wire={**chat.stop_reasons.wire, "SEVENTH_CUT": Stop.MAX_TOKENS},
            nearest=chat.stop_reasons.nearest,
        ),
        error_types={**chat.error_types, "seventh_overloaded": Overloaded},
    )


def register(module: ModuleType) -> None:
    """What a new provider's lines in the registry do."""
    spec = seventh_spec(module)
    module.SPECS = (*module.SPECS, spec)
    module.NAMES = tuple(s.name for s in module.SPECS)
    module._BY_NAME[spec.name] = spec
    *sse, last = module.DETECTION_ORDER  # Chat Completions stays the last one asked
    module.DETECTION_ORDER = (*sse, spec, last)
    module.KEY_PICKS = (*module.KEY_PICKS, spec)


class RegisterWhenBuilt(importlib.abc.MetaPathFinder):
    """Runs :func:`register` right after ``railings.providers`` is executed."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> Any:
        if name != "railings.providers":
            return None
        sys.meta_path.remove(self)
        found = importlib.util.find_spec(name)
        assert found is not None and found.loader is not None
        build = found.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            build(module)
            register(module)

        found.loader.exec_module = exec_module  # type: ignore[method-assign]
        return found


def main(with_kit: bool) -> list[str]:
    sys.meta_path.insert(0, RegisterWhenBuilt())
    import railings.providers as registry

    spec = registry.spec(SEVENTH)
    if with_kit:
        import railings.testing.wires as kit
        from railings.testing.kitwire import KitWire

        class SeventhWire(KitWire):
            """The kit's side of the seventh wire: OpenAI's shapes on its own paths."""

        SeventhWire.spec = spec
        kit.WIRES = (*kit.WIRES, SeventhWire())

    missing: list[str] = []

    def check(table: str, has_it: Callable[[], bool]) -> None:
        try:
            if not has_it():
                missing.append(table)
        except Exception as exc:  # a table that cannot even be built without it
            missing.append(f"{table} ({type(exc).__name__}: {exc})")

    def cli(*argv: str) -> Any:
        from railings.cli import build_parser

        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            return build_parser().parse_args(list(argv))
        return " ".join(out.getvalue().split())  # --help: the text printed

    check("railings run --provider", lambda: cli("run", "x", "--provider", SEVENTH).provider)
    check("railings run --help", lambda: "seventh seventh-1" in cli("run", "--help"))
    check("railings replay --provider", lambda: cli("replay", "f", "--provider", SEVENTH))
    check("railings matrix --providers", lambda: cli("matrix", "--providers", SEVENTH))

    from railings.cli import endpoint

    check("cli.endpoint.DEFAULT_MODELS", lambda: endpoint.DEFAULT_MODELS[SEVENTH] == "seventh-1")
    check("cli.endpoint.KEY_PICKS", lambda: spec in endpoint.KEY_PICKS)

    from railings.testing.http import Headers
    from railings.testing.wires import kit_wire, wire_for_path, wire_for_request

    check("testing.wires.kit_wire", lambda: kit_wire(spec).spec is spec)
    check("testing.wires.wire_for_path", lambda: wire_for_path(PATH) is kit_wire(spec))
    check(
        "testing.wires.wire_for_request",
        lambda: wire_for_request(PATH, Headers()) == (kit_wire(spec), True),
    )

    def matrix() -> bool:
        from railings.matrix import CLIENTS, PROVIDERS

        return SEVENTH in PROVIDERS and SEVENTH in CLIENTS["railings"]().providers

    check("matrix.PROVIDERS", matrix)

    from railings import classify, telemetry
    from railings.transport.config import DEFAULT_BASE_URLS, ClientConfig

    check("telemetry.GEN_AI_PROVIDERS", lambda: telemetry.GEN_AI_PROVIDERS[SEVENTH] == "seventh.ai")
    check(
        "transport.config.DEFAULT_BASE_URLS",
        lambda: DEFAULT_BASE_URLS[SEVENTH] == spec.default_base_url,
    )
    check(
        "transport.config.ClientConfig.url",
        lambda: (
            ClientConfig(provider=SEVENTH, model="m", api_key="k").url
            == "https://seventh.invalid/v1/seventh/stream"
        ),
    )
    check(
        "classify.PROVIDER_TYPE_TABLE",
        lambda: classify.class_for_provider_type("seventh_overloaded").__name__ == "Overloaded",
    )

    from railings.turn.stop_reason import TABLE, normalize_stop_reason

    check(
        "turn.stop_reason.TABLE",
        lambda: TABLE["seventh_cut"] == normalize_stop_reason("SEVENTH_CUT") == "max_tokens",
    )

    from railings.gateway.paths import judged_provider

    check("gateway.paths.judged_provider", lambda: judged_provider("POST", PATH) == SEVENTH)

    def end_to_end() -> bool:
        from railings.messages import User
        from railings.testing import Script, ScriptedServer
        from railings.transport import ProviderClient

        with ScriptedServer(Script.text("seven")) as server:
            base = server.url + "/v1"
            config = ClientConfig(provider=SEVENTH, model="m", api_key="k", base_url=base)
            with ProviderClient(config) as client:
                stream = client.stream_turn([User("hi")])
                for _ in stream:
                    pass
                turn = stream.turn
            paths = [r.path for r in server.requests]
        return (turn.provider, turn.text, turn.termination.value, paths) == (
            SEVENTH,
            "seven",
            "clean",
            [PATH],
        )

    if with_kit:
        check("a turn through the scripted server and the client", end_to_end)
    return missing


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1] == "with-kit")))
