"""Endpoint profiles: what one endpoint is known to send, and the rules that follows.

Every wire has its proof (``data: [DONE]``, ``message_stop``, ...), and without a
profile that proof ends a turn cleanly. Real endpoints differ: the first-party APIs
always send more than the proof (OpenAI a ``finish_reason`` before ``[DONE]``,
Anthropic a ``message_delta`` with its ``stop_reason`` before ``message_stop``), while
compatible servers often send less (Snowflake Cortex ends with ``[DONE]`` and no
``finish_reason``). A profile records what one endpoint was observed to send, and may
only make the rules stricter, or say how long that endpoint may be silent before its
first content:

``structural``
    The proof counts only with the structure the endpoint always sends before it: a
    stop reason on the wire, after the last content. Without it the ending may have been
    added by a layer in between (a proxy that closes a broken stream with a clean
    terminator), and the turn is interrupted, Partial or Empty by the usual rule.
``first_content``
    The content clock before the first content, in seconds, for a server that sends
    keep-alives while it queues (the clock after content is unchanged).
``misreports_length``
    The endpoint reports an output-limit stop on turns that ended normally: an
    output-limit stop alone marks the turn truncated only when a call's completeness is
    in question (arguments that fail the strict parse, or arrived parsed upstream), so a
    text answer is not reported cut while a cut call is still never run, nor repaired.
    Billed output at the limit truncates the turn whatever the profile says.

``proof``
    For an endpoint observed never to send its wire's terminator, the ending it sends
    instead, from :data:`PROOFS` alone: ``"stop-reason-then-usage"``, a stop reason,
    then a usage report, then the server's clean close with nothing after them. A body
    that broke off, or one that ends any other way, is still interrupted.

Nothing else can be changed. There is no field that accepts a stream without a proof,
and a file that asks for one (``proof = "none"``, ``complete_on_eof``) is refused with
:class:`~railings.errors.ConfigurationError` naming the field. Every
field that is set carries its :class:`Evidence`: what was observed, how many times,
when and where. Sans-IO: loading files and matching by base URL is
:mod:`railings.profiles`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from railings.errors import ConfigurationError

__all__ = ["PROOFS", "RULES", "STOP_THEN_USAGE", "WIRE", "Evidence", "Profile"]

STOP_THEN_USAGE = "stop-reason-then-usage"
# The endings a profile may name in place of a wire's terminator, each with what it is.
PROOFS: Mapping[str, str] = MappingProxyType(
    {STOP_THEN_USAGE: "a stop reason, then a usage report, then a clean close"}
)

# The fields a profile may set, each with what it means (``railings probe`` prints it).
RULES: Mapping[str, str] = MappingProxyType(
    {
        "structural": "a terminator without its stop reason is not the proof",
        "first_content": "the content clock before the first content, in seconds",
        "misreports_length": "a length stop alone truncates only a turn with a doubtful call",
        "proof": "the ending the endpoint sends instead of its terminator",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """Why a profile's field says what it says: what was ``observed``, how many times
    (``seen``), on which ``date`` (ISO 8601) and where (``source``: a capture, an issue,
    a probe run)."""

    observed: str
    seen: int
    date: str
    source: str

    def __post_init__(self) -> None:
        if not all(isinstance(v, str) for v in (self.observed, self.date, self.source)):
            raise ConfigurationError("evidence: observed, date and source must be strings")
        if not self.observed.strip() or not self.source.strip() or not self.date.strip():
            raise ConfigurationError("evidence needs what was observed, its source and date")
        if not isinstance(self.seen, int) or isinstance(self.seen, bool) or self.seen < 1:
            raise ConfigurationError("evidence: seen must be a positive integer")


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """One endpoint's profile (module docstring). ``base_urls`` and ``models`` say which
    requests it judges (:meth:`matches`); ``wire`` the provider wire it was observed on
    (None: any)."""

    name: str
    wire: str | None = None
    base_urls: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    structural: bool = False
    first_content: float | None = None
    misreports_length: bool = False
    proof: str | None = None
    evidence: Mapping[str, Evidence] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("-", "").replace("_", "").isalnum():
            raise ConfigurationError(
                f"profile name {self.name!r}: letters, digits, '-' and '_' only"
            )
        if self.first_content is not None and not (
            isinstance(self.first_content, int | float)
            and not isinstance(self.first_content, bool)  # ``true`` is no number of seconds
            and math.isfinite(self.first_content)
            and self.first_content > 0
        ):
            raise ConfigurationError(
                f"profile {self.name}: first_content must be a positive number of seconds"
            )
        if self.proof is not None and (not isinstance(self.proof, str) or self.proof not in PROOFS):
            raise ConfigurationError(
                f"profile {self.name}: proof {self.proof!r} refused: a profile may name no "
                f"ending but {', '.join(map(repr, PROOFS))} ({', '.join(PROOFS.values())}),"
                " and never accept a stream without one"
            )
        for rule in self.rules():
            if rule not in self.evidence:
                raise ConfigurationError(
                    f"profile {self.name}: {rule} is set without evidence for it"
                )
        for key in self.evidence:
            if key not in RULES:
                raise ConfigurationError(f"profile {self.name}: evidence for unknown rule {key!r}")
        object.__setattr__(
            self, "evidence", dict(self.evidence)
        )  # a copy: the caller's stays theirs

    def rules(self) -> list[str]:
        """The fields this profile sets, in :data:`RULES` order (an unset one is None or
        False; a set ``first_content`` is never 0, which the checks above refuse)."""
        return [rule for rule in RULES if getattr(self, rule) not in (None, False)]

    def matches(self, base_url: str, model: str | None = None) -> bool:
        """Does this profile judge requests to ``base_url`` (and ``model``)? A base URL
        matches when it starts with one of ``base_urls`` at a path boundary (``*`` in an
        entry stands for one part of a host name: ``bedrock-runtime.*.amazonaws.com``); a
        model when ``models`` is empty or names it (``*`` at the end: any suffix)."""
        url = _origin_spelled_once(base_url)
        if not any(_prefix(entry).match(url) for entry in self.base_urls):
            return False
        if not self.models or model is None:
            return not self.models
        return any(model.startswith(m[:-1]) if m.endswith("*") else model == m for m in self.models)


_DEFAULT_PORTS = {"http://": "80", "https://": "443"}
# A URL's scheme, its authority (up to the path, query or fragment: RFC 3986) and the rest.
_URL = re.compile(r"([a-z][a-z0-9+.-]*://)([^/?#]*)(.*)", re.DOTALL)


def _origin_spelled_once(url: str) -> str:
    """``url`` lowercased, its origin written one way: without userinfo (a credential, not
    where the request goes), the host's trailing dot, or the scheme's default port. These
    reach the same endpoint as the plain spelling, which must not fall back to the wire's
    laxer rule for them."""
    text = url.strip().lower()
    parts = _URL.fullmatch(text)
    if parts is None:
        return text
    scheme, netloc, rest = parts.groups()
    netloc = netloc.rpartition("@")[2]  # the userinfo ends at the authority's last @
    host, colon, port = netloc.rpartition(":")
    if not colon or "]" in port:  # no port (an IPv6 address's colons are not one)
        host, port = netloc, ""
    if port == _DEFAULT_PORTS.get(scheme):
        port = ""
    return scheme + host.rstrip(".") + (f":{port}" if port else "") + rest


@functools.lru_cache(maxsize=256)  # the guard and the gateway ask for every request
def _prefix(entry: str) -> re.Pattern[str]:
    spelled = _origin_spelled_once(entry).rstrip("/")  # as the URLs it is matched with
    parts = [re.escape(part) for part in spelled.split("*")]
    # A match ends at a path boundary: ``https://api.openai.com`` is not
    # ``https://api.openai.com.example``.
    return re.compile("[a-z0-9-]+".join(parts) + r"(?:[/?#]|$)")


WIRE = Profile(name="wire")
"""The wire's own rule and nothing more: what an endpoint with no profile gets."""
