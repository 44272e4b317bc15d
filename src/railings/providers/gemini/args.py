"""Gemini's streamed function-call arguments: ``partialArgs`` fragments back into one object.

Vertex AI (and the Gemini API for Gemini 3) can stream a call's arguments instead of
sending them whole: the call opens with a ``functionCall`` part carrying its ``name``
and ``willContinue: true``, then parts of ``partialArgs`` follow, each a ``jsonPath``
(``$.recipe.ingredients[0].amount``) with a typed value (``stringValue``,
``numberValue``, ``boolValue``, ``nullValue``). A string value with ``willContinue``
continues in the next fragment for the same path. The call ends with a part whose
``functionCall`` has no ``willContinue`` (often an empty ``functionCall: {}``).

The provider parsed the model's output into these typed values: the object rebuilt
here is railings' serialization of them, never text the model wrote, so the call is
marked parsed (it proves nothing about its own completeness). A path this module
cannot read makes the whole call unreadable (``None``): never a guess.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

__all__ = ["PartialArguments"]

_STEP: Final = re.compile(r"\.([A-Za-z_][A-Za-z0-9_\-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")
_VALUE_KEYS: Final = ("stringValue", "numberValue", "boolValue", "nullValue")


def _steps(path: str) -> list[str | int] | None:
    if not path.startswith("$"):
        return None
    steps: list[str | int] = []
    position = 1
    while position < len(path):
        match = _STEP.match(path, position)
        if match is None:
            return None
        name, index, quoted = match.groups()
        if index is not None:
            steps.append(int(index))
        else:
            steps.append(name if name is not None else quoted.replace("\\'", "'"))
        position = match.end()
    return steps


class PartialArguments:
    """The arguments of one streamed call, rebuilt fragment by fragment."""

    __slots__ = ("_broken", "_continuing", "_fragments", "_root")

    def __init__(self) -> None:
        self._root: dict[str, Any] = {}
        self._fragments: list[object] = []  # every fragment as it came, for an unreadable call
        self._continuing: set[str] = set()  # paths whose string value goes on
        self._broken = False

    def add(self, fragments: object) -> None:
        """Apply one part's ``partialArgs`` list."""
        if not isinstance(fragments, list):
            self._broken = True
            self._fragments.append(fragments)
            return
        self._fragments += fragments
        for fragment in fragments:
            if not isinstance(fragment, dict) or not self._apply(fragment):
                self._broken = True

    def json(self) -> str | None:
        """The rebuilt object as JSON text, or None when a fragment could not be read or
        a string value was left waiting for its continuation."""
        if self._broken or self._continuing:
            return None
        return json.dumps(self._root, ensure_ascii=False)

    def raw(self) -> str:
        """Every fragment as it came, as a JSON list: what an unreadable call keeps as its
        arguments (never an object, so it never parses as one)."""
        return json.dumps(self._fragments, ensure_ascii=False)

    def _apply(self, fragment: dict[str, Any]) -> bool:
        path = fragment.get("jsonPath")
        if not isinstance(path, str):
            return False
        steps = _steps(path)
        keys = [k for k in _VALUE_KEYS if k in fragment]
        if not steps or len(keys) != 1:
            return False
        key = keys[0]
        value: Any = None if key == "nullValue" else fragment[key]
        if key == "stringValue":
            if not isinstance(value, str):
                return False
            if path in self._continuing:
                current = self._get(steps)
                if not isinstance(current, str):
                    return False
                value = current + value
            if fragment.get("willContinue") is True:
                self._continuing.add(path)
            else:
                self._continuing.discard(path)
        return self._set(steps, value)

    def _get(self, steps: list[str | int]) -> Any:
        node: Any = self._root
        for step in steps:
            if isinstance(step, int):
                node = node[step] if isinstance(node, list) and step < len(node) else None
            else:
                node = node.get(step) if isinstance(node, dict) else None
        return node

    def _set(self, steps: list[str | int], value: Any) -> bool:
        node: Any = self._root
        for step, following in zip(steps, [*steps[1:], None], strict=True):
            fresh: Any = value if following is None else ([] if isinstance(following, int) else {})
            if isinstance(step, int):
                if not isinstance(node, list) or step > len(node):
                    return False  # arrays fill in order: a gap is not something to guess
                if step == len(node):
                    node.append(fresh)
                elif following is None:
                    node[step] = value
            else:
                if not isinstance(node, dict):
                    return False
                if following is None or step not in node:
                    node[step] = fresh
            if following is not None:
                node = node[step]
                if isinstance(following, int) != isinstance(node, list):
                    return False
        return True
