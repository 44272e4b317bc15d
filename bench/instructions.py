"""Instructions per event, counted by valgrind: a measure that machine noise cannot move.

On a shared machine a 5% change hides in the timing noise; the number of CPU
instructions a stage executes does not vary from run to run. This script runs
one stage of railings over a workload under ``valgrind --tool=callgrind`` once
with one pass and once with three, and prints the difference divided by two
and by the event count: interpreter start-up and workload generation cancel
out. Instructions are not time (cache misses and branch mispredictions are
not counted), so use it to compare two versions of the same Python code, and
the timing harness (``run.py``) for everything else.

Usage (valgrind must be installed; about 20 s per line)::

    .venv/bin/python bench/instructions.py                 # every stage, W1-W5, net pieces
    .venv/bin/python bench/instructions.py --stage reader --workload W3 --mode event
    .venv/bin/python bench/instructions.py --stage floor --stage reader   # the ratio too
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

STAGES = ("sse", "json", "decoder", "reader")
# Not railings: the floor of bench/consumers.py on the same pieces, to read a stage against.
OTHERS = ("floor",)


def _stage(stage: str, name: str, n: int, mode: str, passes: int) -> None:
    """What runs under valgrind: ``passes`` passes of one stage over the workload."""
    import workloads as W

    from railings.turn.reader import StreamReader, provider_decoder
    from railings.wire._json import load_object
    from railings.wire.sse import SSEDecoder

    wl = W.build(name, n)
    chunks = W.pieces(wl.body, mode)
    floor = None
    if stage == "floor":
        import consumers as C

        floor = C.runner(next(c for c in C.CONSUMERS if c.name == "floor"), wl.provider)
    datas = [e.data for e in SSEDecoder().feed(wl.body) if e.data != "[DONE]"]
    gc.collect()
    gc.freeze()  # the set-up's objects: not rescanned by the collections the passes cause
    for _ in range(passes):
        if floor is not None:
            floor(chunks)
        elif stage == "sse":
            feed = SSEDecoder().feed
            for piece in chunks:
                feed(piece)
        elif stage == "json":
            for data in datas:
                load_object(data, where="bench")
        elif stage == "decoder":
            feed, decode = SSEDecoder().feed, provider_decoder(wl.provider).feed
            for piece in chunks:
                for event in feed(piece):
                    decode(event)
        else:
            reader = StreamReader(wl.provider)
            for piece in chunks:
                reader.feed(piece)
            reader.close()
            reader.turn()


def _count(stage: str, name: str, n: int, mode: str, passes: int, jiter: str) -> int:
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--inner",
        stage,
        name,
        str(n),
        mode,
        str(passes),
        jiter,
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same dict layouts in every process
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    match = re.search(r"Collected : (\d+)", done.stderr)
    if match is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(match.group(1))


def per_event(stage: str, name: str, n: int, mode: str, jiter: str = "on") -> float:
    import workloads as W

    events = W.build(name, n).events
    three, one = (_count(stage, name, n, mode, k, jiter) for k in (3, 1))
    return (three - one) / 2 / events


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        stage, name, n, mode, passes, jiter = sys.argv[2:8]
        if jiter == "off":
            sys.modules["jiter"] = None  # type: ignore[assignment]  # import jiter fails
        _stage(stage, name, int(n), mode, int(passes))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--stage",
        choices=STAGES + OTHERS,
        action="append",
        help="cumulative: sse, sse+json+decoder (decoder), everything (reader); "
        "json alone parses the events' data; floor: bench/consumers.py's floor",
    )
    p.add_argument("--workload", action="append", choices=("W1", "W2", "W3", "W4", "W5"))
    p.add_argument("--mode", default="net", choices=("net", "event"))
    p.add_argument("-n", type=int, default=2000, help="events per workload (default 2000)")
    p.add_argument("--no-jiter", action="store_true", help="count as if jiter were not installed")
    args = p.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    for name in args.workload or ("W1", "W2", "W3", "W4", "W5"):
        jiter = "off" if args.no_jiter else "on"
        counts = {s: per_event(s, name, args.n, args.mode, jiter) for s in args.stage or STAGES}
        ratio = ""
        if "floor" in counts and "reader" in counts:
            ratio = f"  (reader {counts['reader'] / counts['floor']:.2f}x the floor)"
        print(
            f"{name}/{args.mode}: "
            + "  ".join(f"{s} {v:,.0f}" for s, v in counts.items())
            + "  instructions per event"
            + ratio
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
