"""``railings matrix``: fault classes x payload sizes x providers x {text, cut tool call}.

The fault matrix, shipped: every cell streams a scripted answer through the
fault proxy into a client, and holds the result to one acceptance rule (the
expectation table in :mod:`railings.matrix.cases`): every faulted stream is
detected (a typed error or an interrupted verdict; Empty resent, Partial
returned as-is), every clean stream returns the full text, no tool call cut by
``max_tokens`` is ever executed, and a stream whose proof arrived before the
connection broke is reported as complete. The official SDKs run the same cells for
comparison; ``railings+resume`` (:class:`ResumingClient`) runs them asking the
provider to keep each response, held to the table's resume column
(:mod:`railings.matrix.cases`).

::

    from railings.matrix import CLIENTS, grid, run_matrix
    result = asyncio.run(run_matrix(grid(sizes=["small"]), [CLIENTS["railings"]()]))
    assert result.exit_code == 0
"""

from __future__ import annotations

from railings.matrix.cells import (
    ATTEMPTS,
    FAULT_CASES,
    PROVIDERS,
    QUICK_FAULTS,
    SIZES,
    Cell,
    Expect,
    FaultCase,
    Provider,
    Resuming,
    Size,
    grid,
)
from railings.matrix.clients import CLIENTS, RailingsClient, ResumingClient
from railings.matrix.judge import Judgement, Reference, Status
from railings.matrix.observation import Client, Observation, Target
from railings.matrix.run import CellResult, MatrixResult, Upstream, run_matrix
from railings.matrix.sdks import AnthropicSDK, OpenAISDK

__all__ = [
    "ATTEMPTS",
    "CLIENTS",
    "FAULT_CASES",
    "PROVIDERS",
    "QUICK_FAULTS",
    "SIZES",
    "AnthropicSDK",
    "Cell",
    "CellResult",
    "Client",
    "Expect",
    "FaultCase",
    "Judgement",
    "MatrixResult",
    "Observation",
    "OpenAISDK",
    "Provider",
    "RailingsClient",
    "Reference",
    "Resuming",
    "ResumingClient",
    "Size",
    "Status",
    "Target",
    "Upstream",
    "grid",
    "run_matrix",
]
