"""What the matrix asks a client, and what it saw the client do: :class:`Target`,
:class:`Observation`, and the :class:`Client` protocol every client under test follows.
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from railings.agent.view import clip  # the one way a long text is shortened
from railings.matrix.cells import Provider

__all__ = [
    "EMBEDDED_KEY",
    "Client",
    "Observation",
    "Target",
    "class_name",
    "clip",
    "lineage",
    "raised",
    "shared_ssl_context",
]

EMBEDDED_KEY = "sk-railings-matrix"


@dataclass(frozen=True, slots=True)
class Target:
    """Where and what one cell asks: the fault proxy's origin and the request."""

    provider: Provider
    origin: str  # http://127.0.0.1:PORT, the fault proxy
    model: str
    api_key: str | None  # None: the provider's environment variable, as in the SDKs
    max_tokens: int
    prompt: str
    tool: bool
    idle: float  # seconds: the idle gap (railings) / the read timeout (SDKs)

    @property
    def base_url(self) -> str:
        """The base URL to give a client: the proxy's origin and the provider's base path."""
        return self.origin + self.provider.base_path


@dataclass(slots=True)
class Observation:
    """What one client did with one stream, in client-neutral terms.

    ``returned`` is False when the client raised; ``raised`` names the class
    (``module.Class``), ``chain`` every class behind it (``__cause__`` /
    ``__context__``), so the railings reason behind an SDK error shows.
    ``outcome`` / ``interrupted`` / ``error_kind`` / ``attempts`` /
    ``retried`` / ``resumed`` come from the railings client only; ``executed`` is
    what the spy ran (railings only: an SDK hands calls to the application).
    ``generations`` is what the embedded server generated for the cell (the runner
    counts it; None against a real endpoint): a resumed stream is no generation.
    """

    returned: bool
    text: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)  # (name, raw arguments)
    stop_reason: str | None = None
    raised: str | None = None
    lineage: list[str] = field(default_factory=list)  # the raised class and its bases
    message: str = ""
    chain: list[str] = field(default_factory=list)
    outcome: str | None = None
    interrupted: bool | None = None
    interruption: list[str] = field(default_factory=list)  # the interruption's class and bases
    error_kind: str | None = None
    provider_error: str | None = None
    truncated: bool | None = None
    attempts: int | None = None
    retried: list[list[str]] = field(default_factory=list)  # each retried error: class + bases
    resumed: list[int] = field(default_factory=list)  # the events each resume read after
    generations: int | None = None
    executed: list[str] | None = None
    dispatch: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The observation for ``--json``: the text and arguments as their lengths; fields
        without a value are left out."""
        out: dict[str, Any] = {
            "returned": self.returned,
            "text_chars": len(self.text),
            "calls": [{"name": n, "argument_chars": len(a)} for n, a in self.calls],
            "stop_reason": self.stop_reason,
        }
        optional: dict[str, Any] = {
            "raised": self.raised,
            "message": self.message or None,
            "chain": self.chain or None,
            "outcome": self.outcome,
            "interrupted": self.interrupted,
            "interruption": self.interruption[0] if self.interruption else None,
            "error_kind": self.error_kind,
            "provider_error": self.provider_error,
            "truncated": self.truncated,
            "client_attempts": self.attempts,
            "retried": [r[0] for r in self.retried] or None,
            "resumed": self.resumed or None,
            "generations": self.generations,
            "executed": None if self.executed is None else [clip(c) for c in self.executed],
            "dispatch": self.dispatch or None,
            "notes": self.notes or None,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        return out


def class_name(cls: type) -> str:
    """``openai.APIConnectionError``, ``httpx2.ReadError``, ``railings.StreamInterrupted``."""
    module = cls.__module__.split(".")[0]
    return cls.__name__ if module == "builtins" else f"{module}.{cls.__name__}"


def lineage(exc: BaseException) -> list[str]:
    """The class of ``exc`` and its bases, most specific first (for "is a RateLimited")."""
    return [c.__name__ for c in type(exc).__mro__ if c not in (BaseException, object)]


def _chain(exc: BaseException) -> list[str]:
    out: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc.__cause__ or exc.__context__
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        out.append(class_name(type(current)))
        current = current.__cause__ or current.__context__
    return out


def raised(exc: BaseException, **fields: Any) -> Observation:
    """The observation of a client that raised ``exc``: its class, bases, the classes behind it
    and the first line of its message (200 characters at most); ``fields`` add the rest."""
    message = str(exc).splitlines()[0] if str(exc) else ""
    return Observation(
        returned=False,
        raised=class_name(type(exc)),
        lineage=lineage(exc),
        message=message[:200],
        chain=_chain(exc),
        **fields,
    )


class Client(Protocol):
    """A client under test. ``kind`` "railings" cells decide the exit code; "sdk" cells
    are informative. ``resumes``: it asks the provider to keep each response and reads a
    broken stream again, so its cells are held to the resume column of the table."""

    name: str
    kind: Literal["railings", "sdk"]
    providers: frozenset[str]
    requires: tuple[str, ...]  # the optional modules it imports (see railings._extras)
    resumes: bool

    async def run(self, target: Target) -> Observation:
        """Ask ``target`` for one turn: what the client did, an error it raised included."""


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every client of a run: loading the CA bundle costs
    more than a whole small cell."""
    return ssl.create_default_context()
