"""The turn layer: provider events in, one assembled :class:`~railings.turn.model.Turn` out.

The termination table (:mod:`~railings.turn.termination`), the stop-reason table
and its derivation (:mod:`~railings.turn.stop_reason`), the assembler, the repair
ladder (:mod:`~railings.turn.repair`) and the verdict (:mod:`~railings.turn.verdict`)
live here. Sans-IO: nothing in this package touches a socket, a thread or the
environment. The public names are re-exported by :mod:`railings`.
"""
