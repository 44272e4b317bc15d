"""``railings serve`` / ``railings proxy`` through the real console script."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx2

from railings.testing import Script, ScriptedServer

RAILINGS = Path(sys.executable).parent / "railings"
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def test_a_pasted_v1_base_url_as_upstream_is_not_doubled(tmp_path: Path) -> None:
    # `railings serve` prints its OpenAI base URL with /v1; pasted as --upstream, the proxy
    # once forwarded /v1/v1/chat/completions, a 404.
    with ScriptedServer(Script.text("hello")) as server:
        origin = server.url
        process = subprocess.Popen(
            [str(RAILINGS), "proxy", "--upstream", server.openai_base_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        try:
            assert process.stderr is not None
            line, before = "", ""
            while "listening on" not in line:  # after the line about the trimmed /v1
                before += line
                line = process.stderr.readline()
                assert line, "the proxy exited before listening"
            url = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            assert url, line
            with httpx2.Client(timeout=30) as client:
                answer = client.post(url[1] + "/v1/chat/completions", json=BODY)
            assert answer.status_code == 200, answer.text
            assert answer.text.rstrip().endswith("data: [DONE]")
            assert server.requests[-1].path == "/v1/chat/completions"
        finally:
            process.terminate()
            _, err = process.communicate(timeout=30)
    err = before + err
    assert f"forwarding to {origin}: clients' paths already start with /v1" in err


def test_matrix_upstream_takes_the_base_url_form_too(tmp_path: Path) -> None:
    # `railings run --base-url` wants the /v1 form; `matrix --upstream` takes it as well.
    with ScriptedServer(Script.text("hello")) as server:
        origin = server.url
        done = subprocess.run(
            [
                str(RAILINGS),
                "matrix",
                "--upstream",
                server.openai_base_url,
                "--model",
                "m",
                "--faults",
                "clean,drop_terminator",
                "--providers",
                "openai",
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    assert f"railings matrix: forwarding to {origin}: clients' paths already start with /v1" in (
        done.stderr
    )
    report = json.loads(done.stdout)
    assert report["upstream"] == origin
    assert {c["status"] for c in report["cells"]} == {"pass"}


def _listening(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None  # status lines: on stderr
    line = process.stderr.readline()
    url = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
    assert url, line
    return url[1]


def test_serve_and_proxy_log_one_line_per_request(tmp_path: Path) -> None:
    serve = subprocess.Popen(
        [str(RAILINGS), "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        server = _listening(serve)
        proxy = subprocess.Popen(
            [str(RAILINGS), "proxy", "--upstream", server, "--fault", "drop_terminator"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        proxy_err = ""
        try:
            via = _listening(proxy)
            with httpx2.Client(timeout=30) as client:
                answer = client.post(via + "/v1/chat/completions?key=sk-in-the-query", json=BODY)
            assert answer.status_code == 200
            # The proxy logs once the request is over, which may be just after the client
            # has read the end: wait for the line (bounded by the suite's timeout).
            assert proxy.stderr is not None
            while "POST" not in proxy_err:
                line = proxy.stderr.readline()
                assert line, "the proxy exited without logging the request"
                proxy_err += line
        finally:
            proxy.terminate()
            proxy_err += proxy.communicate(timeout=30)[1]
    finally:
        serve.terminate()
        _, serve_err = serve.communicate(timeout=30)
    [served] = [line for line in serve_err.splitlines() if "POST" in line]
    assert served == "railings serve: POST /v1/chat/completions -> 200 (stream, turn 1)"
    [proxied] = [line for line in proxy_err.splitlines() if "POST" in line]
    assert proxied.startswith("railings proxy: POST /v1/chat/completions -> 200, ")
    assert "sk-in-the-query" not in serve_err + proxy_err
