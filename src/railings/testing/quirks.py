"""What compatible endpoints do that the first-party APIs do not, as script options.

Each is set for the whole script or for one turn (a turn's value wins); see
:mod:`railings.testing.script` for what each one sends. ``railings probe`` is tested
against each of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import astuple, dataclass, fields
from typing import Any

from railings.errors import ConfigurationError
from railings.testing.script_values import non_negative

__all__ = ["KEEP_ALIVE", "KEYS", "NO_QUIRKS", "Quirks"]

# One SSE comment block, as DeepSeek and others send while a request waits.
KEEP_ALIVE = b": keep-alive\n\n"


@dataclass(frozen=True, slots=True)
class Quirks:
    """A script's or a turn's quirks; None: not said here (the script's value, else the
    first-party behaviour)."""

    proof: bool | None = None
    null_stop_reason: bool | None = None
    cut_stop_reason: str | None = None
    keepalives: int | None = None
    keepalive_delay: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> Quirks:
        """The quirks among ``data``'s keys; a wrong type is a ConfigurationError naming
        ``where``."""
        for key in ("proof", "null_stop_reason"):
            if data.get(key) is not None and not isinstance(data[key], bool):
                raise ConfigurationError(f"{where}.{key}: expected true or false")
        cut = data.get("cut_stop_reason")
        if cut is not None and not isinstance(cut, str):
            raise ConfigurationError(f"{where}.cut_stop_reason: expected a string")
        count = data.get("keepalives")
        if count is not None and (
            not isinstance(count, int) or isinstance(count, bool) or count < 0
        ):
            raise ConfigurationError(f"{where}.keepalives: expected a non-negative integer")
        return cls(
            proof=data.get("proof"),
            null_stop_reason=data.get("null_stop_reason"),
            cut_stop_reason=cut,
            keepalives=count,
            keepalive_delay=non_negative(data.get("keepalive_delay"), f"{where}.keepalive_delay"),
        )

    def over(self, base: Quirks) -> Quirks:
        """These quirks, with ``base``'s where these say nothing."""
        mine, theirs = astuple(self), astuple(base)
        return Quirks(*(m if m is not None else t for m, t in zip(mine, theirs, strict=True)))

    @property
    def sends_proof(self) -> bool:
        """False: the stream ends without its termination proof."""
        return self.proof is not False


KEYS = tuple(f.name for f in fields(Quirks))

NO_QUIRKS = Quirks()
"""The first-party behaviour: the proof, a stop reason, no keep-alives."""
