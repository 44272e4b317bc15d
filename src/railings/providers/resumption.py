"""How a wire whose provider keeps a streamed response reads it again:
:class:`Resumption` (a field of :class:`~railings.providers.base.ProviderSpec`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Resumption"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Resumption:
    """How a wire whose provider keeps a streamed response reads it again (OpenAI
    Responses with ``background: true``): the same generation, from after an event.

    ``keeps``: the request asks the provider to keep the response (then a stream that
    broke may be resumed instead of resent); ``ask``: the body that asks it;
    ``stream_path`` and ``cancel_path``: the paths, below the request URL, that stream
    the response again after event ``after`` and cancel it.
    """

    keeps: Callable[[Mapping[str, Any]], bool]
    ask: Callable[[Mapping[str, Any]], dict[str, Any]]
    stream_path: Callable[[str, int], str]
    cancel_path: Callable[[str], str]

    @staticmethod
    def below(url: str, path: str) -> str:
        """``path`` below the request ``url``: its own query first, then the request's
        (Azure OpenAI's ``?api-version=`` stays): ``below("https://h/r?v=1",
        "/id?s=1")`` is ``https://h/r/id?s=1&v=1``."""
        base, _, query = url.partition("?")
        sub, _, sub_query = path.partition("?")
        queries = "&".join(q for q in (sub_query, query) if q)
        return base + sub + (f"?{queries}" if queries else "")
