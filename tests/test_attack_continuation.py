"""Continuation under attack: a hostile model (what it streams back) and a hostile server
(what it answers), against real servers on 127.0.0.1 and the sans-IO seam and plan."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from railings.agent.loop import Agent, AgentEvent, RunStatus, ToolsDispatched
from railings.continuation import Continuation, Strategy, continue_turn
from railings.dispatch import ToolRegistry, builtin_tools
from railings.errors import BadRequest
from railings.events import StreamEvent, TextDelta
from railings.testing import FaultProxy, Script, ScriptedServer
from railings.transport import AsyncProviderClient, ClientConfig, ProviderClient, no_waits
from railings.turn.model import Outcome, Termination, Turn, Usage
from railings.turn.parts import TextPart
from tests.continuing import HISTORY, KEY, STORY, config


@pytest.fixture(autouse=True)
def _zero_waits() -> Iterator[None]:
    with no_waits():
        yield


def _turn(value: str) -> Turn:
    return Turn(
        provider="anthropic",
        termination=Termination.ABRUPT,
        outcome=Outcome.PARTIAL,
        parts=(TextPart(text=value),),
        usage=Usage(input_tokens=None, output_tokens=None),
        stop_reason=None,
        stop_reason_wire=None,
        stop_reason_source=None,
        truncated=False,
        error=None,
    )


def _shown(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def _stream(partial: str, pieces: list[str], strategy: Strategy) -> tuple[str, int, str]:
    """What a caller is shown after ``partial``, the most text ever held back, and the
    joined turn's text."""
    plan = Continuation(HISTORY, _turn(partial), provider="anthropic", strategy=strategy)
    fed = shown = held = 0
    out: list[StreamEvent] = []
    for piece in pieces:
        fed += len(piece)
        events = plan.feed(TextDelta(text=piece))
        shown += len(_shown(events))
        out += events
        held = max(held, fed - shown - (plan._seam.cut or 0))
    out += plan.finish(_turn("".join(pieces)))
    assert plan.result is not None
    return _shown(out), held, plan.result.turn.text


# -- a hostile model: the seam ------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["user", "prefill"])
def test_a_continuation_that_repeats_the_partial_many_times_is_held_boundedly(
    strategy: Strategy,
) -> None:
    partial = "ab ab ab " * 200
    pieces = [partial[i : i + 7] for i in range(0, len(partial), 7)] * 50
    shown, held, joined = _stream(partial, pieces, strategy)
    # Held back: never more than the partial text and the last delta.
    assert held <= len(partial) + 7
    # Edges only: at most one copy removed, every other one kept.
    assert joined.count("ab ab ab ") >= 200 * 50
    assert joined == partial + shown


def test_a_huge_continuation_with_no_repeat_streams_at_once() -> None:
    partial = "x" * 100_000 + " "
    shown, held, _ = _stream(partial, ["y" * 1000] * 200, "user")
    assert held <= 1000 and len(shown) == 200_000


@pytest.mark.parametrize(
    ("partial", "rest"),
    [
        # Repetitive code: the model, carrying the prefill on, writes the line again.
        ("print('a')\nprint('a')\n", "\nprint('a')\n"),
        # A list whose next item is the last one again.
        ("- yes\n- no\n- no", "\n- no\n"),
        # Laughter, a refrain: the same word once more.
        ("Ha ha", " ha ha!"),
        ("Buffalo buffalo", " buffalo buffalo."),
    ],
)
def test_a_prefill_continuation_keeps_new_text_that_equals_the_partials_end(
    partial: str, rest: str
) -> None:
    """A prefill is carried on by the model: what it writes is the rest, all of it. The
    only text it may repeat is the whitespace the prefill left out."""
    shown, _, joined = _stream(partial, [rest], "prefill")
    left_out = len(partial) - len(partial.rstrip())
    expected = partial + (
        rest[left_out:] if rest[:left_out] == partial[len(partial) - left_out :] else rest
    )
    assert joined == expected
    assert shown == joined[len(partial) :]


