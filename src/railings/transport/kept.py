"""The response a provider keeps for one turn: what the client must know to read it
again, and to cancel it when nobody will (:mod:`railings.turn.resume` has the rule)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from railings.providers.base import Resumption
from railings.turn.attempt import Attempt
from railings.turn.resume import ResumePoint

__all__ = ["Kept"]


class Kept:
    """One turn's kept response. ``attempt``: the attempt reading now; ``point``: where
    the next attempt resumes (None: it sends the request)."""

    __slots__ = ("_resumption", "attempt", "point")

    def __init__(self, resumption: Resumption | None) -> None:
        self._resumption = resumption
        self.attempt: Attempt | None = None
        self.point: ResumePoint | None = None

    def keeps(self, body: Mapping[str, Any]) -> bool:
        """Does the request ``body`` ask the provider to keep the response?"""
        return self._resumption is not None and self._resumption.keeps(body)

    def path(self) -> str | None:
        """Below the request URL, where :attr:`point` is read again (None: send the request)."""
        point = self.point
        if point is None or self._resumption is None:
            return None
        return self._resumption.stream_path(point.response_id, point.after)

    @property
    def live(self) -> str | None:
        """The id of the kept response this turn has not finished reading, if any."""
        if self.attempt is not None:
            return self.attempt.kept
        return self.point.response_id if self.point is not None else None
