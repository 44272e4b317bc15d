"""A TLS server on 127.0.0.1 whose every byte on the wire is the test's choice.

The TLS is Python's own (:class:`ssl.SSLObject` over memory BIOs on a plain socket),
so a script can do what a well-behaved server never does: write plaintext before its
handshake (an attacker on the path, injecting), stop halfway through the handshake,
close the TCP connection without TLS's ``close_notify``. One connection at a time, each
run by the script given, in a thread; the certificate is the throwaway one of
``_server.make_certificate``.
"""

from __future__ import annotations

import contextlib
import re
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from _server import openai_text


class Peer:
    """One accepted connection: the raw socket and TLS on top of it, step by step."""

    def __init__(self, sock: socket.socket, context: ssl.SSLContext) -> None:
        self.sock = sock
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_side=True)

    def raw(self, data: bytes) -> None:
        """Bytes straight on the socket, outside TLS."""
        self.sock.sendall(data)

    def flush(self, limit: int | None = None) -> None:
        """Send what TLS produced (only its first ``limit`` bytes, then close: a cut)."""
        data = self.outgoing.read()
        if limit is not None:
            data = data[:limit]
        if data:
            self.sock.sendall(data)

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the client closed")
        self.incoming.write(data)

    def client_hello(self) -> None:
        """Read the client's first flight and answer it, without sending the answer yet."""
        while True:
            try:
                self.tls.do_handshake()
                return
            except ssl.SSLWantReadError:
                if self.outgoing.pending:
                    return  # the server's first flight is ready
                self._fill()

    def handshake(self) -> None:
        """The whole handshake."""
        while True:
            try:
                self.tls.do_handshake()
                self.flush()
                return
            except ssl.SSLWantReadError:
                self.flush()
                self._fill()

    def request(self) -> bytes:
        """The request head and its ``content-length`` body, decrypted."""
        got = b""
        while b"\r\n\r\n" not in got:
            got += self._read()
        head, _, body = got.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            body += self._read()
        return head

    def _read(self) -> bytes:
        while True:
            try:
                return self.tls.read(65536)
            except ssl.SSLWantReadError:
                self.flush()
                self._fill()

    def send(self, data: bytes) -> None:
        """``data`` encrypted."""
        self.tls.write(data)
        self.flush()

    def close_notify(self) -> None:
        """TLS's orderly end (``close_notify``), then the TCP close."""
        with contextlib.suppress(ssl.SSLWantReadError):  # the client's is not awaited
            self.tls.unwrap()
        self.flush()
        self.sock.close()


Script = Callable[[Peer], None]


class TLSServer:
    """``with TLSServer(certificate, script) as url:`` runs ``script`` per connection."""

    def __init__(
        self,
        certificate: tuple[Path, Path],
        script: Script,
        *,
        maximum: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED,
    ) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(certificate[0]), str(certificate[1]))
        self.context.set_alpn_protocols(["http/1.1"])
        self.context.maximum_version = maximum
        self.script = script
        self.connections = 0
        self.requests: list[bytes] = []
        self.errors: list[BaseException] = []
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        return self.url

    def __exit__(self, *exc: object) -> None:
        # Closing a socket another thread blocks in accept() on does not wake it on Linux:
        # shut it down first.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(10)

    def _serve(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            sock.settimeout(10)
            peer = Peer(sock, self.context)
            try:
                self.script(peer)
            except (OSError, ssl.SSLError) as exc:
                self.errors.append(exc)
            finally:
                sock.close()


class TLSProcess:
    """``with TLSProcess(certificate, "name") as url:`` runs ``SCRIPTS[name]`` per connection
    in a process of its own, so its writes are not held behind the test's own thread (an
    attacker on the path is as quick as the network, not as the test process's GIL)."""

    def __init__(self, certificate: tuple[Path, Path], script: str) -> None:
        self.certificate = certificate
        self.script = script

    def __enter__(self) -> str:
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(self.certificate[0]), str(self.certificate[1]),
             self.script],
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        return line.strip()

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(10)
        assert self.process.stdout is not None
        self.process.stdout.close()


