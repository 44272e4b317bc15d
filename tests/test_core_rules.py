"""Tables of the core: stop-reason normalization, the termination state machine,
the error classification tables, and the import boundary of the sans-IO core."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from railings import IllegalTransition, RailingsError, errors
from railings.classify import (
    CONTENT_IDLE_MESSAGE,
    IDLE_MESSAGE,
    INTERRUPTED_MESSAGE,
    class_for_provider_type,
    class_for_status,
    classify_text,
)
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


def test_exemption_table_is_empty_by_default_and_works_when_filled() -> None:
    assert is_truncated("max_tokens", "anyone")
    assert not is_truncated("max_tokens", "Acme", frozenset({"acme"}))
    assert not is_truncated("end_turn", None)


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


CORE = ["errors.py", "events.py", "classify.py", "limits.py", "replay.py", "wire", "turn"]
FORBIDDEN = {"httpx2", "httpx", "h2", "asyncio", "socket", "ssl", "threading", "selectors"}


def test_core_imports_no_io() -> None:
    """The sans-IO boundary: the core never imports a network or event-loop module."""
    files: list[Path] = []
    for entry in CORE:
        path = SRC / entry
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    assert len(files) > 8
    for file in files:
        tree = ast.parse(file.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN, f"{file.name} imports {name}"


def test_generic_server_error_type_does_not_hide_an_overload_status() -> None:
    assert class_for_provider_type("server_error", 529) is errors.Overloaded
    assert class_for_provider_type("server_error", 503) is errors.Overloaded
    assert class_for_provider_type("api_error", 500) is errors.ServerError
    assert class_for_provider_type("overloaded_error", 500) is errors.Overloaded
