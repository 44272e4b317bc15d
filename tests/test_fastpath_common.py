"""Each decoder's ``feed_common`` (the reader's fast path, turn/fastpath.py) equals its table.

``feed_common(event, obj)`` must return either None, having changed nothing, or the one
event ``feed_sse_object(event, obj)`` returns, leaving the decoder in the same state. Two
decoders read the same events, one through ``feed_common`` first and one through the
table alone; after every event their output, the error raised and every slot of their
state must be equal. The events are drawn near the commonest shapes (a content or
argument fragment, a text or argument delta) with every field varied: odd types, missing
and extra fields, other key orders, several choices, unknown calls, numbers out of step.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railings import RailingsError
from railings.providers.anthropic.decoder import AnthropicDecoder
from railings.providers.openai_chat.decoder import OpenAIChatDecoder
from railings.providers.openai_responses.decoder import OpenAIResponsesDecoder

_ODD = st.sampled_from([None, "", "x", "é\u2028", 0, 1, True, 1.5, [], {}, ["x"], {"a": 1}])
_TEXT = st.sampled_from(["x", "", "é ✓ 😀", "\n\n", None, 0, True, ["x"], {"t": "x"}])


_MOSTLY = st.sampled_from([True] * 15 + [False])


@st.composite
def _shaped(draw: st.DrawFn, fields: dict[str, st.SearchStrategy[Any]]) -> dict[str, Any]:
    """A JSON object with the given fields, each kept or dropped, sometimes an odd value or
    an extra field, in any key order."""
    keys = [k for k in fields if draw(_MOSTLY)]  # most fields kept
    if not draw(_MOSTLY):
        keys.append(draw(st.sampled_from(["extra", "x_groq", "logprobs", "obfuscation"])))
    keys = draw(st.permutations(keys))
    return {k: draw(fields[k]) if k in fields and draw(_MOSTLY) else draw(_ODD) for k in keys}


_index = st.sampled_from([0, 0, 0, 1, True, None, "0"])
_call = _shaped(
    {
        "index": _index,
        "id": st.sampled_from(["", "call_a", "call_b", None]),
        "type": st.just("function"),
        "function": _shaped(
            {
                "name": st.sampled_from(["f", ""]),
                "arguments": st.sampled_from(['{"a"', "", ": 1}", None, {"a": 1}]),
            }
        ),
    }
)
_delta = st.one_of(
    _shaped({"content": _TEXT}),
    _shaped({"tool_calls": st.lists(_call, min_size=1, max_size=2)}),
    _shaped({"role": st.just("assistant"), "content": _TEXT, "tool_calls": st.lists(_call)}),
)
_choice = _shaped(
    {
        "index": _index,
        "delta": _delta,
        "logprobs": st.none(),
        "finish_reason": st.sampled_from([None] * 8 + ["stop", "length", ""]),
    }
)
_chunk = _shaped(
    {
        "id": st.just("chatcmpl-1"),
        "object": st.just("chat.completion.chunk"),
        "model": st.just("m"),
        "choices": st.builds(
            lambda first, more, many: [first, *more] if many else [first],
            _choice,
            st.lists(_choice, max_size=1),
            st.sampled_from([False] * 4 + [True]),  # now and then two choices
        ),
        "usage": st.sampled_from([None] * 8 + [{"prompt_tokens": 1}]),
        "error": st.sampled_from([None] * 8 + [{}, {"message": "x"}]),
    }
)
_openai_event = st.sampled_from(["message"] * 12 + ["error", "weird"])

_anthropic = st.one_of(
    _shaped(
        {
            "type": st.just("content_block_delta"),
            "index": st.sampled_from([0, 0, 1, True, None, 2.0]),
            "delta": _shaped(
                {
                    "type": st.sampled_from(["text_delta", "input_json_delta", "other"]),
                    "text": _TEXT,
                    "partial_json": _TEXT,
                }
            ),
        }
    ),
    _shaped(
        {
            "type": st.just("content_block_start"),
            "index": st.sampled_from([0, 1]),
            "content_block": st.sampled_from(
                [
                    {"type": "text", "text": ""},
                    {"type": "tool_use", "id": "t", "name": "f", "input": {}},
                ]
            ),
        }
    ),
)
_anthropic_event = st.sampled_from(["content_block_delta", "message", "ping"])

_responses = _shaped(
    {
        "type": st.sampled_from(["response.output_text.delta"] * 4 + ["response.in_progress"]),
        "sequence_number": st.sampled_from([0, 1, 2, 3, 4, True, None, "3", 2.0]),
        "item_id": st.just("msg_1"),
        "output_index": st.just(0),
        "delta": _TEXT,
    }
)
_responses_event = st.sampled_from(["response.output_text.delta", "message"])


def _stream(
    events: st.SearchStrategy[str], objects: st.SearchStrategy[dict[str, Any]]
) -> st.SearchStrategy[list[tuple[str, dict[str, Any]]]]:
    """Events as streams have them: a few shapes, each repeated (so the decoder checked the
    shape before and the common path answers), in any order."""
    return st.lists(st.tuples(events, objects), min_size=1, max_size=3).flatmap(
        lambda shapes: st.lists(st.sampled_from(shapes), min_size=2, max_size=16)
    )


def _state(decoder: object) -> dict[str, object]:
    return {slot: repr(getattr(decoder, slot, None)) for slot in type(decoder).__slots__}


def _step(decoder: Any, event: str, obj: dict[str, Any], common: bool) -> object:
    try:
        if common:
            found = decoder.feed_common(event, obj)
            if found is not None:
                return [found]
        return decoder.feed_sse_object(event, obj)
    except RailingsError as exc:
        return (type(exc).__name__, str(exc))


def _same(make: Any, events: list[tuple[str, dict[str, Any]]]) -> None:
    fast, table = make(), make()
    for event, obj in events:
        assert _step(fast, event, obj, True) == _step(table, event, obj, False)
        assert _state(fast) == _state(table)


_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(_stream(_openai_event, _chunk), st.sampled_from([0, 1]))
def test_openai_common_chunks_equal_the_table(
    events: list[tuple[str, dict[str, Any]]], choice: int
) -> None:
    _same(lambda: OpenAIChatDecoder(choice=choice), events)


@_SETTINGS
@given(_stream(_anthropic_event, _anthropic))
def test_anthropic_common_deltas_equal_the_table(
    events: list[tuple[str, dict[str, Any]]],
) -> None:
    _same(AnthropicDecoder, events)


@_SETTINGS
@given(_stream(_responses_event, _responses))
def test_responses_common_deltas_equal_the_table(
    events: list[tuple[str, dict[str, Any]]],
) -> None:
    _same(OpenAIResponsesDecoder, events)


def test_the_common_shapes_are_taken() -> None:
    """The properties above prove nothing if feed_common never answers: it does, for the
    shapes the benchmark's workloads (and real streams) repeat."""
    chat = OpenAIChatDecoder()
    first = {"id": "c", "choices": [{"index": 0, "delta": {"content": "a"}}]}
    assert chat.feed_common("message", first) is None  # the first chunk: MessageStart
    chat.feed_sse_object("message", first)
    assert chat.feed_common("message", first) is not None
    anthropic = AnthropicDecoder()
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "a"},
    }
    assert anthropic.feed_common("content_block_delta", delta) is not None
    responses = OpenAIResponsesDecoder()
    text = {"type": "response.output_text.delta", "sequence_number": 0, "delta": "a"}
    assert responses.feed_common("response.output_text.delta", text) is not None
    assert responses.feed_common("response.output_text.delta", text) is None  # 0 after 0


