"""The upstream URL's credentials never leave the gateway: ``--upstream http://user:PASSWORD@host``.

``railings gateway`` runs as a child process in front of an upstream that refuses every
connection; the test reads everything it printed, answered, counted and journaled.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from gateway_kit import body, headers

SRC = Path(__file__).resolve().parent.parent / "src"
USER = "gateway-user-Hq7"
PASSWORD = "Pa55-w0rd-9f3kQz"


@pytest.fixture()
def refusing_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: every connection refused
        yield sock.getsockname()[1]


def _railings(*args: str) -> list[str]:
    return [sys.executable, "-m", "railings", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC)}


def test_the_upstream_password_is_in_no_output(refusing_port: int, tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    upstream = f"http://{USER}:{PASSWORD}@127.0.0.1:{refusing_port}/prefix"
    process = subprocess.Popen(
        _railings("gateway", "--upstream", upstream, "--port", "0", "--journal", str(journal)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert process.stderr is not None
    lines = []
    for line in process.stderr:  # bounded: the startup line ends the wait
        lines.append(line)
        if "listening on" in line:
            break
    found = re.search(r"http://127\.0\.0\.1:\d+", "".join(lines))
    assert found, lines
    answers = []
    try:
        with httpx2.Client(base_url=found.group(), timeout=60) as c:
            answers.append(c.get("/v1/models", headers=headers("openai")))
            answers.append(
                c.post("/v1/chat/completions", json=body("openai"), headers=headers("openai"))
            )
            answers.append(c.get("/_railings/metrics"))
    finally:
        process.send_signal(signal.SIGINT)
        stdout, rest = process.communicate(timeout=60)
    printed = "".join(lines) + rest + stdout
    assert process.returncode == 0
    assert answers[0].status_code == 502 and answers[1].status_code == 502
    assert f"-> http://[REDACTED]@127.0.0.1:{refusing_port}/prefix (cut calls: refuse; " \
        "network: stock;" in printed  # fmt: skip
    log = subprocess.run(
        _railings("gateway-log", "--journal", str(journal), "--json"),
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
    )
    rows = [json.loads(line) for line in log.stdout.splitlines()]
    assert [r["status"] for r in rows] == [502]
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    for secret in (PASSWORD, USER):
        assert secret not in printed
        assert secret not in log.stdout + log.stderr
        for answer in answers:
            assert secret not in answer.text
        assert secret.encode() not in stored


def test_a_usage_error_does_not_echo_the_password() -> None:
    done = subprocess.run(
        _railings("gateway", "--upstream", f"{USER}:{PASSWORD}@example.com", "--port", "0"),
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert done.returncode == 2
    assert "--upstream must be an http:// or https:// URL" in done.stderr
    assert PASSWORD not in done.stderr + done.stdout
