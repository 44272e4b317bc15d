"""``railings gateway`` as a command, and clients that are not Python: curl and Node's
official ``openai`` package, through a real gateway in front of the fault proxy."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from railings.testing import FaultProxy, Script, ScriptedServer
from tests.gateway_kit import KEY, PATHS, TEXT, body, headers, running
from tests.test_gateway import CUT_SCRIPT

ROOT = Path(__file__).resolve().parents[1]
RAILINGS = str(Path(sys.executable).with_name("railings"))
CURL = shutil.which("curl")
NPM = shutil.which("npm")
NODE = shutil.which("node")
# The Node client's major version; installed once into the venv, reused after.
NODE_OPENAI = "openai@6"
NODE_CACHE = ROOT / ".venv" / "node-openai"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(Script.from_dict({"api_key": KEY, "turns": [{"text": TEXT}]})) as s:
        yield s


@pytest.fixture()
def proxy(server: ScriptedServer) -> Iterator[FaultProxy]:
    with FaultProxy(server.url) as p:
        yield p


class Command:
    """``railings gateway ...`` in a child process; ``url`` from its startup line."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [RAILINGS, "gateway", *args], stderr=subprocess.PIPE, text=True
        )
        assert self.process.stderr is not None
        self.lines: list[str] = []
        for line in self.process.stderr:  # bounded: the startup line ends the wait
            self.lines.append(line)
            if "listening on" in line:
                break
        found = re.search(r"http://127\.0\.0\.1:(\d+)", "".join(self.lines))
        assert found, self.lines
        self.url = found.group()

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)
        _, rest = self.process.communicate(timeout=60)
        return self.process.returncode, "".join(self.lines) + rest


