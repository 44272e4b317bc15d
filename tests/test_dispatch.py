"""Batch dispatch: the truncation gate and its placement, the notices, the gate chain,
the loop guard and the circuit breaker -- on turns built from real stream bytes.

The shell is spied on at :func:`railings.dispatch.builtins.spawn`, the one place a
process starts. The spy records the command line the model wrote and runs
``true`` instead: nothing a test feeds in ever runs.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import railings.dispatch.builtins as builtins_module
from conftest import capture
from railings import RejectReason, Turn, replay
from railings.dispatch import (
    ALLOW,
    BatchResult,
    CircuitBreaker,
    Decision,
    Dispatch,
    Dispatcher,
    Gate,
    Invocation,
    LoopGuard,
    OutcomeStatus,
    Refuse,
    SchemaGate,
    ToolExecutor,
    ToolRegistry,
    builtin_tools,
    default_chain,
    tool,
)
from railings.errors import CircuitOpen, ConfigurationError
from railings.turn.profile import Evidence, Profile
from railings.turn.reader import StreamReader
from streams import anthropic_tool_stream, openai_chunk, openai_tool_stream, sse

FRAGMENT = '{"command": "rm -rf /tmp/leg'  # the model's half-written command
COMPLETE = '{"command": "rm -rf /tmp/legacy-cleanup"}'
EXECUTED, REJECTED, ERROR = OutcomeStatus.EXECUTED, OutcomeStatus.REJECTED, OutcomeStatus.ERROR
INTERCEPTED, DENIED = OutcomeStatus.INTERCEPTED, OutcomeStatus.DENIED


# -- helpers ---------------------------------------------------------------------------------


def calls_stream(
    calls: list[tuple[str, str]], finish: str | None = "tool_calls", *, done: bool = True
) -> bytes:
    """An OpenAI stream with one tool call per ``(name, arguments)``, arguments in 7-char
    fragments; ids are ``call_0``, ``call_1`` ..."""
    parts = [openai_chunk({"role": "assistant", "content": ""})]
    for index, (name, arguments) in enumerate(calls):
        start = {"index": index, "id": f"call_{index}", "type": "function"}
        start["function"] = {"name": name, "arguments": ""}
        parts.append(openai_chunk({"tool_calls": [start]}))
        for at in range(0, len(arguments), 7):
            delta = {"index": index, "function": {"arguments": arguments[at : at + 7]}}
            parts.append(openai_chunk({"tool_calls": [delta]}))
    if finish is not None:
        parts.append(openai_chunk({}, finish))
    if done:
        parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def shell_call(command: str) -> tuple[str, str]:
    return ("shell", json.dumps({"command": command}))


def turn_of(body: bytes, **options: Any) -> Turn:
    return replay(body, **options).turn


def run(dispatcher: Dispatcher, *bodies: bytes | Turn) -> list[BatchResult]:
    """Dispatch turns one after another in one event loop (state carries across turns)."""

    async def main() -> list[BatchResult]:
        results = []
        for body in bodies:
            turn = body if isinstance(body, Turn) else turn_of(body)
            results.append(await dispatcher.dispatch_turn(turn))
        return results

    return asyncio.run(main())


def statuses(batch: BatchResult) -> list[OutcomeStatus]:
    return [o.status for o in batch]


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every command line that reached the process-spawning function."""
    seen: list[str] = []
    real = builtins_module.spawn

    async def spy(command: str, cwd: Path, env: Any = None) -> asyncio.subprocess.Process:
        seen.append(command)
        return await real("true", cwd, env)

    monkeypatch.setattr(builtins_module, "spawn", spy)
    return seen


@pytest.fixture
def registry(tmp_path: Path) -> ToolRegistry:
    return ToolRegistry(builtin_tools(tmp_path))


class Recorder(Gate):
    """A gate that lets everything through and remembers what it saw."""

    def __init__(self, inner: Dispatch) -> None:
        super().__init__(inner)
        self.seen: list[str] = []

    async def decide(self, call: Invocation) -> Decision:
        self.seen.append(call.id)
        return ALLOW


