"""``railings probe``: find out what one endpoint sends, and write the profile the
evidence supports.

A small battery of real requests (:mod:`.battery`, each with a tiny output limit) is
sent and every answer read by railings' own reader (:mod:`.send`); the findings
(:mod:`.findings`) say what was seen and what railings will do with it, and build the
:class:`~railings.turn.profile.Profile` whose rules the evidence supports, and only
those; :mod:`.report` renders the table, the JSON and the TOML file.
"""

from __future__ import annotations

import datetime

from railings.probe.battery import DEMO_SCRIPT, WIRES, Ask, battery, budget
from railings.probe.findings import NO_PROOF, Finding, Findings, findings, profile_name
from railings.probe.report import plan_lines, table, to_json, to_toml
from railings.probe.send import Observation, ProbeFailed, observe
from railings.transport import ClientConfig

__all__ = [
    "DEMO_SCRIPT",
    "NO_PROOF",
    "WIRES",
    "Ask",
    "Finding",
    "Findings",
    "Observation",
    "ProbeFailed",
    "battery",
    "budget",
    "findings",
    "plan_lines",
    "probe",
    "profile_name",
    "table",
    "to_json",
    "to_toml",
]


async def probe(config: ClientConfig, *, today: str | None = None) -> Findings:
    """Send the battery to ``config``'s endpoint and judge what came back
    (:class:`ProbeFailed` when a request got no answer to read). HTTP/2 is offered over
    TLS, as the client offers it."""
    asks = battery(config.provider)
    seen = await observe(config, asks, http2=config.url.startswith("https://"))
    base_url = config.base_url or ""
    return findings(
        seen,
        provider=config.provider,
        url=base_url,
        base_url=base_url,
        today=today or datetime.date.today().isoformat(),
    )
