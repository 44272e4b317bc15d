"""SSE blocks, byte-exact: :class:`~railings.wire.blocks.EventSplitter`, re-exported.

The splitter lives with the rest of the cutting rules in :mod:`railings.wire.blocks`;
this name stays for the modules that import it from here (the gateway's judge).
"""

from __future__ import annotations

from railings.wire.blocks import EventSplitter

__all__ = ["EventSplitter"]