# -- every one-field change of the commonest shapes, in a stream where they repeat ---------

_CHAT_START = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
_CHAT_TEXT = {
    "id": "c",
    "model": "m",
    "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}],
    "usage": None,
}
_CHAT_CALL = {
    "id": "c",
    "choices": [
        {
            "index": 0,
            "delta": {
                "tool_calls": [
                    {"index": 0, "id": "call_a", "function": {"name": "f", "arguments": ""}}
                ]
            },
        }
    ],
}
_CHAT_FRAGMENT = {
    "id": "c",
    "choices": [
        {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a'}}]}}
    ],
}
_ANTHROPIC_TOOL = {
    "type": "content_block_start",
    "index": 1,
    "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
}
_ANTHROPIC_TEXT = {
    "type": "content_block_delta",
    "index": 0,
    "delta": {"type": "text_delta", "text": "a"},
}
_ANTHROPIC_FRAGMENT = {
    "type": "content_block_delta",
    "index": 1,
    "delta": {"type": "input_json_delta", "partial_json": '{"a'},
}
_RESPONSES_TEXT = {"type": "response.output_text.delta", "sequence_number": 1, "delta": "a"}


def _changes(obj: Any) -> list[Any]:
    """``obj`` with one thing changed: a field dropped, given each odd value, or joined by an
    extra field; the keys in reverse order; and the same inside every nested object."""
    if isinstance(obj, list):
        return [[]] + [[*obj[:i], c, *obj[i + 1 :]] for i, x in enumerate(obj) for c in _changes(x)]
    if not isinstance(obj, dict):
        return []
    out: list[Any] = [dict(reversed(obj.items())), {**obj, "extra": 1}]
    for key, value in obj.items():
        out.append({k: v for k, v in obj.items() if k != key})
        out += [{**obj, key: odd} for odd in (None, "", "x", 0, 1, True, 2.0, [], {}, ["x"])]
        out += [{**obj, key: changed} for changed in _changes(value)]
    return out


def _one_field_streams(
    make: Any, event: str, prefix: list[Any], base: Any, then: Any = None
) -> int:
    """Every change of ``base`` fed between repeats of it; returns how often the common
    path answered ``then`` (else ``base``) after ``base``, so a test can tell it ran."""
    answered = 0
    for changed in _changes(base):
        for stream in ([*prefix, base, changed, base], [*prefix, changed, changed, base]):
            _same(make, [(event, obj) for obj in stream])
        probe = make()
        for obj in [*prefix, changed]:
            probe.feed_sse_object(event, obj)
        answered += probe.feed_common(event, changed if then is None else then) is not None
    return answered


def test_every_one_field_change_of_the_common_chunks_equals_the_table() -> None:
    assert _one_field_streams(OpenAIChatDecoder, "message", [_CHAT_START], _CHAT_TEXT)
    assert _one_field_streams(OpenAIChatDecoder, "message", [_CHAT_CALL], _CHAT_FRAGMENT)
    assert _one_field_streams(AnthropicDecoder, "content_block_delta", [], _ANTHROPIC_TEXT)
    assert _one_field_streams(
        AnthropicDecoder, "content_block_delta", [_ANTHROPIC_TOOL], _ANTHROPIC_FRAGMENT
    )
    assert _one_field_streams(
        OpenAIResponsesDecoder,
        "response.output_text.delta",
        [],
        _RESPONSES_TEXT,
        {**_RESPONSES_TEXT, "sequence_number": 2},
    )


def _without(obj: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """``obj`` with the field at ``path`` (keys through nested objects) left out."""
    head, *rest = path
    if not rest:
        return {k: v for k, v in obj.items() if k != head}
    return {**obj, head: _without(obj[head], tuple(rest))}


def test_a_common_delta_missing_a_field_it_needs_is_left_to_the_table() -> None:
    """The Anthropic and Responses ``feed_common`` read the fields their shape needs by
    subscript: each one missing is a KeyError there, answered None (never raised) having
    changed nothing, and the table decides the event (a missing ``type`` is the SSE
    event's name there, so it may still be a text delta)."""
    cases: list[tuple[Any, list[Any], str, dict[str, Any], tuple[str, ...]]] = [
        (AnthropicDecoder, [], "content_block_delta", _ANTHROPIC_TEXT, ("type",)),
        (AnthropicDecoder, [], "content_block_delta", _ANTHROPIC_TEXT, ("delta",)),
        (AnthropicDecoder, [], "content_block_delta", _ANTHROPIC_TEXT, ("delta", "type")),
        (AnthropicDecoder, [], "content_block_delta", _ANTHROPIC_TEXT, ("delta", "text")),
        (
            AnthropicDecoder,
            [_ANTHROPIC_TOOL],
            "content_block_delta",
            _ANTHROPIC_FRAGMENT,
            ("index",),
        ),
        (
            AnthropicDecoder,
            [_ANTHROPIC_TOOL],
            "content_block_delta",
            _ANTHROPIC_FRAGMENT,
            ("delta", "partial_json"),
        ),
        (OpenAIResponsesDecoder, [], "response.output_text.delta", _RESPONSES_TEXT, ("type",)),
        (OpenAIResponsesDecoder, [], "response.output_text.delta", _RESPONSES_TEXT, ("delta",)),
    ]
    for make, prefix, event, base, path in cases:
        fast, table = make(), make()
        for obj in prefix:
            fast.feed_sse_object(event, obj)
            table.feed_sse_object(event, obj)
        assert fast.feed_common(event, base) is not None  # the whole shape is taken
        table.feed_sse_object(event, base)
        missing = _without(base, path)
        assert fast.feed_common(event, missing) is None, path
        assert _state(fast) == _state(table)
