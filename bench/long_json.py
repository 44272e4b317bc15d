"""jiter against the stdlib's JSON scanner on long event data: where ``load_object`` switches.

The Responses API repeats the whole text in its last events (``response.completed`` and
three ``*.done`` events). This parses W5's ``response.completed`` at several sizes both
ways, as ``railings.wire._json`` would (jiter is handed ``data.encode()``), and prints
the time of each, best of 15, and their ratio. It also times the reader on W5 at 20k
deltas fed in network pieces, with and without its four long events, to show their
share of a turn.

Usage::

    .venv/bin/python bench/long_json.py
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jiter
import workloads as W

from railings.turn.reader import StreamReader

_scan = vars(json.JSONDecoder())["scan_once"]


def _best(run: Callable[[], object], rounds: int = 15) -> float:
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def _completed(n: int) -> str:
    body = W.build("W5", n).body
    block = next(b for b in body.split(b"\n\n") if b.startswith(b"event: response.completed"))
    return block[block.index(b"data: ") + 6 :].decode()


def _reader(body: bytes) -> Callable[[], object]:
    pieces = W.pieces(body, "net")

    def run() -> object:
        reader = StreamReader("openai-responses")
        for piece in pieces:
            reader.feed(piece)
        reader.close()
        return reader

    return run


def main() -> int:
    print(f"{'W5 deltas':>10} {'bytes':>9} {'jiter':>10} {'stdlib':>10} {'stdlib/jiter':>13}")
    for n in (50, 200, 500, 2000, 5000, 20000):
        data = _completed(n)
        repeat = max(1, 200_000 // len(data))
        j = _best(lambda d=data, k=repeat: [jiter.from_json(d.encode()) for _ in range(k)])
        s = _best(lambda d=data, k=repeat: [_scan(d, 0) for _ in range(k)])
        j, s = j / repeat, s / repeat
        print(f"{n:>10} {len(data):>9} {j * 1e3:>8.3f}ms {s * 1e3:>8.3f}ms {s / j:>13.2f}")
    body = W.build("W5", 20000).body
    blocks = body.split(b"\n\n")
    short = b"\n\n".join(b for b in blocks if len(b) < 16 * 1024)
    whole, without = _best(_reader(body), 7), _best(_reader(short), 7)
    print(
        f"reader on W5@20k/net: {whole * 1e3:.1f} ms, without its four long events "
        f"{without * 1e3:.1f} ms: they cost {(whole - without) * 1e3:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