# -- the notice, verbatim --------------------------------------------------------------------


def test_the_truncation_notice_verbatim(registry: ToolRegistry, spawned: list[str]) -> None:
    (batch,) = run(Dispatcher(registry), openai_tool_stream([FRAGMENT], "length"))
    (outcome,) = batch
    assert (outcome.call_id, outcome.name, outcome.status) == ("call_1", "shell", REJECTED)
    assert outcome.content == (
        "Tool call 'shell' (id call_1) was NOT executed: the response stopped at the output "
        "limit (stop_reason: max_tokens) before its arguments were complete. "
        "Resend this tool call in full, with complete arguments. "
        "If the arguments are long, shorten them or split the work into several smaller "
        "calls so that each call fits within the output limit."
    )
    assert outcome.verdict.reason is RejectReason.TRUNCATED and outcome.is_error
    assert batch.resend_requested and batch.rejected == (outcome,)
    assert spawned == []


def test_the_interrupted_and_malformed_notices_verbatim(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    interrupted, malformed = run(
        Dispatcher(registry),
        openai_tool_stream([COMPLETE], None, done=False),
        openai_tool_stream(['{"command": rm -rf /tmp/leg}'], "tool_calls"),
    )
    assert interrupted.outcomes[0].content == (
        "Tool call 'shell' (id call_1) was NOT executed: the response stream was interrupted "
        "before the provider confirmed the turn had finished, so the call may be incomplete. "
        "Resend this tool call in full if it is still needed."
    )
    assert malformed.outcomes[0].content == (
        "Tool call 'shell' (id call_1) was NOT executed: its arguments are not a valid JSON "
        "object and could not be read. Resend this tool call with its arguments as one "
        "valid JSON object."
    )
    assert spawned == []


# -- half a sentence never reaches the shell -------------------------------------------------

OVERSIZED = b'data: {"choices": [{"index": 0, "delta": {"content": "' + b"x" * 5000 + b'"}}]}\n\n'

FAULTS = {
    "truncated-openai": (openai_tool_stream([FRAGMENT], "length"), RejectReason.TRUNCATED),
    "truncated-anthropic": (
        anthropic_tool_stream([FRAGMENT], "max_tokens", block_stop=False),
        RejectReason.TRUNCATED,
    ),
    "truncated-empty-arguments": (openai_tool_stream([], "length"), RejectReason.TRUNCATED),
    "interrupted-mid-arguments": (
        openai_tool_stream([FRAGMENT], None, done=False),
        RejectReason.INTERRUPTED,
    ),
    "interrupted-after-complete-arguments": (
        openai_tool_stream([COMPLETE], "tool_calls", done=False),
        RejectReason.INTERRUPTED,
    ),
    "interrupted-anthropic": (
        anthropic_tool_stream([COMPLETE], "tool_use", stop=False),
        RejectReason.INTERRUPTED,
    ),
    "provider-error-event": (
        openai_tool_stream([COMPLETE], None, done=False)
        + sse({"error": {"message": "overloaded", "type": "server_error"}}, "error"),
        RejectReason.INTERRUPTED,
    ),
    "malformed-stream": (
        openai_tool_stream([COMPLETE], None, done=False) + b"data: {not json\n\ndata: [DONE]\n\n",
        RejectReason.INTERRUPTED,
    ),
    "event-too-large": (
        openai_tool_stream([COMPLETE], None, done=False) + OVERSIZED + b"data: [DONE]\n\n",
        RejectReason.INTERRUPTED,
    ),
    "malformed-arguments": (
        openai_tool_stream(['{"command": rm -rf /tmp/leg}'], "tool_calls"),
        RejectReason.MALFORMED,
    ),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_no_faulty_argument_string_ever_reaches_the_shell(
    registry: ToolRegistry, spawned: list[str], fault: str
) -> None:
    body, reason = FAULTS[fault]
    turn = turn_of(body, max_event_size=2000, chunk_size=64)
    (batch,) = run(Dispatcher(registry), turn)
    assert [(o.status, o.verdict.reason) for o in batch] == [(REJECTED, reason)]
    assert spawned == []


def test_the_same_stream_complete_does_reach_the_shell(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    (batch,) = run(Dispatcher(registry), openai_tool_stream([COMPLETE], "tool_calls"))
    assert statuses(batch) == [EXECUTED]
    assert spawned == ["rm -rf /tmp/legacy-cleanup"]  # (the spy ran `true` instead)


def test_no_cut_of_a_stream_at_any_byte_reaches_the_shell(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    bodies = [
        openai_tool_stream([COMPLETE[i : i + 3] for i in range(0, len(COMPLETE), 3)], "tool_calls"),
        anthropic_tool_stream([COMPLETE[:20], COMPLETE[20:]], "tool_use"),
    ]
    # One dispatcher throughout: it also shows rejections never trip the guard or the breaker.
    dispatcher = Dispatcher(registry, breaker=CircuitBreaker(max_failures=1))

    async def main() -> None:
        for body in bodies:
            for cut in range(len(body)):
                batch = await dispatcher.dispatch_turn(turn_of(body[:cut]))
                assert all(o.status is REJECTED for o in batch), cut
            assert spawned == []
            await dispatcher.dispatch_turn(turn_of(body))
            assert spawned == ["rm -rf /tmp/legacy-cleanup"]
            spawned.clear()

    asyncio.run(main())


def test_no_prefix_of_the_arguments_at_the_output_limit_reaches_the_shell(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    dispatcher = Dispatcher(registry)

    async def main() -> None:
        for cut in range(len(COMPLETE)):
            bodies = [openai_tool_stream([COMPLETE[:cut]], "length")]
            if cut:  # cut 0 is the open issue pinned below
                cut_off = anthropic_tool_stream([COMPLETE[:cut]], "max_tokens", block_stop=False)
                bodies.append(cut_off)
            for body in bodies:
                batch = await dispatcher.dispatch_turn(turn_of(body))
                assert statuses(batch) == [REJECTED], cut

    asyncio.run(main())
    assert spawned == []


def test_an_anthropic_call_cut_before_its_first_input_fragment_is_not_executed(
    registry: ToolRegistry,
) -> None:
    body = anthropic_tool_stream([], "max_tokens", block_stop=False)
    body = body.replace(b'"name": "shell"', b'"name": "list_dir"')
    (batch,) = run(Dispatcher(registry), body)
    assert statuses(batch) == [REJECTED]  # not list_dir({}) from the start block's placeholder


def test_a_real_capture_cut_inside_the_tool_input_is_not_executed() -> None:
    written: list[dict[str, Any]] = []

    @tool
    def make_file(filename: str, lines_of_text: list[str]) -> str:
        written.append({"filename": filename})
        return "ok"

    turn = turn_of(capture("anthropic/max_tokens_inside_tool_input.sse"))
    (batch,) = run(Dispatcher(ToolRegistry([make_file])), turn)
    (outcome,) = batch
    assert outcome.status is REJECTED and outcome.verdict.reason is RejectReason.TRUNCATED
    assert outcome.content.startswith(
        "Tool call 'make_file' (id toolu_01EKqbqmZrGRXy18eN7m9kvY) was NOT executed: the "
        "response stopped at the output limit (stop_reason: max_tokens)"
    )
    assert written == []


# -- the placement choices -------------------------------------------------------------------


def test_the_truncation_gate_comes_before_every_other_gate(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    recorder = Recorder(ToolExecutor())
    dispatcher = Dispatcher(registry, chain=SchemaGate(recorder))
    body = calls_stream([shell_call("echo one"), ("shell", FRAGMENT)], "length")
    (batch,) = run(dispatcher, body)
    assert statuses(batch) == [EXECUTED, REJECTED]
    assert recorder.seen == ["call_0"]  # the rejected call reached no gate at all


def test_sibling_calls_with_complete_arguments_still_execute(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    body = calls_stream(
        [shell_call("echo one"), ("list_dir", "{}"), shell_call("echo two"), ("shell", FRAGMENT)],
        "length",
    )
    (batch,) = run(Dispatcher(registry), body)
    assert [(o.call_id, o.status) for o in batch] == [
        ("call_0", EXECUTED),
        ("call_1", EXECUTED),
        ("call_2", EXECUTED),
        ("call_3", REJECTED),
    ]
    assert spawned == ["echo one", "echo two"]


def test_an_abruptly_terminated_turn_executes_nothing(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    body = calls_stream([shell_call("echo one"), ("list_dir", "{}")], "tool_calls", done=False)
    (batch,) = run(Dispatcher(registry), body)
    assert [(o.status, o.verdict.reason) for o in batch] == [
        (REJECTED, RejectReason.INTERRUPTED),
        (REJECTED, RejectReason.INTERRUPTED),
    ]
    assert spawned == []


def test_a_rejected_call_is_not_counted_by_the_loop_guard(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    guard = LoopGuard(ToolExecutor(), max_repeats=3)
    dispatcher = Dispatcher(registry, chain=guard)
    complete = calls_stream([shell_call("ls")])
    interrupted = calls_stream([shell_call("ls")], done=False)  # same call, rejected
    truncated = calls_stream([shell_call("ls"), ("shell", '{"command": "l')], "length")
    batches = run(dispatcher, complete, interrupted, interrupted, interrupted, complete)
    assert [statuses(b) for b in batches] == [[EXECUTED], *[[REJECTED]] * 3, [EXECUTED]]
    assert guard.streak == 2  # the three rejections neither counted nor broke the streak
    # The third real attempt is the one intercepted -- a truncated sibling changes nothing.
    (batch,) = run(dispatcher, truncated)
    assert statuses(batch) == [INTERCEPTED, REJECTED]
    assert spawned == ["ls", "ls"]


def test_a_rejected_call_is_not_counted_by_the_circuit_breaker(tmp_path: Path) -> None:
    @tool
    def flaky(n: int) -> str:
        raise RuntimeError(f"failure {n}")

    breaker = CircuitBreaker(max_failures=2)
    dispatcher = Dispatcher(ToolRegistry([flaky]), breaker=breaker)
    failing = calls_stream([("flaky", '{"n": 1}')])
    truncated = calls_stream([("flaky", '{"n": ')], "length")
    interrupted = calls_stream([("flaky", '{"n": 2}')], done=False)
    batches = run(dispatcher, failing, truncated, interrupted, truncated)
    assert [statuses(b) for b in batches] == [[ERROR], [REJECTED], [REJECTED], [REJECTED]]
    assert breaker.failures == 1  # not counted, and not reset either
    with pytest.raises(CircuitOpen) as caught:
        run(dispatcher, failing)
    assert caught.value.failures == 2


def test_the_lenient_path_without_max_tokens_repairs_and_executes() -> None:
    seen: list[str] = []

    @tool
    def shell(command: str) -> str:
        seen.append(command)
        return "ok"

    (batch,) = run(Dispatcher(ToolRegistry([shell])), openai_tool_stream([FRAGMENT], "tool_calls"))
    (outcome,) = batch
    assert outcome.status is EXECUTED and outcome.verdict.repaired
    assert seen == ["rm -rf /tmp/leg"]  # what the divide is about, for a tool that allows it


def test_the_built_in_shell_and_write_file_run_only_exact_arguments(
    registry: ToolRegistry, spawned: list[str], tmp_path: Path
) -> None:
    assert [(t.name, t.repair) for t in registry] == [
        ("shell", False),
        ("read_file", True),
        ("write_file", False),
        ("list_dir", True),
    ]
    fenced = '```json\n{"path": "notes.txt", "content": "draft"}\n```'
    shell, write = run(
        Dispatcher(registry),
        openai_tool_stream([FRAGMENT], "tool_calls"),  # the lenient path would close it
        calls_stream([("write_file", fenced), ("list_dir", '{"path": ".",}')]),
    )
    (cut,) = shell
    assert cut.status is REJECTED and cut.verdict.repaired and cut.is_error
    assert cut.content == (
        "Tool call 'shell' (id call_1) was NOT executed: its arguments are not valid JSON as "
        "sent (a string, array or object is left open), and this tool runs only on arguments "
        "exactly as written. Resend this tool call with its arguments as one complete, valid "
        "JSON object."
    )
    assert spawned == [] and shell.resend_requested
    assert statuses(write) == [REJECTED, EXECUTED]  # list_dir takes its repaired arguments
    assert "(the object is wrapped in other text)" in write.outcomes[0].content
    assert not (tmp_path / "notes.txt").exists()
    (ok,) = run(Dispatcher(registry), calls_stream([shell_call("echo hi")]))
    assert statuses(ok) == [EXECUTED] and spawned == ["echo hi"]


def test_a_provider_that_misreports_length_still_gets_no_repaired_call_run(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    seen: list[str] = []

    @tool(name="shell")
    def lenient_shell(command: str) -> str:
        seen.append(command)
        return "ok"

    evidence = {"misreports_length": Evidence(observed="o", seen=1, date="d", source="s")}
    profile = Profile(name="acme", misreports_length=True, evidence=evidence)
    # Under a length stop, a call that fails the strict parse is in question: the profile's
    # waiver does not reach it, and no tool, lenient or not, gets it repaired.
    reader = StreamReader("openai", profile=profile)
    reader.feed(openai_tool_stream(['{"command": "echo hi",}'], "length"))
    reader.close()
    turn = reader.turn()
    assert turn.stop_reason == "max_tokens" and turn.truncated
    (batch,) = run(Dispatcher(ToolRegistry([lenient_shell])), turn)
    assert statuses(batch) == [REJECTED] and seen == []
    # A call that parses strictly runs, and the waived stop marks nothing truncated.
    reader = StreamReader("openai", profile=profile)
    reader.feed(openai_tool_stream(['{"command": "echo hi"}'], "length"))
    reader.close()
    turn = reader.turn()
    assert not turn.truncated
    (batch,) = run(Dispatcher(ToolRegistry([lenient_shell])), turn)
    assert statuses(batch) == [EXECUTED] and seen == ["echo hi"]
    assert spawned == []


def test_a_real_capture_with_two_complete_calls_runs_both_in_order() -> None:
    @tool
    def GetWeatherArgs(city: str, country: str, units: str) -> str:
        return f"{city}: 12 {units}"

    @tool
    def get_stock_price(ticker: str, exchange: str) -> str:
        return f"{ticker}: 230"

    turn = turn_of(capture("openai/parallel_tool_calls_usage_chunk.sse"))
    (batch,) = run(Dispatcher(ToolRegistry([GetWeatherArgs, get_stock_price])), turn)
    assert [(o.name, o.status, o.content) for o in batch] == [
        ("GetWeatherArgs", EXECUTED, "Edinburgh: 12 c"),
        ("get_stock_price", EXECUTED, "AAPL: 230"),
    ]


# -- the loop guard --------------------------------------------------------------------------


def test_the_loop_guard_intercepts_the_nth_identical_call(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    dispatcher = Dispatcher(registry, chain=default_chain(max_repeats=3))
    same = [shell_call("ls"), ("shell", '{"command":"ls"}'), ("shell", '{ "command" : "ls" }')]
    (batch,) = run(dispatcher, calls_stream([*same, shell_call("ls"), shell_call("pwd")]))
    assert statuses(batch) == [EXECUTED, EXECUTED, INTERCEPTED, INTERCEPTED, EXECUTED]
    assert batch.outcomes[2].content == (
        "Tool call 'shell' (id call_2) was NOT executed: it is the same call with the same "
        "arguments 3 times in a row, and repeating it will not give a different result. "
        "Change the arguments or try a different approach."
    )
    assert spawned == ["ls", "ls", "pwd"]


def test_the_loop_guard_canonicalizes_and_spans_turns(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    dispatcher = Dispatcher(registry, chain=default_chain(max_repeats=2))
    a = calls_stream([("write_file", '{"path": "a", "content": "x"}')])
    b = calls_stream([("write_file", '{"content": "x", "path": "a"}')])
    batches = run(dispatcher, a, b, calls_stream([shell_call("ls")]), a)
    assert [statuses(x) for x in batches] == [[EXECUTED], [INTERCEPTED], [EXECUTED], [EXECUTED]]


def test_the_loop_guard_needs_a_repeat_count_of_two_or_more() -> None:
    with pytest.raises(ConfigurationError):
        LoopGuard(ToolExecutor(), max_repeats=1)


# -- the circuit breaker ---------------------------------------------------------------------


def test_the_breaker_opens_after_k_consecutive_errors_and_a_success_resets_it() -> None:
    @tool
    def work(ok: bool, attempt: int) -> str:
        if not ok:
            raise RuntimeError("disk full")
        return "done"

    attempts = iter(range(100))  # every call differs: the loop guard stays out of this

    def fail() -> tuple[str, str]:
        return ("work", json.dumps({"ok": False, "attempt": next(attempts)}))

    def succeed() -> tuple[str, str]:
        return ("work", json.dumps({"ok": True, "attempt": next(attempts)}))

    breaker = CircuitBreaker(max_failures=3)
    dispatcher = Dispatcher(ToolRegistry([work]), breaker=breaker)
    batches = run(
        dispatcher, calls_stream([fail(), fail(), succeed(), fail()]), calls_stream([fail()])
    )
    assert [statuses(b) for b in batches] == [[ERROR, ERROR, EXECUTED, ERROR], [ERROR]]
    assert batches[0].outcomes[0].content == (
        "Tool call 'work' (id call_0) failed: RuntimeError: disk full"
    )
    assert breaker.failures == 2
    with pytest.raises(CircuitOpen, match="3 consecutive tool execution errors") as caught:
        run(dispatcher, calls_stream([fail(), succeed()]))
    assert caught.value.failures == 3 and breaker.open


def test_interventions_never_count_for_the_breaker(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    breaker = CircuitBreaker(max_failures=2)
    dispatcher = Dispatcher(
        registry, chain=default_chain(approve=lambda call: False, max_repeats=2), breaker=breaker
    )
    error = ("read_file", '{"path": "missing.txt"}')
    body = calls_stream([error, error, shell_call("ls"), ("shell", FRAGMENT)], "length")
    (batch,) = run(dispatcher, body)
    assert statuses(batch) == [ERROR, INTERCEPTED, DENIED, REJECTED]
    assert breaker.failures == 1  # the interventions neither counted nor reset
    (batch,) = run(dispatcher, calls_stream([("list_dir", "{}")]))
    assert statuses(batch) == [EXECUTED] and breaker.failures == 0
    with pytest.raises(CircuitOpen):
        run(dispatcher, calls_stream([error, shell_call("ls"), ("read_file", '{"path": "x"}')]))
    assert spawned == []


def test_schema_errors_and_unknown_tools_count_for_the_breaker(registry: ToolRegistry) -> None:
    breaker = CircuitBreaker(max_failures=2)
    dispatcher = Dispatcher(registry, breaker=breaker)
    (batch,) = run(dispatcher, calls_stream([("shell", '{"cmd": "ls"}')]))
    assert statuses(batch) == [ERROR] and breaker.failures == 1
    with pytest.raises(CircuitOpen):
        run(dispatcher, calls_stream([("rm_everything", "{}")]))


def test_the_breaker_needs_a_limit_of_one_or_more() -> None:
    with pytest.raises(ConfigurationError):
        CircuitBreaker(max_failures=0)


# -- schema, unknown tools, approval ---------------------------------------------------------


def test_a_schema_mismatch_is_not_executed_and_says_what_is_wrong(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    body = calls_stream([("shell", '{"cmd": "ls", "timeout": "soon"}')])
    (batch,) = run(Dispatcher(registry), body)
    (outcome,) = batch
    assert outcome.status is ERROR
    assert outcome.content == (
        "Tool call 'shell' (id call_0) was NOT executed: its arguments do not match the "
        "tool's schema.\n"
        "- at $: 'command' is a required property\n"
        "- at $: Additional properties are not allowed ('cmd' was unexpected)\n"
        "- at $.timeout: 'soon' is not of type 'number', 'null'\n"
        "Resend the call with arguments that match the schema."
    )
    assert spawned == []


def test_an_unknown_tool_is_an_error_naming_the_tools_there_are(registry: ToolRegistry) -> None:
    (batch,) = run(Dispatcher(registry), calls_stream([("rm_everything", "{}")]))
    assert batch.outcomes[0].status is ERROR
    assert batch.outcomes[0].content == (
        "Tool call 'rm_everything' (id call_0) was NOT executed: there is no tool named "
        "'rm_everything'. Available tools: shell, read_file, write_file, list_dir."
    )


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_approval_hook_confirms_or_denies_each_call_that_changes_things(
    registry: ToolRegistry, spawned: list[str], asynchronous: bool
) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def decide(call: Invocation) -> bool:
        asked.append((call.name, call.arguments))
        return call.arguments.get("command") == "ls"

    async def decide_later(call: Invocation) -> bool:
        await asyncio.sleep(0)
        return decide(call)

    chain = default_chain(approve=decide_later if asynchronous else decide)
    body = calls_stream([shell_call("ls"), shell_call("rm -rf /"), ("list_dir", "{}")])
    (batch,) = run(Dispatcher(registry, chain=chain), body)
    assert statuses(batch) == [EXECUTED, DENIED, EXECUTED]
    assert asked == [("shell", {"command": "ls"}), ("shell", {"command": "rm -rf /"})]
    assert batch.outcomes[1].content == (
        "Tool call 'shell' (id call_1) was NOT executed: the user declined to run it. "
        "Do not resend it unchanged; ask the user or try something else."
    )
    assert spawned == ["ls"]


def test_approval_fails_closed_on_anything_but_true(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    chain = default_chain(approve=lambda call: "yes")  # type: ignore[arg-type,return-value]
    (batch,) = run(Dispatcher(registry, chain=chain), calls_stream([shell_call("ls")]))
    assert statuses(batch) == [DENIED] and spawned == []


def test_a_gate_decides_with_a_typed_value_and_composes(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    class NoNetwork(Gate):
        async def decide(self, call: Invocation) -> Decision:
            if "curl" in call.arguments.get("command", ""):
                return Refuse(INTERCEPTED, "no network from here")
            return ALLOW

    dispatcher = Dispatcher(registry, chain=SchemaGate(NoNetwork(ToolExecutor())))
    (batch,) = run(dispatcher, calls_stream([shell_call("curl x"), shell_call("ls")]))
    assert [(o.status, o.content) for o in batch] == [
        (INTERCEPTED, "no network from here"),
        (EXECUTED, "exit code: 0\n(no output)"),
    ]
    with pytest.raises(ConfigurationError):
        Refuse(EXECUTED, "a refusal cannot be an execution")


def test_a_gate_that_answers_with_anything_but_a_decision_fails_closed(
    registry: ToolRegistry, spawned: list[str]
) -> None:
    class Sloppy(Gate):
        async def decide(self, call: Invocation) -> Decision:
            return True  # type: ignore[return-value]

    dispatcher = Dispatcher(registry, chain=Sloppy(ToolExecutor()))
    with pytest.raises(ConfigurationError, match="decided True, not Allow or Refuse"):
        run(dispatcher, calls_stream([shell_call("ls")]))
    assert spawned == []
