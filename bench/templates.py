"""Which decoders' blocks a block template reads faster than jiter parses them.

A decoder that offers ``common_template`` has the reader's fast path read a block that
repeats the last common block's envelope by parsing the values cut out of it
(``railings/turn/template.py``); one that does not has every block parsed whole. This
times the reader (the ``railings`` consumer of ``bench/consumers.py``) both ways on the
same pieces, each against the floor in the same round: the decoder's class gives its
``common_template`` for one run and none for the next, the floor runs before both, the
rounds alternate, and the medians of the two ratios are printed with the workload,
the mode and the template kept or dropped. For the Responses API, whose decoder offers
none, it adds one for the run (the same ``make`` as ``feed_common``, the text's three
holes: the number, the text and the padding), to show why it has none.

Usage::

    .venv/bin/python bench/templates.py                      # W1-W5, net and event pieces
    .venv/bin/python bench/templates.py --workload W4 --rounds 15
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import consumers as C
import workloads as W

from railings.events import StreamEvent
from railings.providers.openai_responses.decoder import OpenAIResponsesDecoder
from railings.turn.reader import provider_decoder
from railings.wire._events import text_delta

_WORKLOADS = ("W1", "W2", "W3", "W4", "W5")


def _responses_template(
    self: OpenAIResponsesDecoder, event: str, obj: dict[str, Any], item: StreamEvent
) -> Any:
    """A template for the Responses text delta, as its decoder would offer one."""

    def numbered(values: list[Any]) -> StreamEvent | None:
        value, sequence = values
        last = self._sequence
        if not value or (last is not None and sequence != last + 1):
            return None
        self._sequence = sequence
        return text_delta(value)

    return [("delta",), ("sequence_number",)], [("obfuscation",)], numbered


def _cpu(run: Callable[[list[bytes]], object], pieces: list[bytes]) -> float:
    gc.collect()
    start = time.thread_time()
    run(pieces)
    return time.thread_time() - start


def _compare(name: str, mode: str, n: int, rounds: int) -> tuple[float, float, bool]:
    """The reader over the floor with the template and without, and whether the decoder
    offers one itself."""
    workload = W.build(name, n)
    pieces = W.pieces(workload.body, mode)
    floor = C.runner(next(c for c in C.CONSUMERS if c.name == "floor"), workload.provider)
    reader = C.runner(next(c for c in C.CONSUMERS if c.name == "railings"), workload.provider)
    decoder: Any = type(provider_decoder(workload.provider))
    own = vars(decoder).get("common_template")
    template = own if own is not None else _responses_template
    gc.collect()
    gc.freeze()
    with_it: list[float] = []
    without: list[float] = []
    try:
        for _ in range(rounds):
            base = _cpu(floor, pieces)
            decoder.common_template = template
            with_it.append(_cpu(reader, pieces) / base)
            del decoder.common_template
            without.append(_cpu(reader, pieces) / base)
    finally:
        if own is not None:
            decoder.common_template = own
        elif "common_template" in vars(decoder):
            del decoder.common_template
        gc.unfreeze()
    return statistics.median(with_it), statistics.median(without), own is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", action="append", choices=_WORKLOADS)
    parser.add_argument("--mode", action="append", choices=W.MODES)
    parser.add_argument("-n", type=int, default=20_000, help="deltas per workload")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    print(f"railings / floor, thread CPU time, medians of {args.rounds} alternating rounds")
    print("| workload | with a template | without | the decoder offers one |")
    print("|---|---:|---:|---|")
    for name in args.workload or _WORKLOADS:
        for mode in args.mode or W.MODES:
            with_it, without, own = _compare(name, mode, args.n, args.rounds)
            label = f"{name}@{args.n // 1000}k/{mode}"
            print(f"| {label} | {with_it:.3f}x | {without:.3f}x | {'yes' if own else 'no'} |")


if __name__ == "__main__":
    main()
