"""One JSON entry point for the wire decoders, so a faster parser can be swapped in one place."""

from __future__ import annotations

import json
from typing import Any

from railings.errors import MalformedStream

__all__ = ["load_object"]

_loads = json.loads


def load_object(data: str, *, where: str) -> dict[str, Any]:
    """Parse one event's data as a JSON object, or raise :class:`MalformedStream`."""
    try:
        value = _loads(data)
    except ValueError as exc:  # JSONDecodeError, and RecursionError-free in CPython's C parser
        raise MalformedStream(
            f"{where}: data is not valid JSON ({exc.msg if hasattr(exc, 'msg') else exc})"
        ) from None
    except RecursionError:
        raise MalformedStream(f"{where}: data nests too deeply to parse") from None
    if not isinstance(value, dict):
        raise MalformedStream(f"{where}: data is JSON but not an object")
    return value
