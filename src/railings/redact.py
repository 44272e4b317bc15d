"""Keeping secrets out of every output: logs, errors, the journal, ``--json``.

Two mechanisms, both applied at the edges where text leaves the process:

* header redaction: ``authorization``, ``x-api-key``, ``api-key``, ``proxy-authorization``
  and ``cookie`` values are replaced wholesale;
* value redaction: every registered secret (each client registers its API key,
  and the well-known key variables of the environment are registered on first
  use) is replaced wherever it appears in a string, with the same marker.

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
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "LOGGERS",
    "MARKER",
    "SECRET_HEADERS",
    "RedactingFilter",
    "install_log_redaction",
    "redact",
    "redact_headers",
    "redact_json",
    "register_secret",
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
_env_loaded = False


def register_secret(value: str | None) -> None:
    """Remember ``value`` as a secret to redact from every output from now on."""
    global _pattern
    if not value or len(value) < _MIN_SECRET:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        ordered = sorted(_secrets, key=len, reverse=True)
        _pattern = re.compile("|".join(re.escape(s) for s in ordered))


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
    return _BEARER.sub(f"\\1{MARKER}", text)


_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")


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
