"""Record `railings replay --json` for every capture in tests/corpus.

The outputs are the reference `tests/test_replay_recorded.py` compares
against: a refactor of the core must leave every report byte-identical.
Run only when a change of a report is intended, and say so in the commit.

    .venv/bin/python tools/record_replay.py
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from railings.cli import main

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
OUT = CORPUS / "replay_recorded.json"

# Each capture is replayed with its format detected and with the format its
# manifest names; each plainly, with --max-tokens 16 (so a derived stop
# reason is covered) and fed 7 bytes at a time.
VARIANTS: tuple[tuple[str, ...], ...] = ((), ("--max-tokens", "16"), ("--chunk-size", "7"))
PROVIDERS = {
    "openai-chat": "openai",
    "anthropic-messages": "anthropic",
    "openai-responses": "openai-responses",
    "gemini": "gemini",
    "bedrock": "bedrock",
    "ollama": "ollama",
}


def captures() -> list[tuple[str, str]]:
    found = []
    for manifest in sorted(CORPUS.glob("*/MANIFEST.tsv")):
        lines = manifest.read_text(encoding="utf-8").splitlines()
        header = lines[0].split("\t")
        for line in lines[1:]:
            row = dict(zip(header, line.split("\t"), strict=False))
            if row.get("provider") not in PROVIDERS:
                continue  # not a response body (the event-stream test vectors ...)
            path = manifest.parent / row["file"]
            found.append((str(path.relative_to(CORPUS)), PROVIDERS[row["provider"]]))
    return found


def replay(path: str, args: tuple[str, ...]) -> str:
    """The exit code, standard output and standard error of one replay, in process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["replay", "--json", *args, str(CORPUS / path)])
    return f"{code}\n{out.getvalue()}{err.getvalue()}"


def cases() -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for path, provider in captures():
        for extra in VARIANTS:
            out.append((path, extra))
            out.append((path, ("--provider", provider, *extra)))
    return out


def record() -> None:
    recorded = {f"{path} {' '.join(args)}".strip(): replay(path, args) for path, args in cases()}
    OUT.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(recorded)} reports -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    record()
