"""`railings run --provider gemini|bedrock|ollama` as a user runs it (a real subprocess)
against a real server on 127.0.0.1: the model calls ``read_file``, the result goes back in
the wire's own shape, and the model's final answer ends the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import railings
from _server import CannedServer, Reply
from railings.providers import spec
from railings.testing.eventstream import event_frame

NOTE = "the launch code is 7-7-7"
ANSWER = "The note says the launch code is 7-7-7."
SECRET = "provider-key-0123456789abcdef"


def _sse(*chunks: dict[str, Any]) -> list[bytes]:
    return [f"data: {json.dumps(chunk)}\r\n\r\n".encode() for chunk in chunks]


def _ndjson(*lines: dict[str, Any]) -> list[bytes]:
    return [json.dumps(line).encode() + b"\n" for line in lines]


def _gemini() -> tuple[list[bytes], list[bytes]]:
    usage = {"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17}
    call = {"functionCall": {"name": "read_file", "args": {"path": "note.txt"}}}
    first = _sse(
        {
            "candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}],
            "usageMetadata": usage,
        }
    )
    final = _sse(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": ANSWER[:9]}]}}]},
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": ANSWER[9:]}]},
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": usage,
        },
    )
    return first, final


def _bedrock() -> tuple[list[bytes], list[bytes]]:
    usage = {"usage": {"inputTokens": 12, "outputTokens": 5, "totalTokens": 17}}
    start = {"start": {"toolUse": {"toolUseId": "tooluse_n1", "name": "read_file"}}}
    first = [
        event_frame("messageStart", {"role": "assistant"}),
        event_frame("contentBlockStart", {**start, "contentBlockIndex": 0}),
        event_frame(
            "contentBlockDelta",
            {"delta": {"toolUse": {"input": '{"path": '}}, "contentBlockIndex": 0},
        ),
        event_frame(
            "contentBlockDelta",
            {"delta": {"toolUse": {"input": '"note.txt"}'}}, "contentBlockIndex": 0},
        ),
        event_frame("contentBlockStop", {"contentBlockIndex": 0}),
        event_frame("messageStop", {"stopReason": "tool_use"}),
        event_frame("metadata", usage),
    ]
    final = [
        event_frame("messageStart", {"role": "assistant"}),
        event_frame("contentBlockDelta", {"delta": {"text": ANSWER}, "contentBlockIndex": 0}),
        event_frame("contentBlockStop", {"contentBlockIndex": 0}),
        event_frame("messageStop", {"stopReason": "end_turn"}),
        event_frame("metadata", usage),
    ]
    return first, final


def _ollama() -> tuple[list[bytes], list[bytes]]:
    call = {"function": {"name": "read_file", "arguments": {"path": "note.txt"}}}
    message = {"role": "assistant", "content": "", "tool_calls": [call]}
    done = {"done": True, "done_reason": "stop", "prompt_eval_count": 12, "eval_count": 5}
    first = _ndjson(
        {"model": "llama3.2", "message": message, "done": False},
        {"model": "llama3.2", "message": {"role": "assistant", "content": ""}, **done},
    )
    final = _ndjson(
        {"model": "llama3.2", "message": {"role": "assistant", "content": ANSWER}, "done": False},
        {"model": "llama3.2", "message": {"role": "assistant", "content": ""}, **done},
    )
    return first, final


STREAMS = {"gemini": _gemini, "bedrock": _bedrock, "ollama": _ollama}
ENV = {
    "gemini": {"GEMINI_API_KEY": SECRET},
    "bedrock": {"AWS_BEARER_TOKEN_BEDROCK": SECRET, "AWS_REGION": "eu-west-1"},
    "ollama": {},
}


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def _tool_result_shape(provider: str, body: dict[str, Any]) -> Any:
    """The tool result of the second request, where the wire puts it."""
    if provider == "gemini":
        last = body["contents"][-1]
        (part,) = [p for p in last["parts"] if "functionResponse" in p]
        assert part["functionResponse"]["name"] == "read_file"
        # the model's call went back before it, as it came
        calls = [p for c in body["contents"] for p in c["parts"] if "functionCall" in p]
        assert calls[-1]["functionCall"] == {"name": "read_file", "args": {"path": "note.txt"}}
        return part
    if provider == "bedrock":
        last = body["messages"][-1]
        assert last["role"] == "user"
        (block,) = [b for b in last["content"] if "toolResult" in b]
        assert block["toolResult"]["toolUseId"] == "tooluse_n1"
        uses = [b for m in body["messages"] for b in m["content"] if "toolUse" in b]
        assert uses[-1]["toolUse"]["input"] == {"path": "note.txt"}
        return block
    last = body["messages"][-1]
    assert last["role"] == "tool"
    assert body["messages"][-2]["tool_calls"][0]["function"]["name"] == "read_file"
    return last


@pytest.mark.parametrize("provider", sorted(STREAMS))
def test_run_calls_a_tool_and_answers(tmp_path: Path, provider: str) -> None:
    (tmp_path / "note.txt").write_text(NOTE + "\n")
    first, final = STREAMS[provider]()
    kind = spec(provider).content_types[0]
    with CannedServer() as server:
        server.push(
            Reply(chunks=first, headers=(("content-type", kind),)),
            Reply(chunks=final, headers=(("content-type", kind),)),
        )
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(Path(railings.__file__).parents[1]),  # the code under test
            "NO_COLOR": "1",
            "HOME": str(tmp_path),
            "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
            **ENV[provider],
        }
        done = subprocess.run(
            [sys.executable, "-m", "railings", "run", "read note.txt", "--provider", provider,
             "--base-url", server.url, "--workdir", str(tmp_path), "--json"],
            capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
        )  # fmt: skip
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    transcript = json.loads(done.stdout)
    (run,) = transcript["runs"]
    assert run["status"] == "completed"
    verdicts = [[c["verdict"] for c in turn["tool_calls"]] for turn in run["turns"]]
    assert verdicts == [["execute"], []]
    assert ANSWER in done.stdout
    assert len(requests) == 2
    second = json.loads(requests[1].body)
    result = _tool_result_shape(provider, second)
    assert NOTE in json.dumps(result)
    assert SECRET not in done.stdout and SECRET not in done.stderr
    # the default model, in the path where the wire puts it
    model = {"gemini": "gemini-2.5-flash", "bedrock": "amazon.nova-lite-v1%3A0"}
    assert model.get(provider, "") in requests[0].path
    if provider == "ollama":
        assert json.loads(requests[0].body)["model"] == "llama3.2"
        assert "authorization" not in requests[0].headers


def _railings(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(Path(railings.__file__).parents[1]),  # the code under test
        "NO_COLOR": "1",
        "HOME": str(tmp_path),
        "RAILINGS_JOURNAL": str(tmp_path / "journal.sqlite3"),
    }
    return subprocess.run(
        [sys.executable, "-m", "railings", *args],
        capture_output=True, text=True, timeout=120, env={**base, **env}, cwd=tmp_path,
    )  # fmt: skip


def test_a_gemini_key_in_the_environment_picks_gemini(tmp_path: Path) -> None:
    _, final = _gemini()
    with CannedServer() as server:
        server.push(Reply(chunks=final, headers=(("content-type", "text/event-stream"),)))
        done = _railings(
            tmp_path, "run", "hi", GEMINI_API_KEY=SECRET, GOOGLE_GEMINI_BASE_URL=server.url
        )
        (request,) = server.requests
    assert done.returncode == 0, done.stderr
    assert f"gemini model gemini-2.5-flash at {server.url}" in done.stderr
    assert "key from GEMINI_API_KEY or GOOGLE_API_KEY" in done.stderr
    assert request.headers["x-goog-api-key"] == SECRET and SECRET not in done.stderr


def test_gemini_without_its_key_is_refused_naming_both_variables(tmp_path: Path) -> None:
    done = _railings(tmp_path, "run", "x", "--provider", "gemini")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (
        "railings run: --provider gemini needs GEMINI_API_KEY or GOOGLE_API_KEY in the environment "
        "(for https://generativelanguage.googleapis.com); --demo runs the embedded scripted "
        "model instead"
    )


def test_bedrock_without_a_token_nor_the_extra_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import argparse

    from railings.cli._common import UsageError
    from railings.cli.endpoint import endpoint_for

    for name in ("AWS_BEARER_TOKEN_BEDROCK", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    args = argparse.Namespace(
        demo=False, provider="bedrock", base_url=None, model=None, max_tokens=None,
        idle_timeout=None, content_idle=None, total_timeout=None, workdir=None,
    )  # fmt: skip
    import botocore  # the dev extras install it

    monkeypatch.setitem(sys.modules, "botocore", None)  # how Python marks an absent module
    with pytest.raises(UsageError) as caught, endpoint_for(args):
        pass
    assert str(caught.value) == (
        "--provider bedrock needs AWS_BEARER_TOKEN_BEDROCK in the environment (or AWS "
        "credentials with pip install botocore) (for "
        "https://bedrock-runtime.eu-west-1.amazonaws.com); --demo runs the embedded scripted "
        "model instead"
    )
    monkeypatch.setitem(sys.modules, "botocore", botocore)  # with the extra and credentials
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    with endpoint_for(args) as endpoint:
        assert (
            endpoint.note is not None
            and "SigV4, AWS credentials, region eu-west-1" in endpoint.note
        )


def test_bedrock_without_a_token_nor_aws_credentials_is_refused_before_any_request(
    tmp_path: Path,
) -> None:
    # The extra is installed but botocore's chain finds nothing (no variables, no
    # ~/.aws, no instance metadata): one line and exit 2, not an error after the network.
    done = _railings(
        tmp_path, "run", "x", "--provider", "bedrock", AWS_REGION="eu-west-1",
        AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("railings run: --provider bedrock: no AWS credentials found")
    assert "AWS_BEARER_TOKEN_BEDROCK" in line
    assert not (tmp_path / "journal.sqlite3").exists()


def test_ollama_needs_no_key(tmp_path: Path) -> None:
    _, final = _ollama()
    with CannedServer() as server:
        server.push(Reply(chunks=final, headers=(("content-type", "application/x-ndjson"),)))
        host = server.url.removeprefix("http://")  # OLLAMA_HOST as host:port
        done = _railings(tmp_path, "run", "hi", "--provider", "ollama", OLLAMA_HOST=host)
    assert done.returncode == 0, done.stderr
    assert f"ollama model llama3.2 at {server.url} (no key)" in done.stderr