def _http(events: list[bytes], *, chunked: bool = False) -> bytes:
    body = b"".join(events)
    framing = b"transfer-encoding: chunked" if chunked else b"content-length: %d" % len(body)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n%s\r\n\r\n" % framing
    if chunked:
        body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
    return head + body


INJECTED = _http(openai_text(["INJECTED", "by", "the", "path"]))
GENUINE = _http(openai_text(["genuine"]))
WHOLE_EVENTS = openai_text(["whole", "and", "proven"])
WHOLE = _http(WHOLE_EVENTS, chunked=True)


def inject(peer: Peer) -> None:
    """The attacker's bytes first, then the real server's handshake and answer."""
    peer.raw(INJECTED)
    peer.handshake()
    peer.request()
    peer.send(GENUINE)
    peer.close_notify()


def cut_handshake(peer: Peer) -> None:
    """Half of the server's first flight, then the TCP close."""
    peer.client_hello()
    peer.flush(limit=60)


def mid_body(peer: Peer) -> None:
    """Half of a chunked body, then the TCP close without ``close_notify``."""
    peer.handshake()
    peer.request()
    peer.send(WHOLE[: len(WHOLE) // 2])


def whole_body(peer: Peer) -> None:
    """A whole chunked body, then the TCP close without ``close_notify``."""
    peer.handshake()
    peer.request()
    peer.send(WHOLE)


def whole_body_notified(peer: Peer) -> None:
    """A whole chunked body and TLS's orderly end."""
    peer.handshake()
    peer.request()
    peer.send(WHOLE)
    peer.close_notify()


SCRIPTS: dict[str, Script] = {
    "inject": inject,
    "cut_handshake": cut_handshake,
    "mid_body": mid_body,
    "whole_body": whole_body,
    "whole_body_notified": whole_body_notified,
}


def _main() -> None:
    cert, key, name = sys.argv[1:4]
    with TLSServer((Path(cert), Path(key)), SCRIPTS[name]) as url:
        print(url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    _main()


class Renegotiating:
    """``with Renegotiating(certificate, answer) as url:`` an ``openssl s_server`` (TLS 1.2)
    that, once the request arrived, asks the client to renegotiate (a HelloRequest: its
    ``r`` command), then writes ``answer``. Python's ssl module cannot start a
    renegotiation (no ``SSL_renegotiate`` in its API), OpenSSL's own server can."""

    def __init__(self, certificate: tuple[Path, Path], answer: bytes) -> None:
        self.certificate = certificate
        self.answer = answer
        self.renegotiated = threading.Event()

    def __enter__(self) -> str:
        cert, key = self.certificate
        self.process = subprocess.Popen(
            ["openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", str(cert),
             "-key", str(key), "-tls1_2", "-naccept", "1"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        assert self.process.stdout is not None
        port = 0
        for line in self.process.stdout:  # bounded: s_server says where it listens first
            found = re.search(rb"ACCEPT 127\.0\.0\.1:(\d+)", line)
            if found:
                port = int(found[1])
                break
        self._thread = threading.Thread(target=self._drive, daemon=True)
        self._thread.start()
        return f"https://127.0.0.1:{port}"

    def _drive(self) -> None:
        out, into = self.process.stdout, self.process.stdin
        assert out is not None and into is not None
        try:
            for line in out:
                if b"POST /" in line:
                    into.write(b"r\n")  # a line of its own: s_server's renegotiate command
                    into.flush()
                elif b"SSL_do_handshake ->" in line:  # the HelloRequest went out
                    self.renegotiated.set()
                    into.write(self.answer)
                    into.flush()
        except (OSError, ValueError):
            pass  # the test ended and closed the pipes

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(10)
        self._thread.join(10)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
