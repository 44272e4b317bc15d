"""A wire cannot be half-registered: one more spec in the registry reaches every table.

A fresh interpreter registers a seventh wire the way a new provider module would be
registered (its spec in ``SPECS``, ``DETECTION_ORDER`` and ``KEY_PICKS`` the moment the
registry is built, its ``KitWire`` in the test kit), then asks every table that is keyed
by provider whether it has it: the CLI's choices and defaults, the test kit, the matrix,
telemetry, the transport, classification, the stop-reason normalization, the gateway.
A table that keeps its own list instead of reading the registry is named. Then the
scripted server answers the seventh wire and railings reads its turn end to end. The
registration itself is ``tests/_seventh.py``.

The converse, that no module outside ``providers/`` keeps a literal table keyed by
provider, is the source scan in ``tests/test_providers.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SEVENTH = Path(__file__).with_name("_seventh.py")


def _missing(mode: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(SEVENTH), mode], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    missing: list[str] = json.loads(done.stdout.splitlines()[-1])
    return missing


def test_a_seventh_spec_in_the_registry_reaches_every_table() -> None:
    missing = _missing("with-kit")
    assert not missing, "the seventh wire is missing from: " + "; ".join(missing)


def test_a_spec_without_its_kit_wire_is_named_by_the_kit() -> None:
    # Half a registration: the spec is in the registry, the test kit has no wire for it.
    # The kit says so by name, wherever a table needs the kit's wire, instead of
    # answering the seventh wire in another wire's shapes.
    missing = _missing("registry-only")
    kit = "(LookupError: the test kit does not speak seventh)"
    for table in ("kit_wire", "wire_for_path", "wire_for_request"):
        assert f"testing.wires.{table} {kit}" in missing
    assert f"matrix.PROVIDERS {kit}" in missing
    assert all(m.endswith(kit) for m in missing), missing