def test_the_command_prints_its_url_serves_and_never_prints_a_key(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    journal = tmp_path / "j.sqlite3"
    gateway = Command("--upstream", proxy.url, "--port", "0", "--journal", str(journal))
    try:
        port = int(gateway.url.rsplit(":", 1)[1])
        assert port > 0
        from railings.testing.raw import raw_request

        got = raw_request(gateway.url, PATHS["openai"], body("openai"), headers=headers("openai"))
        assert got.status == 200 and b"[DONE]" in got.body
        health = raw_request(gateway.url, "/_railings/health", method="GET")
        assert health.status == 200
    finally:
        code, stderr = gateway.stop()
    assert code == 0
    assert f"listening on http://127.0.0.1:{port}" in stderr
    assert "POST /v1/chat/completions openai m status=200 outcome=complete" in stderr
    assert KEY not in stderr
    assert KEY.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


def test_binding_beyond_loopback_warns(proxy: FaultProxy) -> None:
    gateway = Command("--upstream", proxy.url, "--host", "0.0.0.0", "--port", "0", "--no-journal")
    code, stderr = gateway.stop()
    assert "warning: the gateway listens on 0.0.0.0, beyond loopback" in stderr
    assert code == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--upstream", "ftp://x"], "--upstream must be an http:// or https:// URL"),
        (["--upstream", "http://x", "--port", "70000"], "expected a port from 0 to 65535"),
        (["--upstream", "http://x", "--cut-calls", "maybe"], "invalid choice"),
        (["--upstream", "http://x", "--journal", "j", "--no-journal"], "not allowed with"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    done = subprocess.run([RAILINGS, "gateway", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr


def test_help_fits_a_screen() -> None:
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        [RAILINGS, "gateway", "--help"], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert len(lines) <= 40 and max(len(line) for line in lines) <= 80
    for option in ("--upstream", "--host", "--port", "--cut-calls", "--journal", "--no-journal"):
        assert option in done.stdout


# -- curl ------------------------------------------------------------------------------


def _curl(url: str, provider: str, fault: str = "none") -> subprocess.CompletedProcess[bytes]:
    assert CURL is not None
    args = [CURL, "-sS", "-N", "--max-time", "60", url + PATHS[provider]]
    for name, value in {**headers(provider, fault), "content-type": "application/json"}.items():
        args += ["-H", f"{name}: {value}"]
    args += ["-d", json.dumps(body(provider))]
    return subprocess.run(args, capture_output=True, timeout=90)


@pytest.mark.skipif(CURL is None, reason="curl is not on PATH")
@pytest.mark.parametrize("provider", ["openai", "anthropic", "openai-responses"])
def test_curl_gets_clean_streams_byte_for_byte(
    proxy: FaultProxy, tmp_path: Path, provider: str
) -> None:
    with running(proxy.url, tmp_path) as (url, _, tee):
        clean = _curl(url, provider)
        empty = _curl(url, provider, "reset:events=1,times=1")
    assert clean.returncode == 0 and clean.stdout == bytes(tee.bodies[0])
    assert empty.returncode == 0 and empty.stdout == bytes(tee.bodies[-1])  # the resend only
    assert len(tee.bodies) == 3


@pytest.mark.skipif(CURL is None, reason="curl is not on PATH")
def test_curl_sees_a_partial_stream_end_in_an_error_event(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    with running(proxy.url, tmp_path) as (url, _, _):
        done = _curl(url, "openai", "reset:events=5")
    assert done.returncode == 0  # the gateway ends its response: the error is in the stream
    assert b"[DONE]" not in done.stdout
    last = done.stdout.rstrip().rsplit(b"\n\n", 1)[-1]
    assert json.loads(last.removeprefix(b"data: "))["error"]["code"] == "stream_interrupted"


# -- Node: the official openai package -------------------------------------------------

NODE_SCRIPT = r"""
const OpenAI = require("openai");
const [base, key] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base + "/v1", apiKey: key, maxRetries: 0 });
async function run(fault, extra) {
  try {
    const stream = await client.chat.completions.create(
      { model: "m", messages: [{ role: "user", content: "hi" }], stream: true, ...extra },
      { headers: { "x-railings-fault": fault } });
    let text = "";
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      text += (choice && choice.delta.content) || "";
    }
    return { ok: true, text };
  } catch (err) {
    return { ok: false, error: String(err && err.message) };
  }
}
(async () => {
  const out = {};
  out.clean = await run("none", {});
  out.empty = await run("truncate:events=1,times=1", {});
  out.partial = await run("truncate:events=5", {});
  out.broken_after_proof = await run("close_after_terminator", {});
  console.log(JSON.stringify(out));
})();
"""


@pytest.fixture(scope="session")
def node_openai() -> Path:
    if NPM is None or NODE is None:
        pytest.skip("npm is not on PATH: the Node client test needs it to install openai")
    modules = NODE_CACHE / "node_modules"
    if not (modules / "openai" / "package.json").is_file():
        NODE_CACHE.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="node-openai-", dir=NODE_CACHE.parent))
        subprocess.run(
            [
                NPM,
                "install",
                "--prefix",
                str(staging),
                "--no-audit",
                "--no-fund",
                "--silent",
                NODE_OPENAI,
            ],
            check=True,
            capture_output=True,
            timeout=110,
        )
        try:
            staging.rename(NODE_CACHE)  # atomic: a parallel worker may have won the race
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    return modules


def test_node_openai_through_the_gateway(
    node_openai: Path, proxy: FaultProxy, tmp_path: Path
) -> None:
    script = tmp_path / "client.cjs"
    script.write_text(NODE_SCRIPT)
    with running(proxy.url, tmp_path) as (url, gateway, _):
        done = subprocess.run(
            [str(NODE), str(script), url, KEY],
            capture_output=True,
            text=True,
            timeout=90,
            env={**os.environ, "NODE_PATH": str(node_openai)},
        )
        metrics = gateway.metrics
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["clean"] == {"ok": True, "text": TEXT}
    assert out["empty"] == {"ok": True, "text": TEXT}  # resent; Node saw only the resend
    assert out["broken_after_proof"] == {"ok": True, "text": TEXT}
    assert out["partial"]["ok"] is False and "termination proof" in out["partial"]["error"]
    assert (
        metrics.value("railings_gateway_streams_total", provider="openai", outcome="complete") == 3
    )
    assert (
        metrics.value("railings_gateway_streams_total", provider="openai", outcome="partial") == 1
    )


def test_node_openai_is_refused_a_cut_call(node_openai: Path, tmp_path: Path) -> None:
    script = tmp_path / "cut.cjs"
    script.write_text(
        NODE_SCRIPT.replace(
            '  out.clean = await run("none", {});',
            '  out.cut = await run("none", { max_tokens: 40 });',
        )
    )
    with (
        ScriptedServer(Script.from_dict(CUT_SCRIPT)) as upstream,
        running(upstream.url, tmp_path) as (url, _, _),
    ):
        done = subprocess.run(
            [str(NODE), str(script), url, KEY],
            capture_output=True,
            text=True,
            timeout=90,
            env={**os.environ, "NODE_PATH": str(node_openai)},
        )
    assert done.returncode == 0, done.stderr
    cut = json.loads(done.stdout)["cut"]
    assert cut["ok"] is False
    assert "write_file" in cut["error"] and "cut by the output limit" in cut["error"]
