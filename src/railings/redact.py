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
and the log records of the HTTP stack (:mod:`railings.secrets` filters those).

This module is part of the sans-IO core and holds no state of its own: no lock,
no environment read. A :class:`Redactor` is an immutable set of secrets; which
one applies is asked of the *secret registry* installed with :func:`install`
(railings installs the process's, :data:`railings.secrets.SECRETS`, when the
package is imported). :func:`register_secret` and :func:`register_url_secrets`
hand the value to that registry, which keeps it under its lock.
"""

from __future__ import annotations

import re
import sys
import urllib.parse
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

__all__ = [
    "KEY_VARIABLES",
    "MARKER",
    "SECRET_HEADERS",
    "Holdback",
    "Redactor",
    "SecretSource",
    "install",
    "redact",
    "redact_headers",
    "redact_json",
    "redact_pieces",
    "register_secret",
    "register_url_secrets",
    "url_secrets",
]

MARKER = "[REDACTED]"
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "cookie",
        "set-cookie",
    }
)
KEY_VARIABLES = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)
_MIN_SECRET = 8  # shorter values would redact ordinary words


class Redactor:
    """An immutable set of secrets (each at least 8 characters: shorter values would
    redact ordinary words) and the pattern that finds them, longest first."""

    __slots__ = ("longest", "pattern", "secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = frozenset(s for s in secrets if s and len(s) >= _MIN_SECRET)
        ordered = sorted(self.secrets, key=len, reverse=True)
        self.pattern = re.compile("|".join(re.escape(s) for s in ordered)) if ordered else None
        self.longest = len(ordered[0]) if ordered else 0

    def adding(self, values: Iterable[str | None]) -> Redactor:
        """This set with ``values`` added (``self`` when none of them is new)."""
        new = {v for v in values if v and len(v) >= _MIN_SECRET} - self.secrets
        return Redactor(self.secrets | new) if new else self

    def redact(self, text: str) -> str:
        """``text`` with every secret, URL userinfo and bearer token replaced by the marker."""
        if self.pattern is not None:
            text = self.pattern.sub(MARKER, text)
        text = _USERINFO.sub(f"\\1{MARKER}@", text)
        return _BEARER.sub(f"\\1{MARKER}", text)


class SecretSource(Protocol):
    """A secret registry: it takes new secrets and says which apply now."""

    def register(self, value: str | None) -> None:
        """Redact ``value`` from now on."""

    def redactor(self) -> Redactor:
        """The secrets that apply now."""


class _Fixed:
    """The source before a registry is installed: what it was given, and nothing else."""

    def __init__(self) -> None:
        self._redactor = Redactor()

    def register(self, value: str | None) -> None:
        self._redactor = self._redactor.adding([value])

    def redactor(self) -> Redactor:
        return self._redactor


_source: SecretSource = _Fixed()


def install(source: SecretSource) -> None:
    """Make ``source`` the registry that :func:`redact` and every error read (railings
    installs :data:`railings.secrets.SECRETS` at import; an application may install its
    own)."""
    global _source
    _source = source


def register_secret(value: str | None) -> None:
    """Remember ``value`` as a secret to redact from every output from now on (in the
    installed registry)."""
    _source.register(value)


def register_url_secrets(url: str | None) -> None:
    """Register the user name and password of ``url``'s userinfo, if it has any."""
    for part in url_secrets(url):
        register_secret(part)


def url_secrets(url: str | None) -> list[str]:
    """The user name and password of ``url``'s userinfo, as written and unquoted.

    The userinfo is what comes before the authority's *last* ``@``, as urllib and httpx2
    read it: they accept a space or an ``@`` in a password unencoded, and the client
    then authenticates with it, so the whole of it is a secret (the text pattern that
    redacts userinfo in free text stops at either)."""
    try:
        netloc = urllib.parse.urlsplit(url or "").netloc
    except ValueError:  # an unclosed IPv6 bracket: the pattern alone
        match = _USERINFO.search(url or "")
        netloc = f"{match[2]}@" if match else ""
    if "@" not in netloc:
        return []
    out: list[str] = []
    for part in netloc.rpartition("@")[0].split(":", 1):
        out += [urllib.parse.unquote(part), part]
    return out


def redact(text: str) -> str:
    """``text`` with every registered secret and bearer token replaced by the marker."""
    return _source.redactor().redact(text)


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
        redactor = _source.redactor()
        buffer, pattern = self.pending, redactor.pattern
        cut = len(buffer)
        if not final and pattern is not None:
            cut = max(0, cut - (redactor.longest - 1))
            for match in pattern.finditer(buffer, 0, len(buffer)):
                if match.start() >= cut:
                    break
                cut = max(cut, match.end())
        released, self.pending = buffer[:cut], buffer[cut:]
        return redactor.redact(released) if released else ""


def redact_pieces(pieces: list[str]) -> list[str]:
    """``pieces`` redacted as the text they join into, one output piece per input piece.

    A secret split across pieces becomes the marker in the piece where it starts
    and is removed from the others.
    """
    redactor = _source.redactor()
    joined, pattern = "".join(pieces), redactor.pattern
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
        out.append(redactor.redact("".join(parts)))
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


# Deprecated aliases: the log filter moved to railings.secrets with the registry (it needs
# the logging module, which the core does not import). The package imports railings.secrets
# before anything else can ask, so it is read from sys.modules, not imported from here.
_MOVED = frozenset({"LOGGERS", "RedactingFilter", "install_log_redaction"})


if not TYPE_CHECKING:  # type checkers see the names where they are now

    def __getattr__(name: str) -> Any:
        if name in _MOVED:
            warnings.warn(
                f"railings.redact.{name} moved to railings.secrets.{name}",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(sys.modules["railings.secrets"], name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
