"""Where railings spends its time per event: layer by layer, then function by function.

The layer account runs the core's stages cumulatively, each without a profiler
(which would inflate the cost of small calls): the SSE decoder alone; plus the
provider decoder (JSON included); the whole ``StreamReader`` (plus the
assembler and the reader's loop, then ``turn()``). The JSON parse is also timed
alone, over the same events' data. The stages run interleaved; differences of
the fastest of seven runs give the cost of each layer per event. On a busy
machine a difference can still be off by a few tenths of a microsecond
(``instructions.py`` gives exact counts).
cProfile then names the functions, with its own overhead.
"""

from __future__ import annotations

import cProfile
import gc
import io
import json
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import workloads as W

from railings.turn.reader import StreamReader, provider_decoder
from railings.wire import _json
from railings.wire.sse import SSEDecoder

__all__ = ["markdown", "run"]

_REPEATS = 7


def _floor(chunks: list[bytes]) -> None:
    loads = json.loads
    rest = b""
    for piece in chunks:
        blocks = (rest + piece).split(b"\n\n")
        rest = blocks.pop()
        for block in blocks:
            data = block[block.find(b"data: ") + 6 :]
            if data != b"[DONE]":
                loads(data)


def _sse(chunks: list[bytes]) -> None:
    feed = SSEDecoder().feed
    for piece in chunks:
        feed(piece)


def _decode(provider: str) -> Callable[[list[bytes]], None]:
    def run(chunks: list[bytes]) -> None:
        feed = SSEDecoder().feed
        decode = provider_decoder(provider).feed
        for piece in chunks:
            for event in feed(piece):
                decode(event)

    return run


def _reader(provider: str) -> Callable[[list[bytes]], None]:
    def run(chunks: list[bytes]) -> None:
        reader = StreamReader(provider)
        for piece in chunks:
            reader.feed(piece)
        reader.close()
        reader.turn()

    return run


def _json_only(datas: list[str]) -> Callable[[list[bytes]], None]:
    load = _json.load_object

    def run(chunks: list[bytes]) -> None:
        for data in datas:
            load(data, where="bench")

    return run


def _best(
    stages: dict[str, Callable[[list[bytes]], None]], chunks: list[bytes]
) -> dict[str, float]:
    """Each stage's fastest of a few runs, the stages interleaved so a busy moment of the
    machine hits them all: for deterministic CPU-bound code, the least disturbed run."""
    times: dict[str, list[float]] = {label: [] for label in stages}
    for _ in range(_REPEATS):
        for label, fn in stages.items():
            gc.collect()
            t = time.thread_time()
            fn(chunks)
            times[label].append(time.thread_time() - t)
    return {label: min(values) for label, values in times.items()}


def run(n: int, results: Path, console: Any) -> dict[str, Any]:
    """Per-layer microseconds per event for W1-W4 at ``n``, and cProfile's top functions."""
    out: dict[str, Any] = {"n": n, "layers": {}, "profile": {}}
    results.mkdir(parents=True, exist_ok=True)
    for name in ("W1", "W2", "W3", "W4"):
        wl = W.build(name, n)
        datas = [e.data for e in SSEDecoder().feed(wl.body) if e.data != "[DONE]"]
        for mode in W.MODES:
            chunks = W.pieces(wl.body, mode)
            stages = {
                "floor": _floor,
                "json": _json_only(datas),
                "sse": _sse,
                "sse+decoder": _decode(wl.provider),
                "reader": _reader(wl.provider),
            }
            t = {label: best / wl.events * 1e6 for label, best in _best(stages, chunks).items()}
            out["layers"][f"{wl.key}/{mode}"] = {
                "floor_us": t["floor"],
                "sse_us": t["sse"],
                "json_us": t["json"],
                "decoder_us": t["sse+decoder"] - t["sse"] - t["json"],
                "assembler_reader_us": t["reader"] - t["sse+decoder"],
                "total_us": t["reader"],
                "x_floor": t["reader"] / t["floor"],
            }
        chunks = W.pieces(wl.body, "net")
        profiler = cProfile.Profile()
        profiler.runcall(_reader(wl.provider), chunks)
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text).strip_dirs().sort_stats("tottime")
        stats.print_stats(14)
        (results / f"profile-{name}.txt").write_text(text.getvalue())
        out["profile"][wl.key] = text.getvalue()
        console.print(
            f"[dim]cProfile of railings on {wl.key}/net in {results / f'profile-{name}.txt'}[/dim]"
        )
    _print(out, console)
    return out


def _rows(layers: dict[str, dict[str, float]]) -> list[list[str]]:
    return [
        [
            key,
            *(
                f"{v[k]:.2f}"
                for k in (
                    "floor_us",
                    "sse_us",
                    "json_us",
                    "decoder_us",
                    "assembler_reader_us",
                    "total_us",
                    "x_floor",
                )
            ),
        ]
        for key, v in layers.items()
    ]


_HEAD = ["case", "floor", "SSE", "JSON", "decoder", "assembler+reader", "railings total", "x floor"]


def _print(out: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    t = Table(title="railings per event, by layer (microseconds)", title_justify="left")
    for col in _HEAD:
        t.add_column(col, justify="left" if col == "case" else "right")
    for row in _rows(out["layers"]):
        t.add_row(*row)
    console.print(t)


def markdown(out: dict[str, Any]) -> str:
    lines = [
        "### railings per event, by layer (microseconds, CPU time)",
        "",
        "| " + " | ".join(_HEAD) + " |",
        "|---|" + "---:|" * (len(_HEAD) - 1),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(out["layers"])]
    return "\n".join(lines) + "\n"
