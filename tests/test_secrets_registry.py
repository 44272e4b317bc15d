"""The secret registry lives at the edge; the core's redaction only asks it.

``railings.redact`` holds no lock and reads no environment (the import
allow-list in test_core_rules.py keeps it so); a :class:`SecretRegistry` keeps
the secrets, reads the key variables of the environment it is given on first
use, and is installed for the whole core, errors included.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from railings import redact as redact_module
from railings.errors import ProviderError
from railings.redact import MARKER, Holdback, Redactor, install, redact, redact_pieces
from railings.secrets import SECRETS, SecretRegistry


@pytest.fixture
def own_registry() -> Iterator[SecretRegistry]:
    registry = SecretRegistry(environ={"OPENAI_API_KEY": "sk-from-the-given-env-0001"})
    install(registry)
    try:
        yield registry
    finally:
        install(SECRETS)


def test_the_package_installs_the_process_registry() -> None:
    assert redact_module._source is SECRETS


def test_a_redactor_is_an_immutable_set() -> None:
    empty = Redactor()
    one = empty.adding(["sk-one-0000000001", "short", None])
    assert empty.secrets == frozenset() and one.secrets == {"sk-one-0000000001"}
    assert one.adding(["sk-one-0000000001"]) is one
    assert one.redact("a sk-one-0000000001 b") == f"a {MARKER} b"


def test_the_environment_given_is_read_on_first_use(own_registry: SecretRegistry) -> None:
    assert redact("k=sk-from-the-given-env-0001") == f"k={MARKER}"
    assert "sk-from-the-given-env-0001" in own_registry


def test_a_registry_without_environment_reads_none() -> None:
    registry = SecretRegistry()
    assert len(registry) == 0
    registry.register("sk-registered-000001")
    registry.register_url("https://user:pa%24%24word-0001@example.test/v1")
    assert {"sk-registered-000001", "pa$$word-0001", "pa%24%24word-0001"} <= (
        registry.redactor().secrets
    )


def test_errors_holdback_and_pieces_use_the_installed_registry(
    own_registry: SecretRegistry,
) -> None:
    own_registry.register("sk-only-in-this-registry")
    error = ProviderError("echo: sk-only-in-this-registry")
    assert "sk-only" not in error.message and MARKER in error.message
    held = Holdback()
    out = held.feed("x sk-only-in-") + held.feed("this-registry y") + held.flush()
    assert out == f"x {MARKER} y"
    assert "".join(redact_pieces(["sk-only-in", "-this-registry"])) == MARKER
    install(SECRETS)
    assert "sk-only-in-this-registry" not in SECRETS  # the process registry never saw it


def test_the_moved_log_names_still_resolve_with_a_warning() -> None:
    from railings import secrets

    with pytest.warns(DeprecationWarning, match="railings.secrets"):
        assert redact_module.install_log_redaction is secrets.install_log_redaction
    with pytest.raises(AttributeError):
        redact_module.no_such_name  # noqa: B018
