"""The reliability suite: fuzz campaigns, the soak under faults, and what they share.

Run, not imported by railings itself::

    python -m tools.reliability.fuzz [--examples N] [--seconds S]     # make fuzz
    python -m tools.reliability.soak [--turns N] [--concurrency C]    # make soak
    python -m tools.reliability.concurrency [--turns 1000]             # one pool, N at once

:mod:`~tools.reliability.corpus` finds and cuts the real captures of
``tests/corpus``; :mod:`~tools.reliability.properties` holds the properties
every campaign checks and the spy on :func:`railings.dispatch.builtins.spawn`;
:mod:`~tools.reliability.faulted` breaks one unit after content in a capture of any
wire and reads it whole and in pieces;
:mod:`~tools.reliability.inputs` and :mod:`~tools.reliability.campaigns`
are what the fuzz feeds and how; :mod:`~tools.reliability.faulting` is the
soak's fault-drawing transport and the oracle that reads what came back.
The tests (``tests/test_fuzz.py`` and friends) run bounded versions of the
same properties. Requires the ``dev`` extra (hypothesis).
"""

from __future__ import annotations

__all__: list[str] = []
