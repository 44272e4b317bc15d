"""The reliability suite: fuzz campaigns, the soak under faults, and what they share.

Run, not imported by railings itself::

    python -m railings.reliability.fuzz [--examples N] [--seconds S]     # make fuzz
    python -m railings.reliability.soak [--turns N] [--concurrency C]    # make soak

:mod:`~railings.reliability.corpus` finds and cuts the real captures of
``shared/corpus``; :mod:`~railings.reliability.properties` holds the properties
every campaign checks and the spy on :func:`railings.dispatch.builtins.spawn`;
:mod:`~railings.reliability.inputs` and :mod:`~railings.reliability.campaigns`
are what the fuzz feeds and how; :mod:`~railings.reliability.faulting` is the
soak's fault-drawing transport and the oracle that reads what came back.
The tests (``tests/test_fuzz.py`` and friends) run bounded versions of the
same properties. Requires the ``dev`` extra (hypothesis).
"""

from __future__ import annotations

__all__: list[str] = []
