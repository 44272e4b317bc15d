"""What the fuzz campaigns feed: hand-made hostile fragments and event-list mutations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

__all__ = ["HOSTILE_FRAGMENTS", "Mutation", "mutate", "mutations", "split_points"]

HOSTILE_FRAGMENTS: tuple[bytes, ...] = (
    b"\xef\xbb\xbf",
    b"\r",
    b"\r\n",
    b"\n",
    b"\n\n",
    b"data: ",
    b"data:",
    b"event: ",
    b"event: error\n",
    b"event: message_stop\n",
    b": keep-alive\n",
    b"id: \x00\n",
    b"retry: " + b"9" * 5000 + b"\n",
    b"\x00",
    b"\xff\xfe",
    b"\xc3",
    b"\xed\xa0\x80",
    b"[DONE]",
    b"data: [DONE]\n\n",
    b"null",
    b"[]",
    b'{"type":"message_stop"}',
    b'{"type":"response.completed","response":{"status":"completed"}}',
    b"[" * 200 + b"]" * 200,
    b'{"a":' * 100,
    b"9" * 5000,
    b"1e999999",
    b"-0.0e-99999",
    b'"\\ud800"',
    b'{"choices":[{"index":99999999999999999999,"delta":{"content":"x"}}]}',
    b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1,"function":{"arguments":"{"}}]}}]}',
    b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":'
    b'{"name":"shell","arguments":"{\\"command\\": \\"rm -rf /tmp/leg"}}]}}]}',
    b'{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}',
    b'{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}',
    b'{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t",'
    b'"name":"shell","input":{}}}',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",'
    b'"partial_json":"{\\"command\\": \\"rm -rf /tmp/leg"}}',
    b'{"type":"content_block_stop","index":0}',
    b'{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":9}}',
    b'{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}',
    b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    b'{"error":{"message":"boom","code":500}}',
)


# -- mutations -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mutation:
    """One edit of a block list: ``swap`` i with i+1, ``dup`` i ``count`` times,
    ``drop`` i, or ``move`` i to position j."""

    op: str
    i: int
    j: int = 0

    def __str__(self) -> str:
        return f"{self.op}({self.i}{', ' + str(self.j) if self.op in ('dup', 'move') else ''})"


def mutate(blocks: Sequence[bytes], mutations: Sequence[Mutation]) -> list[bytes]:
    """``blocks`` with each mutation applied in turn (indexes taken modulo the length)."""
    out = list(blocks)
    for m in mutations:
        if not out:
            break
        i = m.i % len(out)
        if m.op == "swap" and len(out) > 1:
            k = (i + 1) % len(out)
            out[i], out[k] = out[k], out[i]
        elif m.op == "dup":
            out[i + 1 : i + 1] = [out[i]] * max(1, min(m.j, 4))
        elif m.op == "drop":
            del out[i]
        elif m.op == "move":
            block = out.pop(i)
            out.insert(m.j % (len(out) + 1), block)
    return out


# A few edits at a time, indexes anywhere (taken modulo the list's length).
mutations = st.lists(
    st.builds(
        Mutation,
        st.sampled_from(["swap", "dup", "drop", "move"]),
        st.integers(0, 10_000),
        st.integers(1, 64),
    ),
    min_size=1,
    max_size=6,
)


def split_points(size: int) -> st.SearchStrategy[list[int]]:
    """Split points for a body of ``size`` bytes."""
    return st.lists(st.integers(0, max(size, 0)), max_size=24)