@pytest.mark.parametrize(
    ("partial", "rest", "joined"),
    [
        # CRLF: the prefill left "\r\n" out and the model sent it back.
        ("one\r\n", "\r\ntwo", "one\r\ntwo"),
        # Cut between CR and LF: the LF is new.
        ("one\r", "\ntwo", "one\r\ntwo"),
        # A combining mark after a cut letter belongs to it, kept.
        ("cafe", "\u0301 au lait", "cafe\u0301 au lait"),
        # A ZWJ emoji sequence carried on: the second person is new.
        ("family: \U0001f468\u200d", "\U0001f469\u200d\U0001f467", None),
        ("flag \U0001f1fa", "\U0001f1f8!", "flag \U0001f1fa\U0001f1f8!"),
    ],
)
def test_unicode_at_the_seam_under_prefill(partial: str, rest: str, joined: str | None) -> None:
    _, _, got = _stream(partial, list(rest), "prefill")
    assert got == (joined if joined is not None else partial + rest)


def test_an_empty_continuation_keeps_the_partial_text() -> None:
    shown, held, joined = _stream("Once upon a time ", [], "user")
    assert shown == "" and held == 0 and joined == "Once upon a time "


# -- a hostile server -----------------------------------------------------------------------


async def _cut(server: ScriptedServer, provider: str, events: int) -> Turn:
    with FaultProxy(server.url, f"truncate:events={events},times=1") as proxy:
        async with AsyncProviderClient(config(provider, proxy.url)) as client:
            turn = await client.stream_turn(HISTORY).result()
    assert turn.outcome is Outcome.PARTIAL and turn.text
    return turn


def test_another_400_is_asked_once_more_by_user_message_and_then_raised() -> None:
    async def go() -> tuple[int, BaseException | None]:
        script = Script.from_dict({"chunk_size": 5, "turns": [{"text": STORY}]})
        with ScriptedServer(script) as server:
            partial = await _cut(server, "anthropic", 5)
            before = len(server.requests)
            # Two 400s that are not the prefill refusal, then the real server.
            with FaultProxy(server.url, "status:code=400,times=2") as proxy:
                async with AsyncProviderClient(config("anthropic", proxy.url)) as client:
                    try:
                        await continue_turn(client, HISTORY, partial).result()
                    except BadRequest as exc:
                        return len(server.requests) - before, exc
        return -1, None

    reached, error = asyncio.run(go())
    # The prefill's 400, then the user message's 400, raised: no third request.
    assert isinstance(error, BadRequest) and error.status == 400
    assert reached == 0


@pytest.mark.parametrize("code", [429, 503])
def test_a_rate_limit_or_server_error_is_retried_and_the_partial_kept(code: int) -> None:
    async def go() -> tuple[Turn, list[StreamEvent], object]:
        script = Script.from_dict({"chunk_size": 5, "turns": [{"text": STORY}]})
        with ScriptedServer(script) as server:
            partial = await _cut(server, "openai", 4)
            with FaultProxy(server.url, f"status:code={code},times=1") as proxy:
                async with AsyncProviderClient(config("openai", proxy.url)) as client:
                    stream = continue_turn(client, HISTORY, partial)
                    events = [e async for e in stream]
                    return partial, events, (stream.continued, stream.attempts)

    partial, events, (continued, attempts) = asyncio.run(go())
    assert attempts == 2 and continued.attempts[0] is partial  # type: ignore[attr-defined]
    assert continued.turn.text == STORY and continued.turn.complete  # type: ignore[attr-defined]
    assert partial.text + _shown(events) == STORY


# -- a tool call in the continuation, through the agent ----------------------------------------


def test_a_continuation_whose_call_the_output_limit_cut_never_runs_it(tmp_path: Path) -> None:
    target = tmp_path / "pwned.txt"
    call = {"name": "write_file", "arguments": {"path": "pwned.txt", "content": "x" * 600}}
    script = Script.from_dict({"chunk_size": 5, "turns": [{"text": STORY, "tool_calls": [call]}]})
    events: list[AgentEvent] = []
    with ScriptedServer(script) as server, FaultProxy(server.url, "truncate:events=4,times=1") as p:
        config = ClientConfig(
            provider="openai",
            model="scripted",
            base_url=p.url + "/v1",
            api_key=KEY,
            http2=False,
            max_tokens=60,
        )
        with ProviderClient(config) as client:
            agent = Agent(
                client, ToolRegistry(builtin_tools(tmp_path)), approve=None, on_event=events.append
            )
            first = agent.run("tell me a story")
            assert first.status is RunStatus.INTERRUPTED
            result = agent.continue_reply()
            after = len(server.requests)
    joined = result.turns[0]
    assert joined.truncated and joined.tool_calls
    assert not target.exists()
    executed = [
        o
        for e in events
        if isinstance(e, ToolsDispatched)
        for o in e.batch.outcomes
        if o.status.value == "executed"
    ]
    assert executed == []
    assert after >= 2 and result.continued is not None
