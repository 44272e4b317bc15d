"""What the scripted server records of each request: :class:`ReceivedRequest`, with
its secrets (key headers, key query parameters) redacted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from railings.testing.http import Headers

__all__ = ["SECRET_HEADERS", "ReceivedRequest", "query_of", "redacted"]

SECRET_HEADERS = frozenset(
    {"authorization", "x-api-key", "api-key", "cookie", "proxy-authorization", "x-goog-api-key"}
)


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One request as the server saw it. ``request["messages"]`` reads the JSON body."""

    method: str
    path: str
    headers: Mapping[str, str]  # lower-case names; secrets redacted
    body: Any  # the parsed JSON body, or None
    provider: str | None = None
    turn: int | None = None
    status: int = 0
    stream: bool = False
    query: Mapping[str, str] = field(default_factory=dict)  # secrets redacted

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def get(self, key: str, default: Any = None) -> Any:
        """A field of the JSON body, or ``default`` (also when the body is not an object)."""
        return self.body.get(key, default) if isinstance(self.body, Mapping) else default


def redacted(headers: Headers) -> dict[str, str]:
    """The headers by lower-cased name, each secret one's value replaced."""
    return {k: ("<redacted>" if k in SECRET_HEADERS else v) for k, v in headers.as_dict().items()}


_SECRET_PARAMS = frozenset({"key", "api_key", "api-key", "access_token", "token"})


def query_of(target: str) -> dict[str, str]:
    """The query string's parameters (the last of repeated ones), secrets redacted."""
    return {
        name: ("<redacted>" if name.lower() in _SECRET_PARAMS else value)
        for name, value in parse_qsl(target.partition("?")[2], keep_blank_values=True)
    }
