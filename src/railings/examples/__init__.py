"""Example stream bodies shipped with railings: a stream to replay without a clone.

``railings replay "$(python -c 'import railings.examples as e; print(e.CUT_SHELL_CALL)')"``
reports the call truncated and NOT executed. Their provenance is in the README beside them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CUT_SHELL_CALL"]

CUT_SHELL_CALL: Path = Path(__file__).with_name("cut_shell_call.sse")
"""An OpenAI Chat Completions body whose ``shell`` call the output limit cut mid-string."""
