"""Block templates (turn/template.py): a block read through one is the block parsed.

Three properties and one end to end: the spans found are the values' tokens; a block the
template reads parses (``json.loads``) to the learned object with the holes' values; the
decoder's ``make`` is its ``feed_common`` for that object, whatever state the decoder is
in; and a stream whose blocks repeat an envelope reads the same through the fast path,
where the template reads them, as through the plain path.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railings.events import ToolArgumentsDelta
from railings.providers.anthropic.decoder import AnthropicDecoder
from railings.providers.openai_chat.decoder import OpenAIChatDecoder
from railings.turn.fastpath import FastStreamReader
from railings.turn.template import BlockTemplate, spans
from test_fastpath import _equal
from test_fastpath_common import _anthropic, _anthropic_event, _chunk, _openai_event, _stream

_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=20,
)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    if isinstance(value, dict):
        return {p: v for key, item in value.items() for p, v in _leaves(item, (*path, key)).items()}
    if isinstance(value, list):
        return {p: v for i, item in enumerate(value) for p, v in _leaves(item, (*path, i)).items()}
    return {path: value}


@_SETTINGS
@given(st.dictionaries(st.text(max_size=4), _json), st.booleans(), st.sampled_from([0, None, 1]))
def test_spans_are_the_tokens_of_the_values(obj: dict[str, Any], ascii: bool, indent: Any) -> None:
    data = json.dumps(obj, ensure_ascii=ascii, indent=indent).encode()
    leaves = _leaves(obj)
    found = spans(data, set(leaves))
    assert found is not None
    assert set(found) == set(leaves)
    for path, (start, end) in found.items():
        assert json.loads(data[start:end]) == leaves[path]


def test_a_repeated_key_makes_no_spans() -> None:
    assert spans(b'{"a": {"b": 1, "b": 2}}', {("a", "b")}) is None
    assert spans(b'{"a": {"b": 1}, "c": [{"d": 1}, {"d": 2}]}', {("a", "b")}) is not None


# -- a template reads what parsing reads ---------------------------------------------------

_CHUNK = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "model": "m",
    "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}],
    "usage": None,
    "obfuscation": "abc",
}
_CONTENT = ("choices", 0, "delta", "content")


def _learned(obj: dict[str, Any], data: bytes) -> BlockTemplate:
    template = BlockTemplate.learn("message", data, obj, [_CONTENT], [("obfuscation",)], list)
    assert template is not None
    return template


def _with(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    at: Any = out
    for step in path[:-1]:
        at = at[step]
    at[path[-1]] = value
    return out


# Tokens a hole may hold: JSON strings written every way, and bytes that are not one.
_token = st.one_of(
    st.builds(
        lambda text, ascii: json.dumps(text, ensure_ascii=ascii).encode(),
        st.text(),
        st.booleans(),
    ),
    st.sampled_from(
        [b'"a\\ud800"', b'"\x01"', b'"\\x"', b'"a', b'a"', b"1", b"null", b'"a","b"', b'""']
    ),
    st.sampled_from([b'"\xff"', b'"\xc3"', b'"\\"', b'" "x"', b"[]", b'"a\\u00e9"']),
    st.binary(max_size=12),
)


def _string(token: bytes) -> bool:
    """A JSON string token whose text UTF-8 can hold (no lone surrogate)."""
    try:
        value = json.loads(token)
        if type(value) is not str:
            return False
        value.encode()
    except (ValueError, UnicodeError):
        return False
    return True


@_SETTINGS
@given(_token, _token, st.booleans())
def test_a_block_the_template_reads_parses_to_the_learned_object_with_its_values(
    content: bytes, padding: bytes, spaced: bool
) -> None:
    data = json.dumps(_CHUNK, separators=(", ", ": ") if spaced else (",", ":")).encode()
    template = _learned(_CHUNK, data)
    block = data.replace(b'"hi"', content).replace(b'"abc"', padding)
    values = template.values(block)
    try:
        parsed = json.loads(block)
    except ValueError:
        parsed = None
    if values is None:
        # Only a token that is not a JSON string, or one the fast parser refuses (a lone
        # surrogate, which the general path then reads), is refused.
        assert parsed is None or not (_string(content) and _string(padding))
        return
    assert parsed is not None
    assert parsed == _with(
        _with(_CHUNK, _CONTENT, values[0]), ("obfuscation",), parsed["obfuscation"]
    )


def test_a_block_another_envelope_is_not_read() -> None:
    data = json.dumps(_CHUNK).encode()
    template = _learned(_CHUNK, data)
    assert template.values(data.replace(b'"m"', b'"n"')) is None
    assert template.values(data.replace(b'"usage": null', b'"usage":  null')) is None
    assert template.values(data + b" ") is None
    assert template.values(data[:-1]) is None
    assert template.values(data.replace(b'"abc"', b'"abc", "x": 1')) is None
    # The padding's shortcut takes ASCII letters and digits only; others are parsed.
    assert template.values(data.replace(b'"abc"', '"é1"'.encode())) == ["hi"]
    assert template.values(data.replace(b'"abc"', b'"\xff1"')) is None


def test_no_template_where_the_cut_could_be_wrong() -> None:
    twice = b'{"choices":[{"delta":{"content":"a","content":"b"}}]}'
    obj = json.loads(twice)
    assert BlockTemplate.learn("message", twice, obj, [_CONTENT], [], list) is None
    missing = json.dumps({"choices": [{"delta": {}}]}).encode()
    assert (
        BlockTemplate.learn("message", missing, json.loads(missing), [_CONTENT], [], list) is None
    )
    number = json.dumps({"choices": [{"delta": {"content": 1.5}}]}).encode()
    assert BlockTemplate.learn("message", number, json.loads(number), [_CONTENT], [], list) is None


def test_an_integer_hole_takes_json_integers_only() -> None:
    data = b'{"n":5,"t":"x"}'
    template = BlockTemplate.learn("e", data, json.loads(data), [("t",), ("n",)], [], list)
    assert template is not None
    assert template.values(b'{"n":12,"t":"y"}') == ["y", 12]
    for other in (b"05", b"-1", b"1.0", b"1e2", b"", b"\xd9\xa1", b"true", b"1" * 5000):
        assert template.values(b'{"n":' + other + b',"t":"y"}') is None


# -- make is feed_common -----------------------------------------------------------------

_TOOL = {"type": "tool_use", "id": "t", "name": "f", "input": {}}
_FRAGMENT = ("delta", "partial_json")
_values = st.sampled_from(["x", "", "é ✓ 😀", "\n\n", '{"a"', "a\ud800"])


# Each decoder with a template, and streams of its shapes. In Anthropic's, a tool block
# started at index 1 or restarted at index 0 moves the call a fragment belongs to: make
# looks the block up when it is called, as feed_common does.
_DECODERS: dict[str, tuple[Any, Any]] = {
    "openai": (OpenAIChatDecoder, _stream(_openai_event, _chunk)),
    "anthropic": (AnthropicDecoder, _stream(_anthropic_event, _anthropic)),
}


@pytest.mark.parametrize("provider", _DECODERS)
@_SETTINGS
@given(data=st.data())
def test_make_equals_feed_common_in_every_later_state(provider: str, data: st.DataObject) -> None:
    make_decoder, streams = _DECODERS[provider]
    decoder = make_decoder()
    learned: list[tuple[str, dict[str, Any], Any]] = []
    for event, obj in data.draw(streams):
        for at_event, at_obj, (paths, _, make) in learned:
            value = data.draw(_values)
            other = _with(at_obj, paths[0], value)
            assert make([value]) == decoder.feed_common(at_event, other)
        item = decoder.feed_common(event, obj)
        if item is not None:
            learned.append((event, obj, decoder.common_template(event, obj, item)))
            continue
        try:
            decoder.feed_sse_object(event, obj)
        except Exception:
            return


def test_anthropic_make_follows_a_tool_block_restarted_at_its_index() -> None:
    decoder = AnthropicDecoder()
    start = {"type": "content_block_start", "index": 0, "content_block": _TOOL}
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": '{"a"'},
    }
    decoder.feed_sse_object("content_block_start", start)
    item = decoder.feed_common("content_block_delta", delta)
    assert item is not None
    _, _, make = decoder.common_template("content_block_delta", delta, item)
    assert make(["1"]) == decoder.feed_common("content_block_delta", _with(delta, _FRAGMENT, "1"))
    decoder.feed_sse_object("content_block_start", start)  # a second call at index 0
    later = make(["2"])
    assert later == decoder.feed_common("content_block_delta", _with(delta, _FRAGMENT, "2"))
    assert isinstance(later, ToolArgumentsDelta) and later.index == 1


# -- end to end ----------------------------------------------------------------------------

_ENVELOPE = '{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
_TAIL = '"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"%s"}'


def _openai_body(tokens: list[bytes], tool: bool) -> bytes:
    start = '"delta":{"role":"assistant","content":""},'
    if tool:
        start = (
            '"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",'
            '"function":{"name":"f","arguments":""}}]},'
        )
    blocks = [(_ENVELOPE + start + _TAIL % "p").encode()]
    for i, token in enumerate(tokens):
        if tool:
            delta = b'"delta":{"tool_calls":[{"index":0,"function":{"arguments":%s}}]},' % token
        else:
            delta = b'"delta":{"content":%s},' % token
        blocks.append(_ENVELOPE.encode() + delta + (_TAIL % ("x" * (i % 7))).encode())
    end = _ENVELOPE + '"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}'
    blocks.append(end.encode())
    return b"".join(b"data: " + block + b"\n\n" for block in blocks) + b"data: [DONE]\n\n"


_plain = st.builds(lambda text: json.dumps(text).encode(), st.text(min_size=1, max_size=8))


def _anthropic_body(tokens: list[bytes], tool: bool) -> bytes:
    """An Anthropic stream with one content block whose deltas carry ``tokens``."""
    block: dict[str, Any] = {"type": "text", "text": ""}
    kind, field = b"text_delta", b"text"
    if tool:
        block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
        kind, field = b"input_json_delta", b"partial_json"
    start = {"type": "content_block_start", "index": 0, "content_block": block}
    delta = b'{"type":"content_block_delta","index":0,"delta":{"type":"%s","%s":' % (kind, field)
    events = [
        (b"message_start", b'{"type":"message_start","message":{"id":"m"}}'),
        (b"content_block_start", json.dumps(start).encode()),
        *((b"content_block_delta", delta + token + b"}}") for token in tokens),
        (b"content_block_stop", b'{"type":"content_block_stop","index":0}'),
        (b"message_delta", b'{"type":"message_delta","delta":{"stop_reason":"end_turn"}}'),
        (b"message_stop", b'{"type":"message_stop"}'),
    ]
    return b"".join(b"event: %s\ndata: %s\n\n" % event for event in events)


_BODIES = {"openai": _openai_body, "anthropic": _anthropic_body}


@pytest.mark.parametrize("provider", _BODIES)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(_plain, _plain, _plain, _token), min_size=1, max_size=30),
    st.booleans(),
    st.data(),
)
def test_streams_repeating_an_envelope_read_the_same_cut_anywhere(
    provider: str, tokens: list[bytes], tool: bool, data: st.DataObject
) -> None:
    body = _BODIES[provider](tokens, tool)
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=20))
    _equal(provider, body, cuts)


@pytest.mark.parametrize("provider", _BODIES)
@pytest.mark.parametrize("tool", [False, True])
def test_the_template_reads_every_fragment_after_the_first(provider: str, tool: bool) -> None:
    pieces = [json.dumps(f'piece {i} ✓ "q"').encode() for i in range(200)]
    body = _BODIES[provider](pieces, tool)
    reader = FastStreamReader(provider)
    for at in range(0, len(body), 1024):
        reader.feed(body[at : at + 1024])
    reader.close()
    assert reader._learns == 7  # learned once, then every block fit it
    turn = reader.turn()
    expected = "".join(f'piece {i} ✓ "q"' for i in range(200))
    assert (turn.tool_calls[0].raw_arguments if tool else turn.text) == expected
