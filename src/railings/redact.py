"""Keeping secrets out of every output: logs, errors, the journal, ``--json``.

Two mechanisms, both applied at the edges where text leaves the process:

* header redaction: ``authorization``, ``x-api-key``, ``api-key``, ``proxy-authorization``
  and ``cookie`` values are replaced wholesale;
* value redaction: every registered secret (each client registers its API key,
  and the well-known key variables of the environment are registered on first
  use) is replaced wherever it appears in a string, with the same marker.

* URL userinfo: ``scheme://user:password@host`` loses ``user:password`` wherever a
  string is redacted, so a base URL is never printed or stored with its password.

A secret may arrive split across stream deltas, and redacting each delta alone
would miss it. Two tools redact what was assembled: :class:`Holdback` releases a
stream's text only once no registered secret can still straddle the point
released (it holds back at most the longest secret's length minus one
characters), and :func:`redact_pieces` redacts a sequence of stored pieces as the
text they join into, keeping one output piece per input piece.

Where text leaves: every :class:`~railings.errors.RailingsError` message (redacted
when the error is made), provider error messages kept on a turn, journal rows,
and the log records of the HTTP stack. The last matters at DEBUG: ``hpack``
logs each header it encodes, and ``h2`` only marks ``authorization`` as
sensitive, so an Anthropic ``x-api-key`` sent over HTTP/2 would be logged in
clear. :func:`install_log_redaction` (called by every client) puts a filter on
those loggers.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "LOGGERS",
    "MARKER",
    "SECRET_HEADERS",
    "Holdback",
    "RedactingFilter",
    "install_log_redaction",
    "redact",
    "redact_headers",
    "redact_json",
    "redact_pieces",
    "register_secret",
    "register_url_secrets",
]

MARKER = "[REDACTED]"
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY")
_MIN_SECRET = 8  # shorter values would redact ordinary words

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None
_longest = 0
_env_loaded = False


def register_secret(value: str | None) -> None:
    """Remember ``value`` as a secret to redact from every output from now on."""
    global _pattern, _longest
    if not value or len(value) < _MIN_SECRET:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        ordered = sorted(_secrets, key=len, reverse=True)
        _pattern = re.compile("|".join(re.escape(s) for s in ordered))
        _longest = len(ordered[0])


def register_url_secrets(url: str | None) -> None:
    """Register the user name and password of ``url``'s userinfo, if it has any."""
    match = _USERINFO.search(url or "")
    if match:
        for part in match[2].split(":", 1):
            register_secret(urllib.parse.unquote(part))
            register_secret(part)


def _load_env() -> None:
    global _env_loaded
    if _env_loaded:
        return
    _env_loaded = True
    for name in KEY_VARIABLES:
        register_secret(os.environ.get(name))


def redact(text: str) -> str:
    """``text`` with every registered secret and bearer token replaced by the marker."""
    _load_env()
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MARKER, text)
    text = _USERINFO.sub(f"\\1{MARKER}@", text)
    return _BEARER.sub(f"\\1{MARKER}", text)


_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")
# RFC 3986 3.2.1: userinfo is what comes between "//" and "@" in the authority (no "/", "?",
# "#" or "@" in it).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/?#@\s]+)@")


class Holdback:
    """Releases one stream's text with registered secrets redacted, even when split.

    :meth:`feed` takes the next piece and returns what may be released now,
    redacted; :meth:`flush` returns the rest at the end of the stream. Joined,
    the released pieces are exactly ``redact(whole text)`` as far as registered
    secrets go: a secret can start at most ``longest - 1`` characters before the
    end of what arrived without being complete, so only that tail is held back,
    and a secret that straddles the cut is released whole, as the marker.
    """

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending = ""

    def feed(self, text: str) -> str:
        """The text that may be released now that ``text`` arrived, redacted (maybe "")."""
        self.pending += text
        return self._release(final=False)

    def flush(self) -> str:
        """Everything still held back, redacted: the end of the stream."""
        return self._release(final=True)

    def _release(self, *, final: bool) -> str:
        _load_env()
        buffer, pattern = self.pending, _pattern
        cut = len(buffer) if final or pattern is None else max(0, len(buffer) - (_longest - 1))
        if not final and pattern is not None:
            for match in pattern.finditer(buffer, 0, len(buffer)):
                if match.start() >= cut:
                    break
                cut = max(cut, match.end())
        released, self.pending = buffer[:cut], buffer[cut:]
        return redact(released) if released else ""


def redact_pieces(pieces: list[str]) -> list[str]:
    """``pieces`` redacted as the text they join into, one output piece per input piece.

    A secret split across pieces becomes the marker in the piece where it starts
    and is removed from the others.
    """
    _load_env()
    joined, pattern = "".join(pieces), _pattern
    spans = [(m.start(), m.end()) for m in pattern.finditer(joined)] if pattern else []
    out: list[str] = []
    offset = 0
    for piece in pieces:
        start, end = offset, offset + len(piece)
        offset = end
        parts: list[str] = []
        position = start
        for first, last in spans:
            if last <= start or first >= end:
                continue
            if first >= position:
                parts.append(joined[position:first])
                parts.append(MARKER)
            position = max(position, min(last, end))
        parts.append(joined[position:end])
        out.append(redact("".join(parts)))
    return out


def redact_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """A copy of ``headers`` with secret-bearing values replaced."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    return {
        name: (MARKER if name.lower() in SECRET_HEADERS else redact(value)) for name, value in items
    }


def redact_json(value: Any) -> Any:
    """A deep copy of a JSON-like value with every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            k: (MARKER if isinstance(k, str) and k.lower() in SECRET_HEADERS else redact_json(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_json(v) for v in value]
    return value


# hpack's debug lines: ``Adding b'x-api-key'=b'sk-...' to the header table`` (and the table's
# ``Evicting b'x-api-key': b'sk-...'``). The value of a secret header goes, registered or not.
_LOGGED_HEADER = re.compile(
    r"(?i)(b?'(?:" + "|".join(re.escape(h) for h in sorted(SECRET_HEADERS)) + r")'\s*[=:]\s*b?')"
    r"[^']*"
)

# The loggers of the HTTP stack that may carry a header value, a URL or an error body.
LOGGERS = (
    "hpack.hpack",
    "hpack.table",
    "h2",
    "httpx2",
    "httpcore2.connection",
    "httpcore2.http11",
    "httpcore2.http2",
    "httpcore2.proxy",
    "httpcore2.socks",
    "railings",
)


class RedactingFilter(logging.Filter):
    """Rewrites each record's message with secrets and secret header values redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Always True (the record is kept); its message is replaced only if it changed."""
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format: leave it to logging
            return True
        cleaned = _LOGGED_HEADER.sub(lambda m: m[1] + MARKER, redact(message))
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_filter = RedactingFilter()


def install_log_redaction() -> None:
    """Put :class:`RedactingFilter` on every logger of :data:`LOGGERS` (idempotent).

    A logger's filters see exactly the records that logger creates, whatever
    handlers the application configured.
    """
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _filter not in logger.filters:
            logger.addFilter(_filter)
