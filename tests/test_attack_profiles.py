"""Attacks on endpoint profiles: a profile file whose field has a type the reader could
let slip (a rule the file asks for left silently unset, a flag read as a number)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from railings import profiles
from railings.errors import ConfigurationError
from railings.turn.profile import RULES

_EVIDENCE = {"observed": "o", "seen": 1, "date": "2026-12-03", "source": "s"}


def _file(**fields: Any) -> dict[str, Any]:
    rule = next((r for r in RULES if r in fields), "structural")
    return {"name": "x", "base_urls": ["http://h"], "evidence": {rule: _EVIDENCE}, **fields}


@pytest.mark.parametrize(
    "fields",
    [
        {"structural": "true"},
        {"structural": 1},
        {"misreports_length": "yes"},
        {"first_content": True},
        {"first_content": "600"},
        {"first_content": math.nan},
        {"first_content": 1e309},
        {"wire": 3},
        {"evidence": {"structural": "seen once"}},
        {"evidence": {"structural": {**_EVIDENCE, "observed": 5}}},
        {"evidence": {"structural": {**_EVIDENCE, "seen": True}}},
        {"evidence": {"structural": {**_EVIDENCE, "extra": "x"}}},
    ],
)
def test_attack_a_profile_field_of_the_wrong_type_is_refused_by_name(
    fields: dict[str, Any],
) -> None:
    with pytest.raises(ConfigurationError):
        profiles.parse(_file(**fields))
