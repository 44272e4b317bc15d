"""The secret registry: the values railings redacts, kept under a lock by whoever owns it.

:mod:`railings.redact` (part of the sans-IO core) holds no state: it asks the
installed registry which secrets apply. The registry lives here, at the edge,
with what a registry needs and the core must not touch: a lock (clients in
several threads register keys), the process environment (the well-known key
variables, read on first use) and the loggers of the HTTP stack.

:data:`SECRETS` is the process-wide default, installed when railings is
imported, and documented as such: an error can be made anywhere and a log
record can come from any thread, so the secrets they are scrubbed of are the
process's (docs/SECURITY.md). Every client registers its key there. An
application that wants another policy (its own environment, no environment at
all) builds a :class:`SecretRegistry` and :func:`railings.redact.install`\\ s it.

The log filter: at DEBUG, ``hpack`` logs each header it encodes, and ``h2``
only marks ``authorization`` as sensitive, so an Anthropic ``x-api-key`` sent
over HTTP/2 would be logged in clear. :func:`install_log_redaction` (called by
every client) puts :class:`RedactingFilter` on those loggers.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping

from railings import redact as _redact
from railings.redact import KEY_VARIABLES, MARKER, SECRET_HEADERS, Redactor

__all__ = [
    "LOGGERS",
    "SECRETS",
    "RedactingFilter",
    "SecretRegistry",
    "install_log_redaction",
]


class SecretRegistry:
    """The secrets to redact: values registered, and the key ``variables`` of
    ``environ`` (read once, on first use; None: no environment)."""

    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        variables: Iterable[str] = KEY_VARIABLES,
    ) -> None:
        self._lock = threading.Lock()
        self._redactor = Redactor()
        self._environ = environ
        self._variables = tuple(variables)
        self._loaded = environ is None

    def register(self, value: str | None) -> None:
        """Redact ``value`` from now on (values under 8 characters are ignored)."""
        self._add([value])

    def register_url(self, url: str | None) -> None:
        """Redact the user name and password of ``url``'s userinfo, if it has any."""
        self._add(_redact.url_secrets(url))

    def redactor(self) -> Redactor:
        """The secrets that apply now: an immutable snapshot."""
        if not self._loaded:
            self._load()
        return self._redactor

    def __len__(self) -> int:
        return len(self.redactor().secrets)

    def __contains__(self, value: object) -> bool:
        return value in self.redactor().secrets

    def _add(self, values: Iterable[str | None]) -> None:
        with self._lock:
            self._redactor = self._redactor.adding(values)

    def _load(self) -> None:
        with self._lock:
            if self._loaded or self._environ is None:
                return
            environ = self._environ
            self._redactor = self._redactor.adding(environ.get(n) for n in self._variables)
            self._loaded = True


SECRETS = SecretRegistry(environ=os.environ)
_redact.install(SECRETS)


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
    # SigV4 (railings.transport.sigv4): the signer logs each canonical request at DEBUG,
    # a session token's value included; the credential chain logs where it looked.
    "botocore.auth",
    "botocore.credentials",
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
        cleaned = _LOGGED_HEADER.sub(lambda m: m[1] + MARKER, _redact.redact(message))
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
